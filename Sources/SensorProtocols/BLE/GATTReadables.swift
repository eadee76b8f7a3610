/// Battery Level (0x2A19; Battery Service): uint8, percent, 0–100. Values above 100 are
/// rejected; so is any byte after the first (the value has one field).
public struct BatteryLevel: Sendable, Hashable {
  public var percent: UInt8

  public init(percent: UInt8) {
    self.percent = min(percent, 100)
  }

  public init(payload: some Collection<UInt8>) throws(BLEDecodeError) {
    var r = GATTValueReader(.batteryLevel, payload)
    let value = try r.u8(.batteryLevel)
    guard value <= 100 else { throw .outOfRange(.batteryLevel, .batteryLevel, value: Int(value)) }
    try r.finish(reservedFlagsSet: false)
    percent = value
  }

  public var payload: [UInt8] { [percent] }
}

/// Body Sensor Location (0x2A38; Heart Rate Service, "Body Sensor Location"): one uint8.
/// Values the specification reserves (7–255) are kept as `reserved` rather than rejected: the
/// location is informative and a newer sensor's value must not cost the connection.
public enum BodySensorLocation: Sendable, Hashable {
  case other
  case chest
  case wrist
  case finger
  case hand
  case earLobe
  case foot
  case reserved(UInt8)

  public init(rawValue: UInt8) {
    self =
      switch rawValue {
      case 0: .other
      case 1: .chest
      case 2: .wrist
      case 3: .finger
      case 4: .hand
      case 5: .earLobe
      case 6: .foot
      default: .reserved(rawValue)
      }
  }

  public var rawValue: UInt8 {
    switch self {
    case .other: 0
    case .chest: 1
    case .wrist: 2
    case .finger: 3
    case .hand: 4
    case .earLobe: 5
    case .foot: 6
    case .reserved(let value): value
    }
  }

  public init(payload: some Collection<UInt8>) throws(BLEDecodeError) {
    var r = GATTValueReader(.bodySensorLocation, payload)
    let value = try r.u8(.bodySensorLocation)
    try r.finish(reservedFlagsSet: false)
    self.init(rawValue: value)
  }

  public var payload: [UInt8] { [rawValue] }
}

/// A feature characteristic: one little-endian bit field exactly as wide as its raw value.
/// Bits the specification reserves are kept as sent; a byte more or less is an error.
public protocol GATTFeatureBits: OptionSet where RawValue: FixedWidthInteger & UnsignedInteger {
  /// The characteristic these bits are the value of.
  static var characteristic: BLECharacteristic { get }
}

extension GATTFeatureBits {
  public init(payload: some Collection<UInt8>) throws(BLEDecodeError) {
    var r = GATTValueReader(Self.characteristic, payload)
    self.init(rawValue: try r.littleEndian(.features))
    try r.finish(reservedFlagsSet: false)
  }

  public var payload: [UInt8] {
    var out: [UInt8] = []
    out.appendLE(rawValue)
    return out
  }
}

/// CSC Feature (0x2A5C; Cycling Speed and Cadence Service, "CSC Feature"): uint16 bits; bits
/// 3–15 are RFU and kept as sent. Exactly two bytes.
public struct CSCFeature: GATTFeatureBits, Sendable, Hashable {
  public static let characteristic = BLECharacteristic.cscFeature
  public var rawValue: UInt16
  public init(rawValue: UInt16) { self.rawValue = rawValue }

  public static let wheelRevolutionData = CSCFeature(rawValue: 1 << 0)
  public static let crankRevolutionData = CSCFeature(rawValue: 1 << 1)
  public static let multipleSensorLocations = CSCFeature(rawValue: 1 << 2)
}

/// Cycling Power Feature (0x2A65; Cycling Power Service, "Cycling Power Feature"): uint32
/// bits; bits 16–18 and 21–22 are small fields (see the computed properties), 23–31 RFU.
/// Exactly four bytes.
public struct CyclingPowerFeature: GATTFeatureBits, Sendable, Hashable {
  public static let characteristic = BLECharacteristic.cyclingPowerFeature
  public var rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }

  public static let pedalPowerBalance = CyclingPowerFeature(rawValue: 1 << 0)
  public static let accumulatedTorque = CyclingPowerFeature(rawValue: 1 << 1)
  public static let wheelRevolutionData = CyclingPowerFeature(rawValue: 1 << 2)
  public static let crankRevolutionData = CyclingPowerFeature(rawValue: 1 << 3)
  public static let extremeMagnitudes = CyclingPowerFeature(rawValue: 1 << 4)
  public static let extremeAngles = CyclingPowerFeature(rawValue: 1 << 5)
  public static let topAndBottomDeadSpotAngles = CyclingPowerFeature(rawValue: 1 << 6)
  public static let accumulatedEnergy = CyclingPowerFeature(rawValue: 1 << 7)
  public static let offsetCompensationIndicator = CyclingPowerFeature(rawValue: 1 << 8)
  public static let offsetCompensation = CyclingPowerFeature(rawValue: 1 << 9)
  public static let measurementContentMasking = CyclingPowerFeature(rawValue: 1 << 10)
  public static let multipleSensorLocations = CyclingPowerFeature(rawValue: 1 << 11)
  public static let crankLengthAdjustment = CyclingPowerFeature(rawValue: 1 << 12)
  public static let chainLengthAdjustment = CyclingPowerFeature(rawValue: 1 << 13)
  public static let chainWeightAdjustment = CyclingPowerFeature(rawValue: 1 << 14)
  public static let spanLengthAdjustment = CyclingPowerFeature(rawValue: 1 << 15)
  public static let factoryCalibrationDate = CyclingPowerFeature(rawValue: 1 << 19)
  public static let enhancedOffsetCompensation = CyclingPowerFeature(rawValue: 1 << 20)

  /// Bit 16, sensor measurement context: what the extreme magnitudes measure.
  public enum MeasurementContext: Sendable, Hashable {
    case forceBased
    case torqueBased
  }

  /// Bits 21–22, distribute system support.
  public enum DistributedSystemSupport: UInt8, Sendable, Hashable {
    /// 0: not specified (a sensor older than CPS 1.1).
    case unspecified = 0
    case notForUseInDistributedSystem = 1
    case forUseInDistributedSystem = 2
    case reserved = 3
  }

  public var measurementContext: MeasurementContext { rawValue & (1 << 16) != 0 ? .torqueBased : .forceBased }

  /// Bits 17–18, instantaneous measurement direction supported (0 unknown, 1 tangential,
  /// 2 tangential and radial, 3 tangential, radial and lateral).
  public var instantaneousMeasurementDirection: UInt8 { UInt8((rawValue >> 17) & 0x3) }

  public var distributedSystemSupport: DistributedSystemSupport {
    DistributedSystemSupport(rawValue: UInt8((rawValue >> 21) & 0x3))!
  }
}
