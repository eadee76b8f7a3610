import WorkoutCore

/// One moment of the replayed world: what the devices report at board time `time`.
public struct ReplayStep: Sendable, Hashable {
  public var time: Double
  public var inputs: [EngineInput]
}

/// Turns a recorded ride into the world the simulated board replays, second by second, reading
/// the ride as it goes (constant memory however long the ride):
///
/// - a lead-in before t = 0: the rider waits at the start with a fix, and presses start early
///   enough that the countdown ends at t = 0, when the recording began;
/// - each record as a GPS fix (its speed as the receiver's), strap readings, and a barometer
///   reading: Garmin's Edge units record barometric altitude, so the pressure that altitude
///   stands for (ISA) is what a BMP280 would have read;
/// - the recording's gaps: where the rider moved on between the records on either side (a
///   device that "smart records" a point every few seconds while the receiver fixed every
///   second), the fixes, heart rate and power the receiver and sensors gave in between,
///   interpolated;
///   where the rider did not (the device was auto-paused and wrote nothing: they stood still),
///   fixes at the last position with zero speed, so workoutd's own auto-pause decides;
/// - the rider's lap and stop presses at their times.
public struct ReplaySchedule: Sequence, IteratorProtocol {
  public let header: ReplayRideHeader
  public let leadIn: Double
  public let countdown: Double
  private var source: any ReplayRowSource
  /// Rows read from the source and not yet replayed (a few, at the start).
  private var lookahead: [ReplayRow] = []
  private var time: Double
  private var lastPosition: GeoPoint?
  private var lastAltitude: Double?
  /// The last record with a position, for filling a gap after it.
  private var lastRecord: ReplayRide.Record?
  /// A gap is ridden through (interpolated) when the records either side of it are this far
  /// apart at this average speed or more, m/s: walking pace. A rider who stopped (an
  /// auto-paused device) moves only by the receiver's drift, well under it.
  public static let movingSpeed = 1.0
  /// Nor longer than this, s: beyond it what happened in between is not known.
  public static let longestRiddenGap = 300.0
  /// Rows read ahead to find the record after a gap (presses in between are few).
  private static let lookaheadLimit = 16
  /// Whether a stop press was replayed; a ride without one is stopped a second after its last
  /// row, so it ends (and `--exit-at-end` exits) rather than running at its last instant.
  private var stopped = false
  /// The receiver's fixes pass the filter the gpsd source applies (`FixQualityFilter`), so that
  /// the simulated board runs the GPS the one way the real board does: a recorded position at
  /// 0°, 0° (a device with no fix yet) or off the globe is a `gpsRejected`, not a fix; an
  /// altitude or speed no receiver measures is dropped; a second fix of the same time is not
  /// another epoch.
  private var filter: FixQualityFilter

  public init(
    header: ReplayRideHeader, rows: some ReplayRowSource, leadIn: Double = 6, countdown: Double = 3,
    fixQuality: FixQualitySettings = FixQualitySettings()
  ) {
    self.header = header
    filter = FixQualityFilter(settings: fixQuality)
    self.leadIn = Swift.max(leadIn, countdown + 1).rounded(.up)
    self.countdown = countdown
    source = rows
    time = -self.leadIn
    // The lead-in waits where the ride starts: read ahead to its first position.
    while let row = source.nextRow() {
      lookahead.append(row)
      if case .record(let record) = row, let position = Self.place(of: record) {
        lastPosition = position
        lastAltitude = record.altitude
        lastRecord = record
        break
      }
    }
  }

  public init(
    ride: ReplayRide, leadIn: Double = 6, countdown: Double = 3, fixQuality: FixQualitySettings = FixQualitySettings()
  ) {
    self.init(header: ride.header, rows: ride.rows, leadIn: leadIn, countdown: countdown, fixQuality: fixQuality)
  }

  /// The board time of the first step.
  public var startTime: Double { -leadIn }

  /// When a row happens on the board: the start press comes early by the countdown.
  private func boardTime(of row: ReplayRow) -> Double {
    if case .press(let press) = row, press.request == .start { return press.time - countdown }
    return row.time
  }

  private mutating func peek() -> ReplayRow? {
    if lookahead.isEmpty, let row = source.nextRow() { lookahead.append(row) }
    return lookahead.first
  }

  /// The next whole second of the world: the records and presses that fall in it, or a
  /// standstill fix when the recording has none for it.
  public mutating func next() -> ReplayStep? {
    guard peek() != nil else {
      guard !stopped else { return nil }
      stopped = true
      defer { time += 1 }
      return ReplayStep(time: time, inputs: [.request(.stop, .simulation)])
    }
    let stepTime = time
    let stepEnd = stepTime + 1
    time = stepEnd
    var inputs: [EngineInput] = []
    var hadFix = false
    while let row = peek(), boardTime(of: row) < stepEnd {
      lookahead.removeFirst()
      switch row {
      case .press(let press):
        inputs.append(.request(press.request, .simulation))
        if press.request == .stop { stopped = true }
      case .record(let record):
        if let latitude = record.latitude, let longitude = record.longitude {
          inputs += fix(
            at: record.time, GeoPoint(latitude: latitude, longitude: longitude), altitude: record.altitude,
            speed: record.speed)
          hadFix = true
        }
        if let position = Self.place(of: record) {
          lastPosition = position
          lastAltitude = record.altitude
          lastRecord = record
        }
        if let altitude = record.altitude, let pressure = BarometricAltitude.pressure(altitude: altitude) {
          inputs.append(.reading(.barometer(pressure: pressure, temperature: nil)))
        }
        if let bpm = record.heartRate { inputs.append(.reading(.heartRate(bpm: bpm))) }
        if let rpm = record.cadence { inputs.append(.reading(.cadence(rpm: rpm))) }
        if let watts = record.power { inputs.append(.reading(.power(watts: watts))) }
        if let celsius = record.temperature { inputs.append(.reading(.temperature(celsius: celsius))) }
      }
    }
    if !hadFix, let between = riddenThrough(at: stepTime) {
      // No record for this second, but the rider rode on: what the receiver and the strap
      // said meanwhile, on the straight line between the records either side.
      var first = fix(at: stepTime, between.position, altitude: between.altitude, speed: between.speed)
      if let altitude = between.altitude, let pressure = BarometricAltitude.pressure(altitude: altitude) {
        first.append(.reading(.barometer(pressure: pressure, temperature: nil)))
      }
      inputs.insert(contentsOf: first, at: 0)
      if let bpm = between.heartRate { inputs.append(.reading(.heartRate(bpm: bpm))) }
      if let watts = between.power { inputs.append(.reading(.power(watts: watts))) }
    } else if !hadFix, let position = lastPosition {
      // No record for this second: the rider stands still where they were, and the barometer
      // goes on reading the same air.
      var first = fix(at: stepTime, position, altitude: lastAltitude, speed: 0)
      if let altitude = lastAltitude, let pressure = BarometricAltitude.pressure(altitude: altitude) {
        first.append(.reading(.barometer(pressure: pressure, temperature: nil)))
      }
      inputs.insert(contentsOf: first, at: 0)
    }
    return ReplayStep(time: stepTime, inputs: inputs)
  }

  /// Where the rider was at `time`, inside a gap of the recording that they rode through; nil
  /// if they stood still (or the gap is too long to know).
  private mutating func riddenThrough(
    at time: Double
  ) -> (position: GeoPoint, altitude: Double?, speed: Double, heartRate: Int?, power: Int?)? {
    guard let last = lastRecord, let from = lastPosition, let next = nextPositionedRecord(),
      let latitude = next.latitude, let longitude = next.longitude
    else { return nil }
    let gap = next.time - last.time
    guard gap > 1, gap <= Self.longestRiddenGap, time > last.time, time < next.time else { return nil }
    let to = GeoPoint(latitude: latitude, longitude: longitude)
    let speed = from.distance(to: to) / gap
    guard speed >= Self.movingSpeed else { return nil }
    let fraction = (time - last.time) / gap
    func between(_ a: Double?, _ b: Double?) -> Double? {
      guard let a, let b else { return a ?? b }
      return a + (b - a) * fraction
    }
    return (
      GeoPoint(
        latitude: from.latitude + (to.latitude - from.latitude) * fraction,
        longitude: from.longitude + (to.longitude - from.longitude) * fraction),
      between(last.altitude, next.altitude), speed,
      between(last.heartRate.map(Double.init), next.heartRate.map(Double.init)).map { Int($0.rounded()) },
      between(last.power.map(Double.init), next.power.map(Double.init)).map { Int($0.rounded()) }
    )
  }

  /// The next record with a position, read ahead (a few rows at most).
  private mutating func nextPositionedRecord() -> ReplayRide.Record? {
    var index = 0
    while index < Self.lookaheadLimit {
      if index == lookahead.count {
        guard let row = source.nextRow() else { return nil }
        lookahead.append(row)
      }
      if case .record(let record) = lookahead[index], Self.place(of: record) != nil {
        return record
      }
      index += 1
    }
    return nil
  }

  /// Where a record puts the rider: its position, unless it has none or it is 0°, 0° (what a
  /// device writes before its first fix), which the filter refuses and no standstill or ridden
  /// gap may start or end at.
  static func place(of record: ReplayRide.Record) -> GeoPoint? {
    guard let latitude = record.latitude, let longitude = record.longitude, latitude != 0 || longitude != 0 else {
      return nil
    }
    return GeoPoint(latitude: latitude, longitude: longitude)
  }

  /// The receiver's report of a position: the fix the filter passes on, or why it refuses it
  /// (nothing for a second report of the same epoch, which the gpsd source merges into it).
  private mutating func fix(at time: Double, _ position: GeoPoint, altitude: Double?, speed: Double?) -> [EngineInput] {
    let fix = GPSFix(
      dimension: altitude == nil ? .twoD : .threeD, time: header.startWall + time,
      latitude: position.latitude, longitude: position.longitude, altitude: altitude, speed: speed)
    switch filter.evaluate(fix) {
    case .accepted(let clean): return [.reading(.gps(clean))]
    case .rejected(.repeatedTime): return []
    case .rejected(let reason): return [.reading(.gpsRejected(reason))]
    }
  }
}
