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
/// - the recording's gaps (the device was auto-paused and wrote nothing: the rider stood still)
///   as fixes at the last position with zero speed, so workoutd's own auto-pause decides;
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
  /// Whether a stop press was replayed; a ride without one is stopped a second after its last
  /// row, so it ends (and `--exit-at-end` exits) rather than running at its last instant.
  private var stopped = false

  public init(header: ReplayRideHeader, rows: some ReplayRowSource, leadIn: Double = 6, countdown: Double = 3) {
    self.header = header
    self.leadIn = Swift.max(leadIn, countdown + 1).rounded(.up)
    self.countdown = countdown
    source = rows
    time = -self.leadIn
    // The lead-in waits where the ride starts: read ahead to its first position.
    while let row = source.nextRow() {
      lookahead.append(row)
      if case .record(let record) = row, let latitude = record.latitude, let longitude = record.longitude {
        lastPosition = GeoPoint(latitude: latitude, longitude: longitude)
        lastAltitude = record.altitude
        break
      }
    }
  }

  public init(ride: ReplayRide, leadIn: Double = 6, countdown: Double = 3) {
    self.init(header: ride.header, rows: ride.rows, leadIn: leadIn, countdown: countdown)
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
          lastPosition = GeoPoint(latitude: latitude, longitude: longitude)
          lastAltitude = record.altitude
          inputs.append(fix(at: record.time, lastPosition!, altitude: record.altitude, speed: record.speed))
          hadFix = true
        }
        if let altitude = record.altitude, let pressure = BarometricAltitude.pressure(altitude: altitude) {
          inputs.append(.reading(.barometer(pressure: pressure, temperature: nil)))
        }
        if let bpm = record.heartRate { inputs.append(.reading(.heartRate(bpm: bpm))) }
        if let rpm = record.cadence { inputs.append(.reading(.cadence(rpm: rpm))) }
        if let celsius = record.temperature { inputs.append(.reading(.temperature(celsius: celsius))) }
      }
    }
    if !hadFix, let position = lastPosition {
      // No record for this second: the rider stands still where they were, and the barometer
      // goes on reading the same air.
      inputs.insert(fix(at: stepTime, position, altitude: lastAltitude, speed: 0), at: 0)
      if let altitude = lastAltitude, let pressure = BarometricAltitude.pressure(altitude: altitude) {
        inputs.insert(.reading(.barometer(pressure: pressure, temperature: nil)), at: 1)
      }
    }
    return ReplayStep(time: stepTime, inputs: inputs)
  }

  private func fix(at time: Double, _ position: GeoPoint, altitude: Double?, speed: Double?) -> EngineInput {
    .reading(
      .gps(
        GPSFix(
          dimension: altitude == nil ? .twoD : .threeD, time: header.startWall + time,
          latitude: position.latitude, longitude: position.longitude, altitude: altitude, speed: speed)))
  }
}
