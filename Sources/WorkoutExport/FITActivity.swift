import WorkoutCore
import WorkoutStore

#if canImport(Glibc)
  import Glibc
#endif

/// A FIT activity file of one stored session, made as its points stream by (see
/// `ActivityEncoder`). The file starts with a 14-byte header known only at the end: `begin()`
/// gives zeros in its place and `finish()` the header as `head`, and the file's CRC last.
/// Messages as Garmin's devices write an activity (FIT Activity file, global profile 21):
/// file_id, file_creator, device_info, an `event` timer start, `record`s (each followed by
/// `hrv` messages with the RR intervals of its second) with the timer `event`s of every pause
/// (stop_all) and resume (start) among them in time order, then the `lap`s, the `session`
/// and the `activity`. The laps and sessions carry the training figures `workoutctl show` has
/// (NP, IF, TSS, work, calories: `ExportedSession.figures`), each followed by its
/// `time_in_zone`, and the session the rider's RPE and mood. The inertial sensor's road feel
/// has no field in the profile: it rides in `record`s as developer fields ("vibration" and
/// "peak_acceleration", float32 m/s²), described before the first record that has it.
public struct FITActivityWriter: ActivityEncoder {
  /// Where the device info says the file comes from: "development" (255) with our product 1.
  static let manufacturer: Int64 = 255
  static let product: Int64 = 1
  /// This release as FIT's software_version (major × 100 + minor: 0.1.0 is 10, shown 0.10).
  static let softwareVersion: Int64 = {
    let parts = WorkoutdVersion.string.split(separator: ".").compactMap { Int64($0) }
    return (parts.first ?? 0) * 100 + (parts.dropFirst().first ?? 0)
  }()
  /// RR intervals per `hrv` message, as the devices write them.
  static let intervalsPerHRV = 5
  /// developer_data_id's application_id: workoutd's, a random UUID kept for every file, which
  /// is how a reader tells our developer fields from another application's.
  static let applicationID: [Int64] = [
    0xC1, 0xEB, 0x0E, 0x54, 0x83, 0xF2, 0x46, 0x8C, 0xA5, 0xB4, 0x65, 0x46, 0xC3, 0x01, 0x60, 0x42,
  ]

  private let exported: ExportedSession
  private var session: SessionRecord { exported.session }
  private var summary: SessionSummary? { exported.summary }
  private var laps: [LapRecord] { exported.laps }
  /// The first of `exported.timerEvents`, and of `exported.markers`, not yet written.
  private var nextTimerEvent = 0
  private var nextMarker = 0
  private var messages = FITMessageWriter()
  private var dataSize = 0
  private var dataCRC = FITCRC()
  private var records = 0
  /// Whether the road feel's developer fields are described: records carry them from then on.
  private var roadFeelDescribed = false
  /// Each lap's power and the session's, for an average without the zeros when the rider
  /// chose it (the stored ones count them). A point belongs to the first lap ending at or
  /// after it.
  private var lapPower: [PowerTally]
  private var sessionPower = PowerTally()
  private var pointLap = 0
  private let settings: RecordedSettings

  public init(_ session: ExportedSession) {
    exported = session
    lapPower = Array(repeating: PowerTally(), count: session.laps.count)
    settings = session.settings
  }

  private var sport: (sport: Int64, subSport: Int64) { Self.sport(ActivityType(rawValue: session.activity)) }

  static func sport(_ type: ActivityType?) -> (sport: Int64, subSport: Int64) {
    // FIT `sport` / `sub_sport`: generic 0, running 1, cycling 2, walking 11, hiking 17;
    // sub_sport indoor_cycling 6.
    switch type {
    case .cycling: (2, 0)
    case .indoorCycling: (2, 6)
    case .running: (1, 0)
    case .walking: (11, 0)
    case .hiking: (17, 0)
    case .other, nil: (0, 0)
    }
  }

  private mutating func emit(_ definition: FITMessageDefinition, _ values: [FITValue]) -> [UInt8] {
    let bytes = messages.message(definition, values)
    dataSize += bytes.count
    dataCRC.update(bytes)
    return bytes
  }

  private static func time(_ wall: Double?) -> FITValue {
    .integer(wall.flatMap { FITMessageWriter.timestamp(unix: $0) })
  }

  /// The header's place, file_id, file_creator, device_info.
  public mutating func begin() -> [UInt8] {
    let created = exported.start
    let serial = exported.serial
    var out = [UInt8](repeating: 0, count: 14)
    out += emit(
      FITProfile.fileID,
      [
        .integer(4), .integer(Self.manufacturer), .integer(Self.product), .integer(Int64(serial)),
        Self.time(created),
      ])
    out += emit(FITProfile.fileCreator, [.integer(Self.softwareVersion)])
    out += emit(
      FITProfile.deviceInfo,
      [
        Self.time(created), .integer(0), .integer(Self.manufacturer), .integer(Int64(serial)),
        .integer(Self.product), .integer(Self.softwareVersion), .text("workoutd"),
      ])
    return out
  }

  /// The timer events and the rider's markers due by `wall` (all with nil), in time order.
  private mutating func events(until wall: Double?) -> [UInt8] {
    var out: [UInt8] = []
    let timerEvents = exported.timerEvents
    let markers = exported.markers
    while true {
      let timer = nextTimerEvent < timerEvents.count ? timerEvents[nextTimerEvent].wall : nil
      let marker = nextMarker < markers.count ? markers[nextMarker].wall : nil
      guard let next = [timer, marker].compactMap({ $0 }).min(), wall.map({ next <= $0 }) ?? true else { break }
      if let timer, timer == next {
        let event = timerEvents[nextTimerEvent]
        nextTimerEvent += 1
        // event 0 timer; event_type 0 start, 4 stop_all.
        out += emit(FITProfile.event, [Self.time(event.wall), .integer(0), .integer(event.start ? 0 : 4)])
      } else {
        let event = markers[nextMarker]
        nextMarker += 1
        out += emit(
          FITProfile.marker, [Self.time(event.wall), .integer(32), .integer(3), .scaled(event.millilitres)])
      }
    }
    return out
  }

  /// One `record` (after the timer events due before it), then its second's RR intervals.
  public mutating func point(_ exportPoint: ExportPoint) -> [UInt8] {
    let point = exportPoint.point
    var out = events(until: point.wall)
    let altitude = point.altBaro ?? (point.fixDim == 3 ? point.altGPS : nil)
    let speed = point.speed ?? point.wheelSpeed
    if !roadFeelDescribed, point.vibration != nil || point.peakAcceleration != nil {
      out += describeRoadFeel()
    }
    let roadFeel: [FITValue] = roadFeelDescribed ? [.real(point.vibration), .real(point.peakAcceleration)] : []
    out += emit(
      roadFeelDescribed ? FITProfile.recordWithRoadFeel : FITProfile.record,
      [
        Self.time(point.wall),
        .integer(FITMessageWriter.semicircles(point.lat)), .integer(FITMessageWriter.semicircles(point.lon)),
        .scaled(point.distance, scale: 100),
        .scaled(speed, scale: 1000), .scaled(speed, scale: 1000),
        .scaled(altitude, scale: 5, offset: 500), .scaled(altitude, scale: 5, offset: 500),
        .integer(point.hr.map(Int64.init)), .scaled(point.cadence), .integer(point.power.map(Int64.init)),
        .scaled(point.temperature),
      ] + roadFeel)
    records += 1
    if exported.powerAveraging == .withoutZeros {
      while pointLap < laps.count - 1, point.wall > laps[pointLap].endWall { pointLap += 1 }
      if pointLap < lapPower.count { lapPower[pointLap].add(point.power) }
      sessionPower.add(point.power)
    }
    // hrv `time`: seconds, scale 1000; RR intervals come in 1/1024 s.
    var intervals = exportPoint.rrIntervals[...]
    while !intervals.isEmpty {
      let some = intervals.prefix(Self.intervalsPerHRV)
      intervals = intervals.dropFirst(some.count)
      out += emit(FITProfile.hrv, [.integers(some.map { Int64((Double($0) * 1000 / 1024).rounded()) })])
    }
    return out
  }

  /// developer_data_id and the road feel's two field_descriptions (FIT 2.0 "Developer Data").
  private mutating func describeRoadFeel() -> [UInt8] {
    roadFeelDescribed = true
    // developer_data_index 0; manufacturer development (255); fit_base_type float32 0x88.
    var out = emit(
      FITProfile.developerDataID,
      [.integers(Self.applicationID), .integer(Self.manufacturer), .integer(0), .integer(Self.softwareVersion)])
    for (number, name) in [
      (FITProfile.vibrationField, "vibration"), (FITProfile.peakAccelerationField, "peak_acceleration"),
    ] {
      out += emit(
        FITProfile.fieldDescription,
        [
          .integer(0), .integer(Int64(number)), .integer(Int64(FITBaseType.float32.rawValue)), .text(name),
          .text("m/s2"),
        ])
    }
    return out
  }

  private func lapTrigger(_ trigger: String) -> Int64 {
    // lap_trigger: manual 0, time 1, distance 2, session_end 7 (an activity's end too: in a
    // multisport FIT each activity is a session).
    switch LapSummary.Trigger(rawValue: trigger) {
    case .sessionEnd, .activityEnd: 7
    case .time: 1
    case .distance: 2
    case .lapPress, nil: 0
    }
  }

  /// One `session` message over laps `range` of a multisport workout: their sums, their
  /// maxima, and their averages weighted by timer time (each lap's is over its seconds).
  private mutating func legSession(
    _ index: Int, type: ActivityType?, laps range: Range<Int>, lapPowers: [Double?]
  ) -> [UInt8] {
    let legLaps = laps[range]
    func sum(_ value: (LapRecord) -> Double) -> Double { legLaps.map(value).reduce(0, +) }
    func weighted(_ values: [Double?]) -> Double? {
      var total = 0.0
      var weight = 0.0
      for (lap, value) in zip(legLaps, values) {
        guard let value else { continue }
        total += value * lap.timer
        weight += lap.timer
      }
      return weight > 0 ? total / weight : nil
    }
    func maximum(_ value: (LapRecord) -> Double?) -> Double? { legLaps.compactMap(value).max() }
    let timer = sum(\.timer)
    let distance = sum(\.distance)
    let sport = Self.sport(type)
    // The leg's own figures: its points analysed as one stretch (`ExportedSession.legFigures`).
    let legs = exported.legFigures
    let leg = legs.flatMap { $0.laps.indices.contains(index) ? $0.laps[index] : nil }
    var out = emit(
      FITProfile.session,
      [
        Self.time(legLaps.last?.endWall), .integer(Int64(index)), .integer(8), .integer(1),
        Self.time(legLaps.first?.startWall), .integer(sport.sport), .integer(sport.subSport),
        .scaled(sum(\.elapsed), scale: 1000), .scaled(timer, scale: 1000), .scaled(distance, scale: 100),
        .scaled(timer > 0 ? distance / timer : nil, scale: 1000), .scaled(maximum(\.maxSpeed), scale: 1000),
        .scaled(weighted(legLaps.map(\.avgHR))), .scaled(maximum(\.maxHR)),
        .scaled(weighted(legLaps.map(\.avgCadence))), .scaled(maximum(\.maxCadence)),
        .scaled(weighted(Array(lapPowers[range]))), .scaled(maximum(\.maxPower)),
        .scaled(sum(\.ascent)), .scaled(sum(\.descent)),
        .integer(Int64(range.lowerBound)), .integer(Int64(range.count)), .integer(0),
      ]
        + trainingFields(
          calories: leg?.kilocalories, work: leg?.work, normalizedPower: leg?.normalizedPower,
          intensityFactor: leg?.intensityFactor, trainingStressScore: leg?.trainingStressScore))
    let zoneTimes = (legs?.zones ?? []).compactMap { $0.laps.indices.contains(index) ? $0.laps[index] : nil }
    out += timeInZone(reference: 18, index: index, times: zoneTimes, at: legLaps.last?.endWall)
    return out
  }

  /// The session's training fields after `trigger`: calories, NP, TSS, IF, threshold power,
  /// work, feel, RPE.
  private func trainingFields(
    calories: Double?, work: Double?, normalizedPower: Double? = nil, intensityFactor: Double? = nil,
    trainingStressScore: Double? = nil
  ) -> [FITValue] {
    let annotations = exported.events.filter { $0.kind == SessionEvent.Kind.annotation.rawValue }
    let rpe = annotations.last { $0.cause == "rpe" }?.value
    // The mood's valence, -1 (unpleasant) to 1, on the feel's 0-100.
    let feel = annotations.last { $0.cause == "mood" }?.value.map { (min(1, max(-1, $0)) + 1) * 50 }
    return [
      .scaled(calories), .scaled(normalizedPower), .scaled(trainingStressScore, scale: 10),
      .scaled(intensityFactor, scale: 1000), .scaled(settings.ftp), .scaled(work),
      .scaled(feel), .scaled(rpe, scale: 10),
    ]
  }

  /// The `time_in_zone` of lap or session `index` (`reference`: 19 lap, 18 session): `times`
  /// per zone configuration, in `settings.zones`' order; nothing without zones.
  private mutating func timeInZone(reference: Int64, index: Int, times: [ZoneTimes], at wall: Double?) -> [UInt8] {
    let zones = settings.zones
    guard !zones.isEmpty, times.count == zones.count else { return [] }
    let heartRate = zones.firstIndex { $0.quantity == .heartRate }
    let power = zones.firstIndex { $0.quantity == .cyclingPower }
    func seconds(_ index: Int) -> FITValue { .integers(times[index].seconds.map { Int64(($0 * 1000).rounded()) }) }
    // Each zone's upper bound but the last's (open above): the next zone's start.
    func boundaries(_ index: Int) -> FITValue {
      .integers(zones[index].zones.dropLast().map { $0.upper.map { Int64($0.rounded()) } })
    }
    let rider = settings.rider
    var values: [FITValue] = [Self.time(wall), .integer(reference), .integer(Int64(index))]
    if let heartRate {
      let maximum = rider?.maxHeartRate ?? rider?.age.map { SystemZones.tanakaMaximumHeartRate(age: $0) }
      // The system's heart-rate zones are Karvonen's, by heart-rate reserve.
      values += [
        seconds(heartRate), boundaries(heartRate), .integer(zones[heartRate].source == .system ? 2 : 0),
        .scaled(maximum), .scaled(rider?.restingHeartRate),
      ]
    }
    if let power {
      values += [
        seconds(power), boundaries(power), .integer(zones[power].source == .system ? 1 : 0), .scaled(settings.ftp),
      ]
    }
    return emit(
      FITProfile.timeInZone(
        heartRateZones: heartRate.map { zones[$0].zones.count }, powerZones: power.map { zones[$0].zones.count }),
      values)
  }

  /// The remaining timer events, the laps, the session (one per activity of a multisport
  /// workout) and the activity; the header and CRC.
  public mutating func finish() -> ActivityEncoderEnd {
    var out = events(until: nil)
    let end = exported.end
    let start = exported.start
    let withoutZeros = exported.powerAveraging == .withoutZeros
    let legs = exported.legs
    let figures = exported.figures ?? SessionAnalyzer(zones: [], lapEnds: [], endTimer: 0).finish()
    var lapPowers: [Double?] = []
    for (index, lap) in laps.enumerated() {
      let avgPower = withoutZeros ? lapPower[index].average(.withoutZeros) : lap.avgPower
      let lapFigures = figures.laps.indices.contains(index) ? figures.laps[index] : nil
      lapPowers.append(avgPower)
      let sport =
        legs.flatMap { legs in legs.first { $0.laps.contains(index) }.map { Self.sport($0.type) } } ?? self.sport
      out += emit(
        FITProfile.lap,
        [
          Self.time(lap.endWall), .integer(Int64(index)), .integer(9), .integer(1), Self.time(lap.startWall),
          .scaled(lap.elapsed, scale: 1000), .scaled(lap.timer, scale: 1000), .scaled(lap.distance, scale: 100),
          .scaled(lap.avgSpeed, scale: 1000), .scaled(lap.maxSpeed, scale: 1000),
          .scaled(lap.avgHR), .scaled(lap.maxHR), .scaled(lap.avgCadence), .scaled(lap.maxCadence),
          .scaled(avgPower), .scaled(lap.maxPower), .scaled(lap.ascent), .scaled(lap.descent),
          .integer(lapTrigger(lap.trigger)), .integer(sport.sport), .integer(sport.subSport),
          .scaled(lapFigures?.kilocalories), .scaled(lapFigures?.normalizedPower), .scaled(lapFigures?.work),
        ])
      out += timeInZone(
        reference: 19, index: index,
        times: figures.zones.compactMap { $0.laps.indices.contains(index) ? $0.laps[index] : nil }, at: lap.endWall)
    }
    if let legs {
      for (index, leg) in legs.enumerated() {
        out += legSession(index, type: leg.type, laps: leg.laps, lapPowers: lapPowers)
      }
    }
    let totals = summary?.totals
    if legs == nil {
      out += emit(
        FITProfile.session,
        [
          Self.time(end), .integer(0), .integer(8), .integer(1), Self.time(start),
          .integer(sport.sport), .integer(sport.subSport),
          .scaled(session.elapsed, scale: 1000), .scaled(session.timer, scale: 1000),
          .scaled(session.distance, scale: 100),
          .scaled(totals?.averageSpeed, scale: 1000), .scaled(totals?.maxSpeed, scale: 1000),
          .scaled(totals?.heartRate.mean), .scaled(totals?.heartRate.maximum),
          .scaled(totals?.cadence.mean), .scaled(totals?.cadence.maximum),
          .scaled(withoutZeros ? sessionPower.average(.withoutZeros) : totals?.power.mean),
          .scaled(totals?.power.maximum),
          .scaled(session.ascent), .scaled(session.descent),
          .integer(0), .integer(Int64(laps.count)), .integer(0),
        ]
          + trainingFields(
            calories: figures.whole.kilocalories, work: figures.whole.work,
            normalizedPower: figures.whole.normalizedPower, intensityFactor: figures.whole.intensityFactor,
            trainingStressScore: figures.whole.trainingStressScore))
      out += timeInZone(reference: 18, index: 0, times: figures.zones.map(\.workout), at: end)
    }
    out += emit(
      FITProfile.activity,
      [
        Self.time(end), .scaled(session.timer, scale: 1000), .integer(Int64(legs?.count ?? 1)), .integer(0),
        .integer(26),
        .integer(1), .integer(Self.localTimestamp(end)),
      ])
    let header = FITMessageWriter.header(dataSize: UInt32(dataSize))
    // The file's CRC runs over the header and then the data; the data's CRC is known, and
    // CRC-16 is linear: crc(header ‖ data) = crc(header ‖ zeros) xor crc(data).
    var headerPart = FITCRC()
    headerPart.update(header)
    for _ in 0..<dataSize { headerPart.update(0) }
    let crc = headerPart.value ^ dataCRC.value
    return ActivityEncoderEnd(tail: out + [UInt8(crc & 0xFF), UInt8(crc >> 8)], head: header, points: records)
  }

  /// FIT's local_date_time of a Unix time: its FIT timestamp plus the board's offset from UTC
  /// at that moment (the system time zone, daylight saving included), which is how the
  /// platforms learn the rider's local time of day.
  static func localTimestamp(_ wall: Double) -> Int64? {
    guard let utc = FITMessageWriter.timestamp(unix: wall) else { return nil }
    var time = time_t(wall.rounded(.down))
    var parts = tm()
    localtime_r(&time, &parts)
    return utc + Int64(parts.tm_gmtoff)
  }
}
