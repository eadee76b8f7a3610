/// The unit of a "last event time" field: the Cycling Power Measurement's wheel event time
/// counts 1/2048 s (CPS 1.1, "Wheel Revolution Data"); every other event time, 1/1024 s.
public enum EventTimeUnit: UInt16, Sendable, Hashable {
  case oneOver1024 = 1024
  case oneOver2048 = 2048

  public var ticksPerSecond: Double { Double(rawValue) }
}

/// Wheel revolution data: a uint32 cumulative count and the uint16 time of the last wheel
/// revolution event (CSC Measurement 0x2A5B in 1/1024 s, Cycling Power Measurement 0x2A63 in
/// 1/2048 s). Both roll over; the time does every 64 s (32 s at 1/2048 s).
public struct WheelRevolutionData: Sendable, Hashable {
  public var cumulativeRevolutions: UInt32
  public var lastEventTime: UInt16
  public var eventTimeUnit: EventTimeUnit

  public init(cumulativeRevolutions: UInt32, lastEventTime: UInt16, eventTimeUnit: EventTimeUnit) {
    self.cumulativeRevolutions = cumulativeRevolutions
    self.lastEventTime = lastEventTime
    self.eventTimeUnit = eventTimeUnit
  }

  /// The event time in seconds (modulo the roll-over period).
  public var lastEventTimeSeconds: Double { Double(lastEventTime) / eventTimeUnit.ticksPerSecond }

  /// Appends the field as a sensor sends it: the count, then the event time, little-endian.
  func append(to out: inout [UInt8]) {
    out.appendLE(cumulativeRevolutions)
    out.appendLE(lastEventTime)
  }
}

/// Crank revolution data: a uint16 cumulative count and the uint16 time of the last crank
/// revolution event in 1/1024 s (CSC and Cycling Power alike). Both roll over.
public struct CrankRevolutionData: Sendable, Hashable {
  public var cumulativeRevolutions: UInt16
  public var lastEventTime: UInt16

  public init(cumulativeRevolutions: UInt16, lastEventTime: UInt16) {
    self.cumulativeRevolutions = cumulativeRevolutions
    self.lastEventTime = lastEventTime
  }

  public var lastEventTimeSeconds: Double { Double(lastEventTime) / 1024 }

  /// Appends the field as a sensor sends it: the count, then the event time, little-endian.
  func append(to out: inout [UInt8]) {
    out.appendLE(cumulativeRevolutions)
    out.appendLE(lastEventTime)
  }
}
