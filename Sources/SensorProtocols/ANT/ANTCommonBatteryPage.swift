/// Common Data Page 82 (0x52), "Battery Status" (ANT+ Common Pages, section 6.9), which power
/// meters and other sensors interleave with their main pages:
///
/// | byte | field |
/// |---|---|
/// | 0 | 0x52 |
/// | 1 | reserved (0xFF) |
/// | 2 | battery identifier: bits 0–3 number of batteries, bits 4–7 this battery's; 0xFF not used |
/// | 3–5 | cumulative operating time, in 16 s or 2 s units (byte 7 bit 7) |
/// | 6 | fractional battery voltage, 1/256 V |
/// | 7 | descriptive bit field: bits 0–3 coarse voltage (0xF invalid), 4–6 status, 7 time resolution |
public struct ANTCommonBatteryPage: Sendable, Hashable {
  public static let pageNumber: UInt8 = 0x52

  /// How many batteries the sensor has, and which this page is about; nil when 0xFF.
  public var batteryCount: UInt8?
  public var batteryIdentifier: UInt8?
  /// Seconds of operation: the 24-bit count times 2 s (bit 7 of byte 7 set) or 16 s.
  public var operatingTimeSeconds: UInt32
  public var battery: ANTBatteryStatus

  /// Decodes a page whose byte 0 (bits 0–6, a toggle being allowed in paged profiles) is 0x52;
  /// another page number, or fewer than 8 bytes, throws.
  public init(payload: some Collection<UInt8>) throws(ANTDecodeError) {
    let p = try ANTPageBytes(payload)
    guard p.pageNumber == Self.pageNumber else { throw .notPage(Self.pageNumber, received: p.pageNumber) }
    batteryCount = p[2] == 0xFF ? nil : p[2] & 0x0F
    batteryIdentifier = p[2] == 0xFF ? nil : p[2] >> 4
    operatingTimeSeconds = p.u24(3) * (p[7] & 0x80 != 0 ? 2 : 16)
    battery = ANTBatteryStatus(fractionalVoltage: p[6], descriptive: p[7])
  }
}
