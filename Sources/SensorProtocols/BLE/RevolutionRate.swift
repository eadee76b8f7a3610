/// What one (cumulative revolutions, last event time) pair says about speed or cadence.
public enum RevolutionReading: Sendable, Hashable {
  /// No value yet: the pair is the new reference. So is the first pair, the first after a stop
  /// (a rate averaged over the stop would be no one's speed, and past half the event time's
  /// roll-over period the time difference is ambiguous), and the first with another time unit.
  case baseline
  /// A new revolution event: the rate since the previous one (m/s for a wheel, rpm for a crank).
  case value(Double)
  /// No new event, and less than `stoppedAfter` seconds since the last one: nothing new to
  /// record (the last value still holds; sensors notify about once a second, a wheel turns
  /// less often than that at walking pace).
  case unchanged
  /// No new event for `stoppedAfter` seconds: the wheel is stopped or the rider is coasting.
  case stopped
  /// An implausible pair, not recorded; it becomes the new reference.
  case rejected(RevolutionRejection)
}

/// Why a pair was rejected.
public enum RevolutionRejection: Sendable, Hashable {
  /// Faster than `maximum` (100 km/h, 250 rpm): a counter reset (battery change, the sensor's
  /// own "set cumulative value"), a wheel counter that went backwards, or a corrupt value; the
  /// modular difference then is most of the counter's range.
  case implausibleRate(Double, maximum: Double)
  /// The count changed but the event time did not.
  case revolutionsWithoutEventTime(delta: UInt32)
}

/// The arithmetic shared by wheel and crank: modular differences of a counter of `counterBits`
/// and of a uint16 event time, in revolutions per second.
struct RevolutionCounter: Sendable, Hashable {
  private struct Reference: Sendable, Hashable {
    var revolutions: UInt32
    var eventTime: UInt16
    var unit: EventTimeUnit
  }

  let counterMask: UInt32
  let stoppedAfter: Double
  private var reference: Reference?
  /// Monotonic seconds when the reference (the last new event) arrived.
  private var referenceAt = 0.0
  /// Revolutions between the last two events, when the last reading was a `.value`; else 0.
  private(set) var lastRevolutions: UInt32 = 0

  init(counterBits: Int, stoppedAfter: Double) {
    counterMask = counterBits >= 32 ? .max : (1 << UInt32(counterBits)) - 1
    self.stoppedAfter = stoppedAfter
  }

  /// The reading in revolutions per second times `scale` (metres per revolution, or 60 for
  /// rpm), judged against `maximum` in that same unit, so a value is never above it by rounding.
  mutating func update(
    revolutions: UInt32, eventTime: UInt16, unit: EventTimeUnit, at now: Double, scale: Double, maximum: Double
  ) -> RevolutionReading {
    let pair = Reference(revolutions: revolutions & counterMask, eventTime: eventTime, unit: unit)
    lastRevolutions = 0
    // Never longer than half the event time's roll-over (32 s at 1/1024 s, 16 s at 1/2048 s).
    let quiet = min(stoppedAfter, 32_768 / unit.ticksPerSecond)
    guard let ref = reference, ref.unit == unit else {
      reference = pair
      referenceAt = now
      return .baseline
    }
    let revolutionDelta = (pair.revolutions &- ref.revolutions) & counterMask
    let timeDelta = pair.eventTime &- ref.eventTime
    let silentFor = now - referenceAt
    if timeDelta == 0 || revolutionDelta == 0 {
      if timeDelta == 0 && revolutionDelta != 0 {
        reference = pair
        referenceAt = now
        return .rejected(.revolutionsWithoutEventTime(delta: revolutionDelta))
      }
      // Same event, or an event time with no revolution: nothing new happened.
      return silentFor >= quiet ? .stopped : .unchanged
    }
    reference = pair
    referenceAt = now
    if !(silentFor < quiet) { return .baseline }
    // One rounding, in the division: exactly 250 rpm (25 revolutions in 6144/1024 s) is 250.
    let value = Double(revolutionDelta) * unit.ticksPerSecond * scale / Double(timeDelta)
    guard value <= maximum else { return .rejected(.implausibleRate(value, maximum: maximum)) }
    lastRevolutions = revolutionDelta
    return .value(value)
  }
}

/// Wheel speed from successive wheel revolution data (CSC or Cycling Power; the event time
/// unit comes with the data). Pure: the caller passes the monotonic time each value arrived.
public struct WheelSpeedCalculator: Sendable, Hashable {
  /// Metres per wheel revolution.
  public let circumference: Double
  /// Speeds above this (m/s) are rejected: 100 km/h.
  public static let maximumSpeed = 100 / 3.6
  private var counter: RevolutionCounter

  /// `circumference` in metres (a 700×25C road wheel is about 2.105 m); nil unless it is between
  /// 0.1 m and 5 m. `stoppedAfter`: seconds without a new wheel event before `.stopped` (3 s by
  /// default: a 2.1 m wheel turning slower than once in 3 s is below 2.5 km/h, walking pace,
  /// which GPS loggers round to 0 as well), at most 16 s (half the roll-over of a 1/2048 s
  /// event time). `counterBits`: the width of the revolution counter, 8–32 (32 for BLE's uint32;
  /// ANT+ speed sensors count in 16 bits and power meters' wheel torque events in 8).
  public init?(circumference: Double, stoppedAfter: Double = 3, counterBits: Int = 32) {
    guard circumference >= 0.1, circumference <= 5, stoppedAfter > 0, stoppedAfter.isFinite,
      (8...32).contains(counterBits)
    else { return nil }
    self.circumference = circumference
    counter = RevolutionCounter(counterBits: counterBits, stoppedAfter: stoppedAfter)
  }

  /// Metres the wheel covered between the two events of the last reading, when it was a
  /// `.value`; 0 otherwise (a baseline, a rejected pair, or no new event). Revolutions across
  /// a baseline (after a stop longer than `stoppedAfter`, or a counter reset) are not counted:
  /// their time is unknown, and a reset counter's difference is no distance.
  public var lastDistance: Double { Double(counter.lastRevolutions) * circumference }

  /// The reading for the wheel data of one notification; values in m/s.
  public mutating func update(_ data: WheelRevolutionData, at now: Double) -> RevolutionReading {
    counter.update(
      revolutions: data.cumulativeRevolutions, eventTime: data.lastEventTime, unit: data.eventTimeUnit, at: now,
      scale: circumference, maximum: Self.maximumSpeed)
  }
}

/// Crank cadence from successive crank revolution data (CSC or Cycling Power, both 1/1024 s).
/// Pure: the caller passes the monotonic time each value arrived.
public struct CrankCadenceCalculator: Sendable, Hashable {
  /// Cadences above this (rpm) are rejected.
  public static let maximumCadence = 250.0
  private var counter: RevolutionCounter

  /// `stoppedAfter`: seconds without a new crank event before `.stopped` (coasting); 4 s by
  /// default, as a crank turns once in 4 s at 15 rpm, below anyone's pedalling. At most 32 s.
  /// `counterBits`: the width of the revolution counter, 8–32 (16 for BLE and ANT+ cadence
  /// sensors; 8 for an ANT+ power meter's crank torque event count).
  public init?(stoppedAfter: Double = 4, counterBits: Int = 16) {
    guard stoppedAfter > 0, stoppedAfter.isFinite, (8...32).contains(counterBits) else { return nil }
    counter = RevolutionCounter(counterBits: counterBits, stoppedAfter: stoppedAfter)
  }

  /// The reading for the crank data of one notification; values in rpm.
  public mutating func update(_ data: CrankRevolutionData, at now: Double) -> RevolutionReading {
    update(
      revolutions: UInt32(data.cumulativeRevolutions), eventTime: data.lastEventTime, unit: data.eventTimeUnit, at: now)
  }

  /// The reading for a crank counter and event time in `unit` (an ANT+ power meter's crank
  /// torque page counts its accumulated crank period in 1/2048 s); values in rpm.
  public mutating func update(
    revolutions: UInt32, eventTime: UInt16, unit: EventTimeUnit, at now: Double
  ) -> RevolutionReading {
    counter.update(
      revolutions: revolutions, eventTime: eventTime, unit: unit, at: now, scale: 60, maximum: Self.maximumCadence)
  }
}
