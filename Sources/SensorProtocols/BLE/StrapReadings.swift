import WorkoutCore

/// Turns a strap's characteristic values into the engine's readings: heart rate from 0x2A37,
/// power, crank cadence and wheel speed from 0x2A63, crank cadence and wheel speed from 0x2A5B,
/// battery level from 0x2A19.
/// Keeps the revolution references, so it lives as long as one sensor's connection.
public struct StrapReadings: Sendable {
  /// What one value gave.
  public struct Result: Sendable, Hashable {
    public var readings: [SensorReading] = []
    /// Battery level, % (0x2A19): for status, not a reading of the ride.
    public var batteryPercent: Int?
    /// An ANT+ sensor's battery voltage and status (its battery pages, Common Page 82), for status.
    public var batteryStatus: ANTBatteryStatus?
    /// Heart-rate strap contact (0x2A37 flags bits 1–2), when the strap reports it.
    public var contact: HeartRateMeasurement.SensorContact?
    /// RR intervals in 1/1024 s, oldest first, exactly as sent.
    public var rrIntervals: [UInt16] = []
    /// A crank or wheel pair that was not used, and why.
    public var refused: RefusedPair?
    /// Whether a crank or wheel pair gave a speed or cadence (a stop included).
    public var pairUsed = false
  }

  /// A wheel or crank (cumulative revolutions, event time) pair that gave no value.
  public struct RefusedPair: Sendable, Hashable, CustomStringConvertible {
    public enum Counter: String, Sendable, Hashable {
      case wheel
      case crank
    }

    public var counter: Counter
    public var why: RevolutionRejection

    /// "a wheel pair of 412 km/h (at most 100 km/h)", for a log line and status.
    public var description: String {
      switch (why, counter) {
      case (.implausibleRate(let rate, let maximum), .wheel):
        "a wheel pair of \(wholeNumberText(rate * 3.6)) km/h (at most \(wholeNumberText(maximum * 3.6)) km/h)"
      case (.implausibleRate(let rate, let maximum), .crank):
        "a crank pair of \(wholeNumberText(rate)) rpm (at most \(wholeNumberText(maximum)) rpm)"
      case (.revolutionsWithoutEventTime(let delta), _):
        "a \(counter.rawValue) pair of \(delta) revolutions with no new event time"
      }
    }
  }

  private var crank = CrankCadenceCalculator()!
  private var powerCrank = CrankCadenceCalculator()!
  private var wheel: WheelSpeedCalculator
  private var powerWheel: WheelSpeedCalculator

  /// The wheel circumference a rider sets when none is configured, m: a 700×25C road tyre
  /// (ETRTO 25-622), 2105 mm in the tyre makers' tables.
  public static let defaultWheelCircumference = 2.105

  /// The fastest heart rate taken as a reading, bpm. The uint16 form of the field allows 65,535;
  /// a human heart, even in a tachycardia, stays under 300. Above it the strap is at fault (and
  /// its ride average, maximum and zones would be no one's).
  public static let maximumHeartRate = 300
  /// The most power taken as a reading, W. The sint16 field allows 32,767; the best track
  /// sprinters' peaks are under 3,000 W. Above it the meter is at fault: one such second would
  /// rule a ride's maximum, normalized power and TSS.
  public static let maximumPower = 4_000

  /// `wheelCircumference` in metres, 0.1–5 m (outside that, the default).
  public init(wheelCircumference: Double = Self.defaultWheelCircumference) {
    let calculator =
      WheelSpeedCalculator(circumference: wheelCircumference)
      ?? WheelSpeedCalculator(circumference: Self.defaultWheelCircumference)!
    wheel = calculator
    powerWheel = calculator
  }

  /// Decodes `value` of characteristic `id`, notified or read at `now` (monotonic seconds).
  /// A value that breaks its characteristic's layout, or whose heart rate or power is beyond
  /// any rider's (`maximumHeartRate`, `maximumPower`), throws and changes nothing.
  public mutating func update(
    _ id: GATTCharacteristicID, _ value: [UInt8], at now: Double
  ) throws(BLEDecodeError)
    -> Result
  {
    var result = Result()
    switch id.characteristic {
    case .heartRateMeasurement:
      let m = try HeartRateMeasurement(payload: value)
      result.contact = m.sensorContact == .notSupported ? nil : m.sensorContact
      result.rrIntervals = m.rrIntervals
      // A strap that knows it has no skin contact sends a number that is no one's heart rate;
      // 0 bpm is what several send while they settle.
      if m.sensorContact != .notDetected && m.heartRate > 0 {
        try Self.check(Int(m.heartRate), of: .heartRateMeasurement, .heartRate, maximum: Self.maximumHeartRate, "bpm")
        result.readings.append(.heartRate(bpm: Int(m.heartRate)))
      }
    case .cyclingPowerMeasurement:
      let m = try CyclingPowerMeasurement(payload: value)
      try Self.check(
        Int(m.instantaneousPower), of: .cyclingPowerMeasurement, .instantaneousPower, maximum: Self.maximumPower, "W")
      // Instantaneous power is a sint16 in W; a negative value (some meters while back-pedalling)
      // is recorded as 0, the power a rider put in.
      result.readings.append(.power(watts: max(0, Int(m.instantaneousPower))))
      // Wheel data (a hub meter, or a crank meter with a wheel magnet) and crank data may come
      // together: each has its own counters and event time (1/2048 s for the wheel here).
      if let data = m.wheel {
        Self.addWheel(powerWheel.update(data, at: now), distance: powerWheel.lastDistance, to: &result)
      }
      if let data = m.crank { Self.add(powerCrank.update(data, at: now), to: &result) }
    case .cscMeasurement:
      let m = try CSCMeasurement(payload: value)
      if let data = m.wheel { Self.addWheel(wheel.update(data, at: now), distance: wheel.lastDistance, to: &result) }
      if let data = m.crank { Self.add(crank.update(data, at: now), to: &result) }
    case .batteryLevel:
      result.batteryPercent = Int(try BatteryLevel(payload: value).percent)
    default:
      break
    }
    return result
  }

  /// Throws when `value` is above `maximum`: the whole value is dropped, as a malformed one is,
  /// and a run of them makes the sensor a fault (`StrapSource`).
  private static func check(
    _ value: Int, of characteristic: BLECharacteristic, _ field: BLEField, maximum: Int, _ unit: String
  ) throws(BLEDecodeError) {
    if value > maximum { throw .implausible(characteristic, field, value: value, maximum: maximum, unit: unit) }
  }

  /// Adds a wheel reading to `result` (ANT+ speed sensors share it, so both radios read alike).
  static func addWheel(_ reading: RevolutionReading, distance: Double, to result: inout Result) {
    switch reading {
    case .value(let speed):
      result.readings.append(.wheelSpeed(metersPerSecond: speed, distance: distance))
      result.pairUsed = true
    case .stopped:
      result.readings.append(.wheelSpeed(metersPerSecond: 0, distance: 0))
      result.pairUsed = true
    case .rejected(let why): result.refused = RefusedPair(counter: .wheel, why: why)
    case .baseline, .unchanged: break
    }
  }

  /// Adds a crank reading to `result`.
  static func add(_ reading: RevolutionReading, to result: inout Result) {
    switch reading {
    case .value(let rpm):
      result.readings.append(.cadence(rpm: rpm))
      result.pairUsed = true
    case .stopped:
      result.readings.append(.cadence(rpm: 0))
      result.pairUsed = true
    case .rejected(let why): result.refused = RefusedPair(counter: .crank, why: why)
    case .baseline, .unchanged: break
    }
  }
}
