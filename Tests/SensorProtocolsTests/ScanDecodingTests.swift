import SensorProtocols
import Testing

/// Advertising data (Core v5.4 Vol 3 Part C 11, Supplement Part A) and the kernel's management
/// packets (BlueZ doc/mgmt-api.txt), as a sensor scan reads them.
@Suite("Sensor scan: advertising data and management packets")
struct ScanDecodingTests {
  /// A Polar H10's advertisement as its layout goes: flags, the Heart Rate service in a
  /// complete 16-bit list, the complete name, appearance 0x0340 (heart-rate sensor), TX power.
  static let strap: [UInt8] =
    [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18, 0x11, 0x09] + Array("Polar H10 A1B2C3".utf8)
    + [0x03, 0x19, 0x40, 0x03, 0x02, 0x0A, 0xF4]

  @Test("a strap's advertisement: name, services, appearance, TX power, flags")
  func strapAdvertisement() {
    let data = AdvertisingData(Self.strap)
    #expect(data.name == "Polar H10 A1B2C3")
    #expect(!data.nameIsShortened)
    #expect(data.services == [BluetoothUUID(0x180D)])
    #expect(data.appearance == 0x0340)
    #expect(data.txPower == -12)
    #expect(data.flags == 0x06)
    #expect(!data.truncated)
    #expect(SensorService.advertised(in: data) == [.heartRate])
  }

  @Test("16-, 32- and 128-bit UUID lists and service data all name services, without repeats")
  func uuidForms() {
    let powerIn128 = BluetoothUUID(0x1818).attBytes128
    let bytes: [UInt8] =
      [0x05, 0x02, 0x0D, 0x18, 0x0D, 0x18]  // incomplete 16-bit list, HR twice
      + [0x05, 0x05, 0x16, 0x18, 0x00, 0x00]  // complete 32-bit list: 0x00001816 (CSC)
      + [0x11, 0x07] + powerIn128  // complete 128-bit list: the base-UUID form of 0x1818
      + [0x04, 0x16, 0x0D, 0x18, 0x2A]  // service data for 0x180D: no repeat
    let data = AdvertisingData(bytes)
    #expect(data.services == [BluetoothUUID(0x180D), BluetoothUUID(0x1816), BluetoothUUID(0x1818)])
    #expect(SensorService.advertised(in: data) == [.heartRate, .cyclingPower, .speedAndCadence])
  }

  @Test("a shortened name is used only when there is no complete one")
  func names() {
    let short: [UInt8] = [0x05, 0x08] + Array("KICK".utf8)
    #expect(AdvertisingData(short).name == "KICK")
    #expect(AdvertisingData(short).nameIsShortened)
    let both = short + [0x08, 0x09] + Array("KICKR 1".utf8)
    #expect(AdvertisingData(both).name == "KICKR 1")
    #expect(!AdvertisingData(both).nameIsShortened)
  }

  @Test("a zero length ends the data; a length past the end keeps what came before")
  func terminationAndTruncation() {
    let padded = Self.strap + [0x00, 0x03, 0x03, 0x18, 0x18]
    #expect(AdvertisingData(padded) == AdvertisingData(Self.strap))
    let cut = Array(Self.strap.prefix(12))  // flags, the 16-bit list, then the name cut short
    let data = AdvertisingData(cut)
    #expect(data.truncated)
    #expect(data.flags == 0x06)
    #expect(data.services == [BluetoothUUID(0x180D)])
    #expect(data.name == nil)
  }

  @Test("every prefix and many corruptions of an advertisement read without a trap")
  func total() {
    for end in 0...Self.strap.count { _ = AdvertisingData(Self.strap.prefix(end)) }
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<2_000 {
      var bytes = Self.strap
      for _ in 0..<3 {
        bytes[Int.random(in: 0..<bytes.count, using: &generator)] = .random(in: 0...255, using: &generator)
      }
      _ = AdvertisingData(bytes)
      _ = try? Management.decode(bytes)
    }
  }

  @Test("commands: header little-endian, then the parameters")
  func commands() {
    #expect(
      Management.command(.startDiscovery, controller: 0, parameters: [Management.lowEnergyAddressTypes])
        == [0x23, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06])
    #expect(
      Management.command(.readControllerIndexList, controller: Management.noController) == [0x03, 0, 0xFF, 0xFF, 0, 0])
  }

  static func packet(_ code: UInt16, _ index: UInt16, _ parameters: [UInt8]) -> [UInt8] {
    [code, index, UInt16(parameters.count)].flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } + parameters
  }

  @Test("Device Found: the address as written, its type, RSSI, and the advertising data")
  func deviceFound() throws {
    let eir = Self.strap
    let parameters: [UInt8] =
      [0x56, 0x34, 0x12, 0x1A, 0x9E, 0xA0, 0x01, 0xC3, 0, 0, 0, 0, UInt8(eir.count), 0] + eir
    let (index, event) = try Management.decode(Self.packet(0x0012, 1, parameters))
    #expect(index == 1)
    guard case .deviceFound(let found) = event else {
      Issue.record("not a device: \(event)")
      return
    }
    #expect(found.address.description == "A0:9E:1A:12:34:56")
    #expect(found.address.kind == .public)
    #expect(found.isLowEnergy)
    #expect(found.rssi == -61)
    #expect(found.advertising.name == "Polar H10 A1B2C3")
    var random = parameters
    random[6] = 0x02
    guard case .deviceFound(let other) = try Management.decode(Self.packet(0x0012, 0, random)).event else {
      Issue.record("not a device")
      return
    }
    #expect(other.address.kind == .random)
    // An EIR length beyond the packet takes what is there.
    var long = parameters
    long[12] = 0xFF
    #expect(throws: Never.self) { try Management.decode(Self.packet(0x0012, 0, long)) }
  }

  @Test("replies and discovery events; malformed packets are typed errors")
  func repliesAndErrors() throws {
    let list = Self.packet(0x0001, 0xFFFF, [0x03, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00])
    guard case .commandComplete(let opcode, let status, let reply) = try Management.decode(list).event else {
      Issue.record("not a command complete")
      return
    }
    #expect(opcode == 0x0003)
    #expect(status == .success)
    #expect(Management.controllerIndexes(reply) == [0, 1])
    #expect(Management.controllerIndexes([0x03, 0x00, 0x00]) == nil)

    let busy = Self.packet(0x0002, 0, [0x23, 0x00, 0x0A])
    guard case .commandStatus(0x0023, let refused) = try Management.decode(busy).event else {
      Issue.record("not a command status")
      return
    }
    #expect(refused == .busy)
    #expect(refused.description == "busy")
    #expect(Management.Status(rawValue: 0x0F).description == "not powered")

    guard case .discovering(false) = try Management.decode(Self.packet(0x0013, 0, [0x06, 0x00])).event else {
      Issue.record("not a discovering event")
      return
    }
    #expect(throws: Management.DecodeError.shorterThanHeader(3)) { try Management.decode([1, 2, 3]) }
    #expect(throws: Management.DecodeError.lengthMismatch(expected: 4, actual: 2)) {
      try Management.decode([0x13, 0, 0, 0, 4, 0, 1, 2])
    }
    #expect(throws: Management.DecodeError.shortParameters(code: 0x12, count: 2)) {
      try Management.decode(Self.packet(0x0012, 0, [1, 2]))
    }
  }

  @Test("Read Controller Information: address, powered, LE, name")
  func controllerInformation() throws {
    var parameters: [UInt8] = [0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x09, 0x02, 0x00]
    parameters += [0xFF, 0x02, 0x00, 0x00]  // supported: LE (bit 9) and more
    parameters += [0x01, 0x02, 0x00, 0x00]  // current: powered, LE
    parameters +=
      [0, 0, 0] + Array("board".utf8) + [UInt8](repeating: 0, count: 244) + [UInt8](repeating: 0, count: 11)
    let info = try #require(Management.controllerInformation(parameters))
    #expect(info.address.description == "01:02:03:04:05:06")
    #expect(info.isPowered)
    #expect(info.supportsLowEnergy)
    #expect(info.name == "board")
    parameters[13] = 0
    #expect(Management.controllerInformation(parameters)?.isPowered == false)
    #expect(Management.controllerInformation([1, 2, 3]) == nil)
  }
}
