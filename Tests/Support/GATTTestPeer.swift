import SensorProtocols

/// A scripted BLE sensor for tests: a small ATT server over an attribute table built the way a
/// GATT server lays one out (Core v5.4, Vol 3, Part G, 3: service declaration, then for each
/// characteristic its declaration, its value and its descriptors). It answers the requests a
/// GATT client makes; faults are switched on per test.
public struct GATTTestPeer: Sendable {
  public struct Characteristic: Sendable {
    public var uuid: BluetoothUUID
    public var properties: CharacteristicProperties
    public var value: [UInt8]
    /// Whether it has a Client Characteristic Configuration descriptor (it should when it can
    /// notify or indicate).
    public var hasCCCD: Bool
    /// Other descriptors between the value and the CCCD (e.g. a User Description 0x2901).
    public var extraDescriptors: [BluetoothUUID]
    /// The ATT error a read or a CCCD write gets, if any (e.g. Insufficient Authentication).
    public var readError: ATTErrorCode?
    public var writeError: ATTErrorCode?

    public init(
      _ uuid: BluetoothUUID, _ properties: CharacteristicProperties, value: [UInt8] = [],
      hasCCCD: Bool? = nil, extraDescriptors: [BluetoothUUID] = [], readError: ATTErrorCode? = nil,
      writeError: ATTErrorCode? = nil
    ) {
      self.uuid = uuid
      self.properties = properties
      self.value = value
      self.hasCCCD = hasCCCD ?? !properties.isDisjoint(with: [.notify, .indicate])
      self.extraDescriptors = extraDescriptors
      self.readError = readError
      self.writeError = writeError
    }
  }

  public struct Service: Sendable {
    public var uuid: BluetoothUUID
    public var characteristics: [Characteristic]
    public init(_ uuid: BluetoothUUID, _ characteristics: [Characteristic]) {
      self.uuid = uuid
      self.characteristics = characteristics
    }
  }

  private enum Attribute: Sendable {
    case service(BluetoothUUID, end: UInt16)
    case declaration(GATTCharacteristicDeclaration)
    case value(service: Int, characteristic: Int)
    case descriptor(BluetoothUUID)
    case cccd(valueHandle: UInt16)
  }

  private var attributes: [UInt16: Attribute] = [:]
  private var services: [Service]
  /// Handle of each characteristic's value, by service and characteristic index.
  public private(set) var valueHandles: [[UInt16]] = []
  /// The CCCD values written, by value handle.
  public private(set) var configured: [UInt16: UInt16] = [:]
  /// The ATT_MTU this peer would use after an exchange.
  public var serverRxMTU: UInt16 = 185
  /// Whether it answers Exchange MTU with "Request Not Supported" (some old straps do).
  public var refusesMTUExchange = false
  public private(set) var mtu = ATTMTU.minimum
  /// Requests it received, by opcode, in order.
  public private(set) var requests: [ATTOpcode] = []

  /// Lays the services out from handle `first` on, with `gap` unused handles between services.
  public init(_ services: [Service], first: UInt16 = 1, gap: UInt16 = 0) {
    self.services = services
    var handle = first
    for (s, service) in services.enumerated() {
      let start = handle
      handle += 1
      var handles: [UInt16] = []
      for (c, characteristic) in service.characteristics.enumerated() {
        let declarationHandle = handle
        let valueHandle = handle + 1
        attributes[declarationHandle] = .declaration(
          GATTCharacteristicDeclaration(
            handle: declarationHandle, properties: characteristic.properties, valueHandle: valueHandle,
            uuid: characteristic.uuid))
        attributes[valueHandle] = .value(service: s, characteristic: c)
        handles.append(valueHandle)
        handle += 2
        for descriptor in characteristic.extraDescriptors {
          attributes[handle] = .descriptor(descriptor)
          handle += 1
        }
        if characteristic.hasCCCD {
          attributes[handle] = .cccd(valueHandle: valueHandle)
          handle += 1
        }
      }
      attributes[start] = .service(service.uuid, end: handle - 1)
      valueHandles.append(handles)
      handle += gap
    }
  }

  /// The heart-rate strap most riders have: heart rate (notify), body sensor location, battery.
  public static func heartRateStrap() -> GATTTestPeer {
    GATTTestPeer([
      Service(.genericAccess, [Characteristic(BluetoothUUID(0x2A00), [.read], value: Array("H10".utf8))]),
      Service(
        .heartRateService,
        [
          Characteristic(.heartRateMeasurement, [.notify]),
          Characteristic(.bodySensorLocation, [.read], value: [0x01]),
        ]),
      Service(.batteryService, [Characteristic(.batteryLevel, [.read, .notify], value: [87])]),
    ])
  }

  public func valueHandle(_ uuid: BluetoothUUID) -> UInt16? {
    for (s, service) in services.enumerated() {
      if let c = service.characteristics.firstIndex(where: { $0.uuid == uuid }) { return valueHandles[s][c] }
    }
    return nil
  }

  /// A notification of `value` for the characteristic `uuid`.
  public func notification(_ uuid: BluetoothUUID, _ value: [UInt8]) -> [UInt8] {
    ATTPDU.handleValueNotification(handle: valueHandle(uuid)!, value: value).encode()
  }

  /// Answers one PDU from the client: the response, or nil for PDUs that get none.
  public mutating func answer(_ bytes: [UInt8]) -> [UInt8]? {
    guard let raw = bytes.first else { return nil }
    let pdu: ATTPDU
    do { pdu = try ATTPDU.decode(bytes, mtu: Int(serverRxMTU)) } catch {
      guard ATTOpcode.needsAnswer(raw) else { return nil }
      return ATTPDU.errorResponse(request: raw, handle: 0, error: .invalidPDU).encode()
    }
    requests.append(pdu.opcode)
    func error(_ code: ATTErrorCode, _ handle: UInt16) -> [UInt8] {
      ATTPDU.errorResponse(request: raw, handle: handle, error: code).encode()
    }
    let handles = attributes.keys.sorted()
    switch pdu {
    case .exchangeMTURequest(let client):
      if refusesMTUExchange { return error(.requestNotSupported, 0) }
      mtu = ATTMTU.negotiated(client: client, server: serverRxMTU)
      return ATTPDU.exchangeMTUResponse(serverRxMTU: serverRxMTU).encode()

    case .readByGroupTypeRequest(let range, let type):
      guard type == .primaryService else { return error(.unsupportedGroupType, range.start) }
      var found: [ATTGroupValue] = []
      for h in handles where h >= range.start && h <= range.end {
        guard case .service(let uuid, let end) = attributes[h]! else { continue }
        let entry = ATTGroupValue(handle: h, endGroupHandle: end, value: uuid.attBytes)
        // One response lists entries of one length only, as many as fit the MTU.
        if let first = found.first, first.value.count != entry.value.count { break }
        if 2 + (found.count + 1) * (4 + entry.value.count) > mtu { break }
        found.append(entry)
      }
      return found.isEmpty ? error(.attributeNotFound, range.start) : ATTPDU.readByGroupTypeResponse(found).encode()

    case .readByTypeRequest(let range, let type):
      var found: [ATTHandleValue] = []
      for h in handles where h >= range.start && h <= range.end {
        let value: [UInt8]
        switch attributes[h]! {
        case .declaration(let d) where type == .characteristic: value = d.value
        case .cccd(let v) where type == .clientCharacteristicConfiguration:
          value = ClientCharacteristicConfiguration(rawValue: configured[v] ?? 0).value
        default: continue
        }
        let entry = ATTHandleValue(handle: h, value: value)
        if let first = found.first, first.value.count != entry.value.count { break }
        if 2 + (found.count + 1) * (2 + entry.value.count) > mtu { break }
        found.append(entry)
      }
      return found.isEmpty ? error(.attributeNotFound, range.start) : ATTPDU.readByTypeResponse(found).encode()

    case .findInformationRequest(let range):
      var found: [ATTHandleUUID] = []
      for h in handles where h >= range.start && h <= range.end {
        let uuid: BluetoothUUID
        switch attributes[h]! {
        case .service: uuid = .primaryService
        case .declaration: uuid = .characteristic
        case .value(let s, let c): uuid = services[s].characteristics[c].uuid
        case .descriptor(let d): uuid = d
        case .cccd: uuid = .clientCharacteristicConfiguration
        }
        if let first = found.first, (first.uuid.uuid16 == nil) != (uuid.uuid16 == nil) { break }
        if 2 + (found.count + 1) * (2 + uuid.attBytes.count) > mtu { break }
        found.append(ATTHandleUUID(handle: h, uuid: uuid))
      }
      return found.isEmpty ? error(.attributeNotFound, range.start) : ATTPDU.findInformationResponse(found).encode()

    case .readRequest(let h):
      switch attributes[h] {
      case .value(let s, let c):
        let characteristic = services[s].characteristics[c]
        if let e = characteristic.readError { return error(e, h) }
        guard characteristic.properties.contains(.read) else { return error(.readNotPermitted, h) }
        return ATTPDU.readResponse(value: Array(characteristic.value.prefix(mtu - 1))).encode()
      case .cccd(let v):
        return ATTPDU.readResponse(value: ClientCharacteristicConfiguration(rawValue: configured[v] ?? 0).value)
          .encode()
      case nil: return error(.invalidHandle, h)
      default: return error(.readNotPermitted, h)
      }

    case .writeRequest(let h, let value):
      guard case .cccd(let v) = attributes[h] else {
        return error(attributes[h] == nil ? .invalidHandle : .writeNotPermitted, h)
      }
      if case .value(let s, let c) = attributes[v]!, let e = services[s].characteristics[c].writeError {
        return error(e, h)
      }
      guard value.count == 2 else { return error(.invalidAttributeValueLength, h) }
      configured[v] = UInt16(value[0]) | UInt16(value[1]) << 8
      return ATTPDU.writeResponse.encode()

    case .handleValueConfirmation, .writeCommand:
      return nil

    default:
      return ATTOpcode.needsAnswer(raw) ? error(.requestNotSupported, 0) : nil
    }
  }
}
