import WorkoutCore
import WorkoutStore

/// A TCX (Garmin Training Center Database v2) activity of one stored session, made as its
/// points stream by (see `ActivityEncoder`). The laps are known up front, so each `Lap` and
/// its summary is written when its first point (or a later lap's) arrives, and its points
/// follow in `Track`s: a point belongs to the lap whose [start, end] holds it (one before the
/// first lap to the first, one after the last to the last), and a resume after a pause starts
/// a new `Track` in the lap, as Garmin's devices write it. Every point is a `Trackpoint`, with
/// a `Position` only when it has one. Speed and power go in Garmin's ActivityExtension v2.
public struct TCXActivityWriter: ActivityEncoder {
  static let namespace = "http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2"
  static let activityExtension = "http://www.garmin.com/xmlschemas/ActivityExtension/v2"

  private let exported: ExportedSession
  /// The session's laps; one lap over the whole session when it has none stored (TCX v2 XSD:
  /// an Activity has at least one Lap).
  private let laps: [LapTotals]
  private let sport: ActivityType?
  private var stretches: RunningStretches
  /// The lap being written (its `Lap` element open once `lapOpen`).
  private var lap = 0
  private var lapOpen = false
  /// The running stretch whose `Track` is open in the current lap, if one is.
  private var openTrack: Int?
  private var trackPoints = 0
  /// The current lap's power, for its average without the zeros when the rider chose it.
  private var lapPower = PowerTally()

  public init(_ session: ExportedSession) {
    exported = session
    sport = ActivityType(rawValue: session.session.activity)
    stretches = RunningStretches(session.timerEvents)
    laps = session.laps.isEmpty ? [LapTotals(wholeSession: session)] : session.laps.map(LapTotals.init)
  }

  /// What a `Lap` says of its lap: a stored lap's row, or the whole session's totals.
  struct LapTotals {
    var startWall: Double
    var endWall: Double
    var trigger: String
    var timer: Double
    var distance: Double
    var avgSpeed: Double?
    var maxSpeed: Double?
    var avgHR: Double?
    var maxHR: Double?
    var avgCadence: Double?
    var maxCadence: Double?
    var avgPower: Double?
    var maxPower: Double?
  }

  /// TCX v2 XSD, Sport_t: Running, Biking or Other.
  var sportName: String {
    switch sport {
    case .cycling, .indoorCycling: "Biking"
    case .running: "Running"
    case .walking, .hiking, .other, nil: "Other"
    }
  }

  /// Running cadence goes in ActivityExtension v2's RunCadence, a bike's in TCX's Cadence.
  private var runs: Bool { sport == .running }

  /// The declaration, `TrainingCenterDatabase` with its namespaces, the activity and its `Id`.
  public mutating func begin() -> [UInt8] {
    let schemaLocation = [
      Self.namespace, "http://www.garmin.com/xmlschemas/TrainingCenterDatabasev2.xsd",
      Self.activityExtension, "http://www.garmin.com/xmlschemas/ActivityExtensionv2.xsd",
    ].joined(separator: " ")
    let text = """
      <?xml version="1.0" encoding="UTF-8"?>
      <TrainingCenterDatabase xmlns="\(Self.namespace)" xmlns:ns3="\(Self.activityExtension)" \
      xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="\(schemaLocation)">
       <Activities>
        <Activity Sport="\(sportName)">
         <Id>\(XMLText.time(exported.start))</Id>

      """
    return Array(text.utf8)
  }

  /// One `Trackpoint`, after closing the laps it has passed and opening its lap and track.
  public mutating func point(_ exportPoint: ExportPoint) -> [UInt8] {
    let point = exportPoint.point
    var text = ""
    while lap < laps.count - 1, point.wall > laps[lap].endWall {
      text += closeLap()
      lap += 1
    }
    if !lapOpen { text += openLap() }
    let stretch = stretches.stretch(at: point.wall)
    if openTrack != stretch {
      if openTrack != nil { text += "    </Track>\n" }
      text += "    <Track>\n"
      openTrack = stretch
    }
    text += trackpoint(point)
    trackPoints += 1
    lapPower.add(point.power)
    return Array(text.utf8)
  }

  /// TCX v2 XSD, Trackpoint_t: Time, Position, AltitudeMeters, DistanceMeters, HeartRateBpm,
  /// Cadence, SensorState, Extensions.
  private func trackpoint(_ point: PointRecord) -> String {
    var text = "     <Trackpoint>\n"
    text += "      <Time>\(XMLText.time(point.wall))</Time>\n"
    if let lat = point.lat.flatMap({ XMLText.decimal($0, places: 7) }),
      let lon = point.lon.flatMap({ XMLText.decimal($0, places: 7) })
    {
      text += "      <Position>\n"
      text += "       <LatitudeDegrees>\(lat)</LatitudeDegrees>\n"
      text += "       <LongitudeDegrees>\(lon)</LongitudeDegrees>\n"
      text += "      </Position>\n"
    }
    if let altitude = point.altBaro ?? (point.fixDim == 3 ? point.altGPS : nil),
      let meters = XMLText.decimal(altitude, places: 1)
    {
      text += "      <AltitudeMeters>\(meters)</AltitudeMeters>\n"
    }
    if let distance = XMLText.decimal(point.distance, places: 2) {
      text += "      <DistanceMeters>\(distance)</DistanceMeters>\n"
    }
    // HeartRateInBeatsPerMinute_t's Value is a positiveByte; CadenceValue_t is 0…254.
    if let hr = point.hr.flatMap({ XMLText.integer(Double($0), in: 1...255) }) {
      text += "      <HeartRateBpm>\n       <Value>\(hr)</Value>\n      </HeartRateBpm>\n"
    }
    let cadence = point.cadence.flatMap { XMLText.integer($0, in: 0...254) }
    if !runs, let cadence { text += "      <Cadence>\(cadence)</Cadence>\n" }
    // ActivityExtension v2 XSD, ActivityTrackpointExtension_t: Speed, RunCadence, Watts.
    var tpx = ""
    if let speed = (point.speed ?? point.wheelSpeed).flatMap({ XMLText.decimal($0, places: 3) }) {
      tpx += "        <ns3:Speed>\(speed)</ns3:Speed>\n"
    }
    if runs, let cadence { tpx += "        <ns3:RunCadence>\(cadence)</ns3:RunCadence>\n" }
    if let watts = point.power.flatMap({ XMLText.integer(Double($0), in: 0...65_535) }) {
      tpx += "        <ns3:Watts>\(watts)</ns3:Watts>\n"
    }
    if !tpx.isEmpty {
      text += "      <Extensions>\n       <ns3:TPX>\n" + tpx + "       </ns3:TPX>\n      </Extensions>\n"
    }
    return text + "     </Trackpoint>\n"
  }

  /// TCX v2 XSD, TriggerMethod_t: Manual, Distance, Location, Time, HeartRate. A lap press is
  /// Manual, and so is the session's end, as the devices write it; automatic laps are Distance
  /// or Time.
  static func triggerMethod(_ trigger: String) -> String {
    switch LapSummary.Trigger(rawValue: trigger) {
    case .lapPress, .sessionEnd, .activityEnd, nil: "Manual"
    case .distance: "Distance"
    case .time: "Time"
    }
  }

  /// The current lap's start and its summary, all known before its points.
  private mutating func openLap() -> String {
    let record = laps[lap]
    lapOpen = true
    openTrack = nil
    // TCX v2 XSD, ActivityLap_t: TotalTimeSeconds, DistanceMeters, MaximumSpeed, Calories,
    // AverageHeartRateBpm, MaximumHeartRateBpm, Intensity, Cadence, TriggerMethod, Track*,
    // Notes, Extensions. Calories is required: 0 when they cannot be reckoned (no power, and
    // no heart rate with the rider's age, weight and sex).
    var text = "   <Lap StartTime=\"\(XMLText.time(record.startWall))\">\n"
    text += "    <TotalTimeSeconds>\(XMLText.decimal(record.timer, places: 3) ?? "0.000")</TotalTimeSeconds>\n"
    text += "    <DistanceMeters>\(XMLText.decimal(record.distance, places: 2) ?? "0.00")</DistanceMeters>\n"
    if let speed = record.maxSpeed.flatMap({ XMLText.decimal($0, places: 3) }) {
      text += "    <MaximumSpeed>\(speed)</MaximumSpeed>\n"
    }
    let lapFigures = exported.figures.flatMap { $0.laps.indices.contains(lap) ? $0.laps[lap] : nil }
    let figures = exported.laps.isEmpty ? exported.figures?.whole : lapFigures
    text += "    <Calories>\(figures?.kilocalories.flatMap { XMLText.integer($0, in: 0...65535) } ?? "0")</Calories>\n"
    if let hr = record.avgHR.flatMap({ XMLText.integer($0, in: 1...255) }) {
      text += "    <AverageHeartRateBpm>\n     <Value>\(hr)</Value>\n    </AverageHeartRateBpm>\n"
    }
    if let hr = record.maxHR.flatMap({ XMLText.integer($0, in: 1...255) }) {
      text += "    <MaximumHeartRateBpm>\n     <Value>\(hr)</Value>\n    </MaximumHeartRateBpm>\n"
    }
    text += "    <Intensity>Active</Intensity>\n"
    if !runs, let cadence = record.avgCadence.flatMap({ XMLText.integer($0, in: 0...254) }) {
      text += "    <Cadence>\(cadence)</Cadence>\n"
    }
    text += "    <TriggerMethod>\(Self.triggerMethod(record.trigger))</TriggerMethod>\n"
    return text
  }

  /// Closes the current lap's track and the lap, after its ActivityExtension v2 summary.
  private mutating func closeLap() -> String {
    var text = lapOpen ? "" : openLap()
    if openTrack != nil { text += "    </Track>\n" }
    openTrack = nil
    lapOpen = false
    let record = laps[lap]
    let lapAveragePower =
      exported.powerAveraging == .withoutZeros ? lapPower.average(.withoutZeros) : record.avgPower
    lapPower = PowerTally()
    // ActivityExtension v2 XSD, ActivityLapExtension_t: AvgSpeed, MaxBikeCadence,
    // AvgRunCadence, MaxRunCadence, Steps, AvgWatts, MaxWatts.
    var lx = ""
    if let speed = record.avgSpeed.flatMap({ XMLText.decimal($0, places: 3) }) {
      lx += "      <ns3:AvgSpeed>\(speed)</ns3:AvgSpeed>\n"
    }
    if !runs, let cadence = record.maxCadence.flatMap({ XMLText.integer($0, in: 0...254) }) {
      lx += "      <ns3:MaxBikeCadence>\(cadence)</ns3:MaxBikeCadence>\n"
    }
    if runs, let cadence = record.avgCadence.flatMap({ XMLText.integer($0, in: 0...254) }) {
      lx += "      <ns3:AvgRunCadence>\(cadence)</ns3:AvgRunCadence>\n"
    }
    if runs, let cadence = record.maxCadence.flatMap({ XMLText.integer($0, in: 0...254) }) {
      lx += "      <ns3:MaxRunCadence>\(cadence)</ns3:MaxRunCadence>\n"
    }
    if let watts = lapAveragePower.flatMap({ XMLText.integer($0, in: 0...65_535) }) {
      lx += "      <ns3:AvgWatts>\(watts)</ns3:AvgWatts>\n"
    }
    if let watts = record.maxPower.flatMap({ XMLText.integer($0, in: 0...65_535) }) {
      lx += "      <ns3:MaxWatts>\(watts)</ns3:MaxWatts>\n"
    }
    if !lx.isEmpty { text += "    <Extensions>\n     <ns3:LX>\n" + lx + "     </ns3:LX>\n    </Extensions>\n" }
    return text + "   </Lap>\n"
  }

  /// The last lap with points and the laps after it, the creator, and the file's end.
  public mutating func finish() -> ActivityEncoderEnd {
    var text = ""
    while lap < laps.count {
      text += closeLap()
      lap += 1
    }
    // TCX v2 XSD, Device_t: Name, UnitId, ProductID, Version (VersionMajor, VersionMinor,
    // BuildMajor, BuildMinor): this release's "major.minor.patch" as major, minor, patch, 0.
    let version = WorkoutdVersion.string.split(separator: ".").map { Int($0) ?? 0 } + [0, 0, 0]
    // Activity_t: Id, Lap+, Notes?, Training?, Creator? (TCX v2 XSD).
    if let notes = exported.annotationText { text += "   <Notes>\(XMLText.escaped(notes))</Notes>\n" }
    text += "   <Creator xsi:type=\"Device_t\">\n    <Name>workoutd</Name>\n"
    text += "    <UnitId>\(exported.serial)</UnitId>\n    <ProductID>1</ProductID>\n    <Version>\n"
    text += "     <VersionMajor>\(version[0])</VersionMajor>\n     <VersionMinor>\(version[1])</VersionMinor>\n"
    text += "     <BuildMajor>\(version[2])</BuildMajor>\n     <BuildMinor>0</BuildMinor>\n"
    text += "    </Version>\n   </Creator>\n  </Activity>\n </Activities>\n</TrainingCenterDatabase>\n"
    return ActivityEncoderEnd(tail: Array(text.utf8), points: trackPoints)
  }
}

extension TCXActivityWriter.LapTotals {
  init(_ lap: LapRecord) {
    self.init(
      startWall: lap.startWall, endWall: lap.endWall, trigger: lap.trigger, timer: lap.timer,
      distance: lap.distance, avgSpeed: lap.avgSpeed, maxSpeed: lap.maxSpeed, avgHR: lap.avgHR, maxHR: lap.maxHR,
      avgCadence: lap.avgCadence, maxCadence: lap.maxCadence, avgPower: lap.avgPower, maxPower: lap.maxPower)
  }

  /// One lap over the whole session.
  init(wholeSession exported: ExportedSession) {
    let totals = exported.summary?.totals
    self.init(
      startWall: exported.start, endWall: exported.end, trigger: LapSummary.Trigger.sessionEnd.rawValue,
      timer: exported.session.timer, distance: exported.session.distance, avgSpeed: totals?.averageSpeed,
      maxSpeed: totals?.maxSpeed, avgHR: totals?.heartRate.mean, maxHR: totals?.heartRate.maximum,
      avgCadence: totals?.cadence.mean, maxCadence: totals?.cadence.maximum, avgPower: totals?.power.mean,
      maxPower: totals?.power.maximum)
  }
}
