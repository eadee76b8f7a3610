/// Characteristic properties, the first byte of a characteristic declaration (Core Spec Vol 3
/// Part G §3.3.1.1).
public struct CharacteristicProperties: OptionSet, Sendable, Hashable {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let broadcast = CharacteristicProperties(rawValue: 0x01)
  public static let read = CharacteristicProperties(rawValue: 0x02)
  public static let writeWithoutResponse = CharacteristicProperties(rawValue: 0x04)
  public static let write = CharacteristicProperties(rawValue: 0x08)
  public static let notify = CharacteristicProperties(rawValue: 0x10)
  public static let indicate = CharacteristicProperties(rawValue: 0x20)
  public static let authenticatedSignedWrites = CharacteristicProperties(rawValue: 0x40)
  public static let extendedProperties = CharacteristicProperties(rawValue: 0x80)
}

/// A primary service found by Read By Group Type of 0x2800 (Vol 3 Part G §4.4.1): its handle
/// range and UUID.
public struct GATTService: Sendable, Hashable {
  public var handles: ATTHandleRange
  public var uuid: BluetoothUUID

  public init(handles: ATTHandleRange, uuid: BluetoothUUID) {
    self.handles = handles
    self.uuid = uuid
  }

  /// From one entry of a Read By Group Type Response: the value is the service UUID, 2 or 16
  /// bytes.
  public init(_ group: ATTGroupValue) throws(ATTCodecError) {
    guard let handles = ATTHandleRange(start: group.handle, end: group.endGroupHandle) else {
      throw .invalidHandleRange(.readByGroupTypeResponse, start: group.handle, end: group.endGroupHandle)
    }
    guard let uuid = BluetoothUUID(attBytes: group.value) else {
      throw .invalidAttributeValue("a service UUID of \(group.value.count) bytes")
    }
    self.init(handles: handles, uuid: uuid)
  }
}

/// A characteristic declaration found by Read By Type of 0x2803 (Vol 3 Part G §3.3.1): the
/// declaration's handle, properties, the value's handle and the characteristic UUID.
public struct GATTCharacteristicDeclaration: Sendable, Hashable {
  public var handle: UInt16
  public var properties: CharacteristicProperties
  public var valueHandle: UInt16
  public var uuid: BluetoothUUID

  public init(handle: UInt16, properties: CharacteristicProperties, valueHandle: UInt16, uuid: BluetoothUUID) {
    self.handle = handle
    self.properties = properties
    self.valueHandle = valueHandle
    self.uuid = uuid
  }

  /// From one entry of a Read By Type Response: properties (1), value handle (2), UUID (2 or
  /// 16). The value handle must be a real handle after the declaration's own.
  public init(_ entry: ATTHandleValue) throws(ATTCodecError) {
    let v = entry.value
    guard v.count == 5 || v.count == 19, let uuid = BluetoothUUID(attBytes: v[3...]) else {
      throw .invalidAttributeValue("a characteristic declaration of \(v.count) bytes")
    }
    let valueHandle = UInt16(v[1]) | UInt16(v[2]) << 8
    guard valueHandle > entry.handle else {
      throw .invalidAttributeValue(
        "characteristic value handle \(hex16(valueHandle)) not after its declaration at \(hex16(entry.handle))")
    }
    self.init(
      handle: entry.handle, properties: CharacteristicProperties(rawValue: v[0]), valueHandle: valueHandle, uuid: uuid)
  }

  /// The declaration's attribute value (the inverse of `init(_:)`).
  public var value: [UInt8] {
    var out: [UInt8] = [properties.rawValue]
    out.appendLE(valueHandle)
    return out + uuid.attBytes
  }
}

/// The Client Characteristic Configuration descriptor's value (0x2902; Vol 3 Part G §3.3.3.3):
/// bit 0 notifications, bit 1 indications, uint16 little-endian.
public struct ClientCharacteristicConfiguration: OptionSet, Sendable, Hashable {
  public var rawValue: UInt16
  public init(rawValue: UInt16) { self.rawValue = rawValue }

  public static let notifications = ClientCharacteristicConfiguration(rawValue: 0x0001)
  public static let indications = ClientCharacteristicConfiguration(rawValue: 0x0002)

  /// The two bytes to write.
  public var value: [UInt8] {
    var out: [UInt8] = []
    out.appendLE(rawValue)
    return out
  }
}
