/// Count, mean and extremes of a stream of samples, in constant memory.
public struct SampleStatistics: Sendable, Hashable, Codable {
  public private(set) var count: Int = 0
  public private(set) var sum: Double = 0
  public private(set) var maximum: Double?
  public private(set) var minimum: Double?

  public init() {}

  public mutating func add(_ value: Double) {
    count += 1
    sum += value
    maximum = Swift.max(maximum ?? value, value)
    minimum = Swift.min(minimum ?? value, value)
  }

  public var mean: Double? { count > 0 ? sum / Double(count) : nil }
}

/// Running totals over one stretch of a session: the whole session, or one lap.
public struct IntervalTotals: Sendable, Hashable, Codable {
  /// Seconds since the stretch began, pauses included.
  public var elapsed: Double = 0
  /// Seconds spent running: the timer, which stops while paused.
  public var timer: Double = 0
  /// Metres covered while running.
  public var distance: Double = 0
  public var speed = SampleStatistics()
  public var heartRate = SampleStatistics()
  public var cadence = SampleStatistics()
  public var power = SampleStatistics()
  /// Metres climbed and descended while running (noise rejected: see `AscentAccumulator`).
  public var ascent: Double = 0
  public var descent: Double = 0

  public init() {}

  /// Distance over timer time, m/s (what bike computers call average moving speed).
  public var averageSpeed: Double? { timer > 0 ? distance / timer : nil }

  public var maxSpeed: Double? { speed.maximum }
}

/// One recorded second of a session: what the logger knew at that tick.
public struct TrackPoint: Sendable, Hashable, Codable {
  /// Sequence number within the session, from 0.
  public var sequence: Int
  public var moment: Moment
  public var elapsed: Double
  public var timer: Double
  /// Cumulative distance, metres.
  public var distance: Double
  public var latitude: Double?
  public var longitude: Double?
  /// GPS altitude, metres MSL (3D fixes only).
  public var altitude: Double?
  /// Barometric altitude, metres (calibrated to sea level once GPS has settled it).
  public var barometricAltitude: Double?
  /// Barometric pressure, Pa, the altitude above was computed from.
  public var pressure: Double?
  public var speed: Double?
  public var heartRate: Int?
  public var cadence: Double?
  public var power: Int?
  /// Speed from a wheel sensor, m/s, recorded beside GPS speed.
  public var wheelSpeed: Double?
  /// The speed the ride's statistics take from this point: GPS's, else the wheel's (indoors,
  /// a tunnel).
  public var statisticsSpeed: Double? { speed ?? wheelSpeed }
  public var temperature: Double?
  /// Relative humidity, %RH (BME280).
  public var humidity: Double?
  /// The road's feel through the board this second (the inertial sensor): the vibration, RMS
  /// m/s² about the second's slow mean, and the peak acceleration, m/s² (gravity in it).
  public var vibration: Double?
  public var peakAcceleration: Double?
  /// 2 or 3 when the position came from a fix of that dimension.
  public var fixDimension: Int?
  public var horizontalError: Double?

  public init(sequence: Int, moment: Moment, elapsed: Double, timer: Double, distance: Double) {
    self.sequence = sequence
    self.moment = moment
    self.elapsed = elapsed
    self.timer = timer
    self.distance = distance
  }
}

/// A finished lap, as it is stored and shown.
public struct LapSummary: Sendable, Hashable, Codable {
  /// 1 for the first lap.
  public var number: Int
  public var start: Moment
  public var end: Moment
  public var totals: IntervalTotals
  /// `lapPress` for a lap press (a button, `workoutctl lap`), `distance` and `time` for an
  /// automatic lap, `sessionEnd` for the last lap closed by stop.
  public var trigger: Trigger
  /// Seconds in each zone, one entry per zone configuration of the workout (as the builder's
  /// `zoneTrackers`); nil for a workout without zones.
  public var zoneTimes: [ZoneTimes]?

  public enum Trigger: String, Sendable, Hashable, Codable {
    case lapPress
    case sessionEnd
    /// Automatic laps (`EngineSettings.autoLap`). An older binary reads these as lap presses.
    case distance
    case time
    /// The workout went on to its next activity (`EngineInput.nextActivity`).
    case activityEnd
  }

  public init(number: Int, start: Moment, end: Moment, totals: IntervalTotals, trigger: Trigger) {
    self.number = number
    self.start = start
    self.end = end
    self.totals = totals
    self.trigger = trigger
  }
}

/// Automatic laps, as a bike computer's "Auto Lap": every so many metres ridden or seconds of
/// timer time in the current lap (pauses do not count; a lap press starts the count again).
public enum AutoLap: Sendable, Hashable, Codable {
  case distance(metres: Double)
  case time(seconds: Double)

  /// The trigger when the current lap has reached its length, else nil. Checked once a
  /// recorded second, so a lap ends on the second that reaches it (at 10 m/s, within 10 m).
  public func due(_ lap: IntervalTotals) -> LapSummary.Trigger? {
    switch self {
    case .distance(let metres): lap.distance >= metres ? .distance : nil
    case .time(let seconds): lap.timer >= seconds - 1e-6 ? .time : nil
    }
  }
}
