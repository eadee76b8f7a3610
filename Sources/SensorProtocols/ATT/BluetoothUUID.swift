/// A Bluetooth UUID: 128 bits, and the 16-bit short form of the SIG's assigned numbers, which
/// stands for `0000xxxx-0000-1000-8000-00805F9B34FB` (the Bluetooth Base UUID; Core Spec Vol 3
/// Part B §2.5.1). ATT carries UUIDs as 2 or 16 bytes, little-endian (Vol 3 Part F §3.2.1).
public struct BluetoothUUID: Sendable, Hashable, CustomStringConvertible {
  /// The 128 bits as written, most significant first: `high` is 0000180D-0000-1000.
  public var high: UInt64
  public var low: UInt64

  static let baseHigh: UInt64 = 0x0000_0000_0000_1000
  static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB

  public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }

  /// The UUID an assigned 16-bit number stands for.
  public init(_ short: UInt16) {
    self.init(high: UInt64(short) << 32 | Self.baseHigh, low: Self.baseLow)
  }

  /// "180D", "0x180D", or "0000180D-0000-1000-8000-00805F9B34FB" (any case); nil otherwise.
  public init?(_ text: String) {
    var digits = Substring(text)
    if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
    if digits.count == 4 {
      guard let short = UInt16(digits, radix: 16) else { return nil }
      self.init(short)
      return
    }
    let groups = digits.split(separator: "-", omittingEmptySubsequences: false)
    guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return nil }
    let hex = groups.joined()
    guard hex.allSatisfy(\.isHexDigit), let high = UInt64(hex.prefix(16), radix: 16),
      let low = UInt64(hex.suffix(16), radix: 16)
    else { return nil }
    self.init(high: high, low: low)
  }

  /// The 16-bit form, when this UUID is one (Base UUID with 0000xxxx in front).
  public var uuid16: UInt16? {
    guard low == Self.baseLow, high & 0xFFFF_0000_FFFF_FFFF == Self.baseHigh else { return nil }
    return UInt16(truncatingIfNeeded: high >> 32)
  }

  /// The bytes ATT sends: 2 for a 16-bit UUID, else all 16, little-endian.
  public var attBytes: [UInt8] {
    if let short = uuid16 { return [UInt8(truncatingIfNeeded: short), UInt8(truncatingIfNeeded: short >> 8)] }
    return attBytes128
  }

  /// All 16 bytes, little-endian (the form a Find Information Response of format 0x02 uses).
  public var attBytes128: [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: low >> UInt64(8 * $0)) }
      + (0..<8).map { UInt8(truncatingIfNeeded: high >> UInt64(8 * $0)) }
  }

  /// From the 2 or 16 little-endian bytes of an ATT PDU; nil for any other length.
  public init?(attBytes bytes: some Collection<UInt8>) {
    let b = Array(bytes)
    switch b.count {
    case 2:
      self.init(UInt16(b[0]) | UInt16(b[1]) << 8)
    case 16:
      var low: UInt64 = 0
      var high: UInt64 = 0
      for i in 0..<8 {
        low |= UInt64(b[i]) << UInt64(8 * i)
        high |= UInt64(b[8 + i]) << UInt64(8 * i)
      }
      self.init(high: high, low: low)
    default:
      return nil
    }
  }

  public var description: String {
    if let short = uuid16 { return hex16(short) }
    func hex(_ value: UInt64, _ digits: Int) -> String {
      let text = String(value, radix: 16, uppercase: true)
      return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
    return hex(high >> 32, 8) + "-" + hex((high >> 16) & 0xFFFF, 4) + "-" + hex(high & 0xFFFF, 4) + "-"
      + hex(low >> 48, 4) + "-" + hex(low & 0xFFFF_FFFF_FFFF, 12)
  }
}

/// The assigned numbers a heart-rate, power and speed/cadence client needs (Bluetooth SIG
/// Assigned Numbers: GATT services, declarations, descriptors, characteristics).
extension BluetoothUUID {
  public static let genericAccess = BluetoothUUID(0x1800)
  public static let genericAttribute = BluetoothUUID(0x1801)
  public static let deviceInformation = BluetoothUUID(0x180A)
  public static let heartRateService = BluetoothUUID(0x180D)
  public static let batteryService = BluetoothUUID(0x180F)
  public static let cyclingSpeedAndCadenceService = BluetoothUUID(0x1816)
  public static let cyclingPowerService = BluetoothUUID(0x1818)

  public static let primaryService = BluetoothUUID(0x2800)
  public static let secondaryService = BluetoothUUID(0x2801)
  public static let include = BluetoothUUID(0x2802)
  public static let characteristic = BluetoothUUID(0x2803)

  public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)

  public static let batteryLevel = BluetoothUUID(0x2A19)
  public static let heartRateMeasurement = BluetoothUUID(0x2A37)
  public static let bodySensorLocation = BluetoothUUID(0x2A38)
  public static let cscMeasurement = BluetoothUUID(0x2A5B)
  public static let cscFeature = BluetoothUUID(0x2A5C)
  public static let sensorLocation = BluetoothUUID(0x2A5D)
  public static let cyclingPowerMeasurement = BluetoothUUID(0x2A63)
  public static let cyclingPowerFeature = BluetoothUUID(0x2A65)
}
