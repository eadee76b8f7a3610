/// A CSC Measurement notification (0x2A5B; GSS "CSC Measurement", and Cycling Speed and Cadence
/// Service 1.0 "CSC Measurement"):
///
/// | field | size | present when |
/// |---|---|---|
/// | flags | uint8 | always: bit 0 wheel revolution data, bit 1 crank revolution data, bits 2–7 RFU |
/// | cumulative wheel revolutions | uint32 | bit 0 |
/// | last wheel event time | uint16, 1/1024 s | bit 0 |
/// | cumulative crank revolutions | uint16 | bit 1 |
/// | last crank event time | uint16, 1/1024 s | bit 1 |
public struct CSCMeasurement: Sendable, Hashable {
  public var wheel: WheelRevolutionData?
  public var crank: CrankRevolutionData?
  /// Flags bits 2–7 as received (RFU: they never shift a field).
  public var reservedFlags: UInt8

  public init(wheel: WheelRevolutionData? = nil, crank: CrankRevolutionData? = nil, reservedFlags: UInt8 = 0) {
    self.wheel = wheel.map {
      WheelRevolutionData(
        cumulativeRevolutions: $0.cumulativeRevolutions, lastEventTime: $0.lastEventTime, eventTimeUnit: .oneOver1024)
    }
    self.crank = crank
    self.reservedFlags = reservedFlags & 0xFC
  }

  /// Decodes a notification's value. Flags with neither bit set decode as a measurement with
  /// no data (the layout is unambiguous); extra bytes are `trailingBytes` unless a reserved
  /// flag bit is set.
  public init(payload: some Collection<UInt8>) throws(BLEDecodeError) {
    var r = GATTValueReader(.cscMeasurement, payload)
    let flags = try r.u8(.flags)
    wheel = try r.wheel(if: flags & 0x01 != 0, unit: .oneOver1024)
    crank = try r.crank(if: flags & 0x02 != 0)
    reservedFlags = flags & 0xFC
    try r.finish(reservedFlagsSet: reservedFlags != 0)
  }

  /// The value a sensor would send for this measurement.
  public var payload: [UInt8] {
    var out: [UInt8] = [reservedFlags | (wheel != nil ? 0x01 : 0) | (crank != nil ? 0x02 : 0)]
    wheel?.append(to: &out)
    crank?.append(to: &out)
    return out
  }
}
