/// The Linux kernel's Bluetooth Management protocol (BlueZ `doc/mgmt-api.txt`), the part a
/// scan needs: commands to send on an HCI control-channel socket, and the events it reads.
/// Pure: bytes in, values out; the socket is BoardLinux's.
///
/// Every packet is a header of three little-endian 16-bit fields (command or event code,
/// controller index, parameter length) and the parameters.
public enum Management {
  /// The index for commands that are not about one controller.
  public static let noController: UInt16 = 0xFFFF

  /// LE public and LE random address types (bits 1 and 2 of Start Discovery's Address_Type).
  public static let lowEnergyAddressTypes: UInt8 = 0x06

  public enum Opcode: UInt16, Sendable {
    case readControllerIndexList = 0x0003
    case readControllerInformation = 0x0004
    case startDiscovery = 0x0023
    case stopDiscovery = 0x0024
  }

  /// A command packet.
  public static func command(_ opcode: Opcode, controller: UInt16, parameters: [UInt8] = []) -> [UInt8] {
    var packet = [UInt8]()
    packet.reserveCapacity(6 + parameters.count)
    for value in [opcode.rawValue, controller, UInt16(parameters.count)] {
      packet += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
    }
    return packet + parameters
  }

  /// A command's status (mgmt-api.txt, "Status codes").
  public struct Status: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = Status(rawValue: 0x00)
    public static let busy = Status(rawValue: 0x0A)
    public static let notSupported = Status(rawValue: 0x0C)
    public static let notPowered = Status(rawValue: 0x0F)
    public static let invalidIndex = Status(rawValue: 0x11)
    public static let rfKilled = Status(rawValue: 0x12)
    public static let permissionDenied = Status(rawValue: 0x14)

    public var description: String {
      let names: [UInt8: String] = [
        0x00: "success", 0x01: "unknown command", 0x02: "not connected", 0x03: "failed", 0x04: "connect failed",
        0x05: "authentication failed", 0x06: "not paired", 0x07: "no resources", 0x08: "timeout",
        0x09: "already connected", 0x0A: "busy", 0x0B: "rejected", 0x0C: "not supported",
        0x0D: "invalid parameters", 0x0E: "disconnected", 0x0F: "not powered", 0x10: "cancelled",
        0x11: "invalid index", 0x12: "blocked by rfkill", 0x13: "already paired", 0x14: "permission denied",
      ]
      return names[rawValue] ?? "status 0x\(String(rawValue, radix: 16))"
    }
  }

  /// A device heard while discovering (event 0x0012).
  public struct DeviceFound: Sendable, Hashable {
    public var address: BluetoothAddress
    /// false for a BR/EDR (classic) device.
    public var isLowEnergy: Bool
    /// dBm; 127 when the controller did not say.
    public var rssi: Int8
    public var advertising: AdvertisingData
  }

  /// One event read from the socket.
  public enum Event: Sendable, Hashable {
    /// Command Complete (0x0001): the command, its status and its return parameters.
    case commandComplete(opcode: UInt16, status: Status, parameters: [UInt8])
    /// Command Status (0x0002): the command failed, or will complete later.
    case commandStatus(opcode: UInt16, status: Status)
    case deviceFound(DeviceFound)
    /// Discovering (0x0013): discovery started or stopped, by anyone.
    case discovering(Bool)
    /// Any other event (index added, settings changed, ...).
    case other(code: UInt16)
  }

  /// What a packet is not.
  public enum DecodeError: Error, Sendable, Hashable, CustomStringConvertible {
    case shorterThanHeader(Int)
    /// The header says `expected` parameter bytes; the packet has `actual`.
    case lengthMismatch(expected: Int, actual: Int)
    /// An event's fixed parameters are shorter than its definition.
    case shortParameters(code: UInt16, count: Int)

    public var description: String {
      switch self {
      case .shorterThanHeader(let n): "a \(n)-byte management packet (a header is 6)"
      case .lengthMismatch(let e, let a): "a management packet whose header says \(e) parameter bytes but has \(a)"
      case .shortParameters(let code, let n):
        "management event 0x\(String(code, radix: 16)) with \(n) parameter bytes, too few"
      }
    }
  }

  /// Decodes one packet (a socket read returns exactly one); `controller` is its index.
  public static func decode(_ packet: some Collection<UInt8>) throws(DecodeError) -> (controller: UInt16, event: Event)
  {
    let p = Array(packet)
    guard p.count >= 6 else { throw .shorterThanHeader(p.count) }
    func u16(_ i: Int) -> UInt16 { UInt16(p[i]) | UInt16(p[i + 1]) << 8 }
    let code = u16(0)
    let controller = u16(2)
    let length = Int(u16(4))
    guard p.count - 6 == length else { throw .lengthMismatch(expected: length, actual: p.count - 6) }
    let parameters = Array(p[6...])
    func need(_ n: Int) throws(DecodeError) {
      if parameters.count < n { throw .shortParameters(code: code, count: parameters.count) }
    }
    switch code {
    case 0x0001:
      try need(3)
      return (
        controller,
        .commandComplete(
          opcode: UInt16(parameters[0]) | UInt16(parameters[1]) << 8, status: Status(rawValue: parameters[2]),
          parameters: Array(parameters[3...]))
      )
    case 0x0002:
      try need(3)
      return (
        controller,
        .commandStatus(
          opcode: UInt16(parameters[0]) | UInt16(parameters[1]) << 8, status: Status(rawValue: parameters[2]))
      )
    case 0x0012:
      // Address (6, little-endian), Address_Type (1), RSSI (1), Flags (4), EIR_Data_Length (2), EIR.
      try need(14)
      let eirLength = Int(parameters[12]) | Int(parameters[13]) << 8
      let eir = parameters[14...].prefix(eirLength)
      let type = parameters[6]
      let address = BluetoothAddress(bytes: parameters[0..<6].reversed(), kind: type == 2 ? .random : .public)!
      return (
        controller,
        .deviceFound(
          DeviceFound(
            address: address, isLowEnergy: type == 1 || type == 2, rssi: Int8(bitPattern: parameters[7]),
            advertising: AdvertisingData(eir)))
      )
    case 0x0013:
      try need(2)
      return (controller, .discovering(parameters[1] != 0))
    default:
      return (controller, .other(code: code))
    }
  }

  /// The controller indexes in a Read Controller Index List reply; nil if malformed.
  public static func controllerIndexes(_ parameters: [UInt8]) -> [UInt16]? {
    guard parameters.count >= 2 else { return nil }
    let count = Int(parameters[0]) | Int(parameters[1]) << 8
    guard parameters.count >= 2 + 2 * count else { return nil }
    return (0..<count).map { UInt16(parameters[2 + 2 * $0]) | UInt16(parameters[3 + 2 * $0]) << 8 }
  }

  /// What a Read Controller Information reply says that a scan needs; nil if malformed.
  public struct ControllerInformation: Sendable, Hashable {
    public var address: BluetoothAddress
    public var isPowered: Bool
    public var supportsLowEnergy: Bool
    public var name: String
  }

  public static func controllerInformation(_ parameters: [UInt8]) -> ControllerInformation? {
    // Address (6), Bluetooth_Version (1), Manufacturer (2), Supported_Settings (4),
    // Current_Settings (4), Class_Of_Device (3), Name (249), Short_Name (11).
    guard parameters.count >= 20 else { return nil }
    func u32(_ i: Int) -> UInt32 { (0..<4).reduce(UInt32(0)) { $0 | UInt32(parameters[i + $1]) << (8 * $1) } }
    let supported = u32(9)
    let current = u32(13)
    let nameBytes = parameters.dropFirst(20).prefix(249).prefix { $0 != 0 }
    return ControllerInformation(
      address: BluetoothAddress(bytes: parameters[0..<6].reversed(), kind: .public)!,
      isPowered: current & 1 != 0, supportsLowEnergy: supported & (1 << 9) != 0,
      name: String(decoding: nameBytes, as: UTF8.self))
  }
}
