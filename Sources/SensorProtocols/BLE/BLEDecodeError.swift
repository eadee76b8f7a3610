/// The GATT characteristics whose values the decoders read, by their assigned 16-bit UUIDs
/// (Bluetooth SIG Assigned Numbers, "GATT Characteristic"; layouts in the GATT Specification
/// Supplement, GSS).
public enum BLECharacteristic: UInt16, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  case batteryLevel = 0x2A19
  case heartRateMeasurement = 0x2A37
  case bodySensorLocation = 0x2A38
  case cscMeasurement = 0x2A5B
  case cscFeature = 0x2A5C
  case cyclingPowerMeasurement = 0x2A63
  case cyclingPowerFeature = 0x2A65

  public var description: String {
    let name =
      switch self {
      case .batteryLevel: "Battery Level"
      case .heartRateMeasurement: "Heart Rate Measurement"
      case .bodySensorLocation: "Body Sensor Location"
      case .cscMeasurement: "CSC Measurement"
      case .cscFeature: "CSC Feature"
      case .cyclingPowerMeasurement: "Cycling Power Measurement"
      case .cyclingPowerFeature: "Cycling Power Feature"
      }
    return name + " (" + hex16(rawValue) + ")"
  }
}

/// A field of a characteristic value, named as the GSS names it.
public enum BLEField: String, Sendable, Hashable {
  case flags
  case heartRate = "heart rate measurement value"
  case energyExpended = "energy expended"
  case rrInterval = "RR-interval"
  case instantaneousPower = "instantaneous power"
  case pedalPowerBalance = "pedal power balance"
  case accumulatedTorque = "accumulated torque"
  case cumulativeWheelRevolutions = "cumulative wheel revolutions"
  case lastWheelEventTime = "last wheel event time"
  case cumulativeCrankRevolutions = "cumulative crank revolutions"
  case lastCrankEventTime = "last crank event time"
  case extremeForceMagnitudes = "extreme force magnitudes"
  case extremeTorqueMagnitudes = "extreme torque magnitudes"
  case extremeAngles = "extreme angles"
  case topDeadSpotAngle = "top dead spot angle"
  case bottomDeadSpotAngle = "bottom dead spot angle"
  case accumulatedEnergy = "accumulated energy"
  case batteryLevel = "battery level"
  case bodySensorLocation = "body sensor location"
  case features = "feature bits"
}

/// Why a characteristic value could not be decoded. Decoders never trap: every way a payload
/// can be wrong is one of these, naming the characteristic and the field.
public enum BLEDecodeError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The value ends inside `field`: it needs `needed` bytes at `offset`, only `available` are left.
  case truncated(BLECharacteristic, BLEField, offset: Int, needed: Int, available: Int)
  /// `count` bytes follow the last field the flags announce. Accepted only when a flag bit the
  /// specification reserves (RFU) is set, as a newer revision may append a field there; with
  /// none set, extra bytes mean the flags do not describe the value, and nothing in it can be
  /// trusted.
  case trailingBytes(BLECharacteristic, offset: Int, count: Int)
  /// A field holds a value its definition excludes (a battery level above 100 %).
  case outOfRange(BLECharacteristic, BLEField, value: Int)
  /// A field holds a value its layout allows but no sensor on a rider measures (a heart rate of
  /// 60,000 bpm in the uint16 form): a faulty sensor, not a reading of the ride.
  case implausible(BLECharacteristic, BLEField, value: Int, maximum: Int, unit: String)

  public var description: String {
    switch self {
    case .truncated(let c, let field, let offset, let needed, let available):
      return "\(c): value ends in the \(field.rawValue) at byte \(offset) (needs \(needed), \(available) left)"
    case .trailingBytes(let c, let offset, let count):
      return "\(c): \(count) byte(s) after the last field at byte \(offset), and no reserved flag announces more"
    case .outOfRange(let c, let field, let value):
      return "\(c): \(field.rawValue) \(value) is out of range"
    case .implausible(let c, let field, let value, let maximum, let unit):
      return
        "\(c): \(field.rawValue) \(value) \(unit) is beyond what a rider's sensor measures (at most \(maximum) \(unit))"
    }
  }
}

func hex16(_ value: UInt16) -> String {
  let digits = String(value, radix: 16, uppercase: true)
  return "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}

/// Reads fields in order, little-endian as every multi-octet GATT field is (GSS, "Data Types"),
/// throwing a `BLEDecodeError` naming the field when the value is too short.
struct GATTValueReader {
  let characteristic: BLECharacteristic
  let bytes: [UInt8]
  private(set) var offset = 0

  init(_ characteristic: BLECharacteristic, _ bytes: some Collection<UInt8>) {
    self.characteristic = characteristic
    self.bytes = Array(bytes)
  }

  var remaining: Int { bytes.count - offset }

  private mutating func take(_ n: Int, _ field: BLEField) throws(BLEDecodeError) -> Int {
    guard remaining >= n else {
      throw .truncated(characteristic, field, offset: offset, needed: n, available: remaining)
    }
    defer { offset += n }
    return offset
  }

  mutating func u8(_ field: BLEField) throws(BLEDecodeError) -> UInt8 {
    bytes[try take(1, field)]
  }

  /// An unsigned field as wide as `T`, least significant byte first.
  mutating func littleEndian<T: FixedWidthInteger & UnsignedInteger>(
    _ field: BLEField
  ) throws(BLEDecodeError) -> T {
    let width = T.bitWidth / 8
    let i = try take(width, field)
    return (0..<width).reduce(0) { $0 | T(bytes[i + $1]) << (8 * $1) }
  }

  mutating func u16(_ field: BLEField) throws(BLEDecodeError) -> UInt16 {
    try littleEndian(field)
  }

  mutating func s16(_ field: BLEField) throws(BLEDecodeError) -> Int16 {
    Int16(bitPattern: try u16(field))
  }

  mutating func u24(_ field: BLEField) throws(BLEDecodeError) -> UInt32 {
    let i = try take(3, field)
    return UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16
  }

  mutating func u32(_ field: BLEField) throws(BLEDecodeError) -> UInt32 {
    try littleEndian(field)
  }

  /// The end of the value: extra bytes are an error unless `reservedFlagsSet` (see
  /// `BLEDecodeError.trailingBytes`).
  func finish(reservedFlagsSet: Bool) throws(BLEDecodeError) {
    if remaining > 0 && !reservedFlagsSet {
      throw .trailingBytes(characteristic, offset: offset, count: remaining)
    }
  }
}

/// Little-endian writers for the encoders (the payload a sensor would send).
extension Array where Element == UInt8 {
  /// Appends `value` as wide as its type, least significant byte first.
  mutating func appendLE<T: FixedWidthInteger>(_ value: T) {
    appendLE(value, byteCount: T.bitWidth / 8)
  }

  /// Appends the low three bytes of `value` (a uint24 field).
  mutating func appendLE24(_ value: UInt32) { appendLE(value, byteCount: 3) }

  private mutating func appendLE<T: FixedWidthInteger>(_ value: T, byteCount: Int) {
    for k in 0..<byteCount { append(UInt8(truncatingIfNeeded: value >> (8 * k))) }
  }
}
