/// The unit of a "last event time" field: the Cycling Power Measurement's wheel event time
/// counts 1/2048 s (CPS 1.1, "Wheel Revolution Data"); every other event time, 1/1024 s.
public enum EventTimeUnit: UInt16, Sendable, Hashable {
  case oneOver1024 = 1024
  case oneOver2048 = 2048

  public var ticksPerSecond: Double { Double(rawValue) }
}

/// Revolution data: a cumulative revolution count and the uint16 time of the last revolution
/// event, as BLE's CSC Measurement (0x2A5B) and Cycling Power Measurement (0x2A63) send it. Both
/// fields roll over; the time does every 64 s (32 s at 1/2048 s). The wheel's count is a
/// uint32 and its time in 1/1024 s (CSC) or 1/2048 s (Cycling Power); the crank's count is a
/// uint16 and its time always in 1/1024 s.
public struct RevolutionData<Count: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable, Hashable {
  public var cumulativeRevolutions: Count
  public var lastEventTime: UInt16
  public var eventTimeUnit: EventTimeUnit

  public init(cumulativeRevolutions: Count, lastEventTime: UInt16, eventTimeUnit: EventTimeUnit) {
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

/// Wheel revolution data: a uint32 count, its event time in 1/1024 s or 1/2048 s.
public typealias WheelRevolutionData = RevolutionData<UInt32>

/// Crank revolution data: a uint16 count, its event time in 1/1024 s.
public typealias CrankRevolutionData = RevolutionData<UInt16>

extension RevolutionData where Count == UInt16 {
  /// Crank data, whose event time is in 1/1024 s in CSC and Cycling Power alike.
  public init(cumulativeRevolutions: UInt16, lastEventTime: UInt16) {
    self.init(cumulativeRevolutions: cumulativeRevolutions, lastEventTime: lastEventTime, eventTimeUnit: .oneOver1024)
  }
}

extension GATTValueReader {
  /// The wheel revolution data of a CSC or Cycling Power Measurement when its flag is set: a
  /// uint32 count, then the uint16 event time in `unit`.
  mutating func wheel(if present: Bool, unit: EventTimeUnit) throws(BLEDecodeError) -> WheelRevolutionData? {
    guard present else { return nil }
    let revolutions = try u32(.cumulativeWheelRevolutions)
    let time = try u16(.lastWheelEventTime)
    return WheelRevolutionData(cumulativeRevolutions: revolutions, lastEventTime: time, eventTimeUnit: unit)
  }

  /// The crank revolution data when its flag is set: a uint16 count, then the uint16 event time.
  mutating func crank(if present: Bool) throws(BLEDecodeError) -> CrankRevolutionData? {
    guard present else { return nil }
    let revolutions = try u16(.cumulativeCrankRevolutions)
    let time = try u16(.lastCrankEventTime)
    return CrankRevolutionData(cumulativeRevolutions: revolutions, lastEventTime: time)
  }
}
