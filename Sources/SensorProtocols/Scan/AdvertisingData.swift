/// The advertising data (and scan response) a peripheral broadcasts, as the kernel hands it on
/// in a Device Found event: a sequence of AD structures, each a length octet, an AD type and
/// `length - 1` octets of data (Core v5.4 Vol 3 Part C 11; the types and their formats are the
/// Core Specification Supplement, Part A). What a sensor list needs is read: the local name,
/// the service UUIDs (16-bit and 128-bit lists, complete or not), the appearance and the TX
/// power; everything else is skipped by its length.
///
/// Total: any bytes give a value. A zero length ends the significant part (padding, Vol 3
/// Part C 11); a length that runs past the end stops parsing there, with `truncated` set, and
/// keeps what came before.
public struct AdvertisingData: Sendable, Hashable {
  /// Complete Local Name (0x09), or else Shortened Local Name (0x08), as UTF-8 (invalid
  /// sequences replaced).
  public var name: String?
  /// Whether `name` is the shortened one.
  public var nameIsShortened = false
  /// Service UUIDs from the 16-, 32- and 128-bit lists (0x02–0x07) and from Service Data
  /// (0x16, 0x20, 0x21), in the order met, without repeats.
  public var services: [BluetoothUUID] = []
  /// Appearance (0x19): the GAP category and subcategory (0x0340 heart-rate sensor, 0x0484
  /// cycling power sensor, ...).
  public var appearance: UInt16?
  /// TX Power Level (0x0A), dBm.
  public var txPower: Int8?
  /// Flags (0x01): LE discoverable modes, BR/EDR support.
  public var flags: UInt8?
  /// An AD structure ran past the end of the data.
  public var truncated = false

  public init(_ bytes: some Collection<UInt8>) {
    let data = Array(bytes)
    var index = 0
    var shortName: String?
    while index < data.count {
      let length = Int(data[index])
      if length == 0 { break }
      guard index + 1 + length <= data.count else {
        truncated = true
        break
      }
      let type = data[index + 1]
      let field = Array(data[(index + 2)..<(index + 1 + length)])
      index += 1 + length
      switch type {
      case 0x01:
        if let first = field.first { flags = first }
      case 0x02, 0x03:
        addUUIDs(field, width: 2)
      case 0x04, 0x05:
        addUUIDs(field, width: 4)
      case 0x06, 0x07:
        addUUIDs(field, width: 16)
      case 0x08:
        shortName = String(decoding: field, as: UTF8.self)
      case 0x09:
        name = String(decoding: field, as: UTF8.self)
      case 0x0A:
        if let first = field.first { txPower = Int8(bitPattern: first) }
      case 0x16:
        addUUIDs(Array(field.prefix(2)), width: 2)
      case 0x20:
        addUUIDs(Array(field.prefix(4)), width: 4)
      case 0x21:
        addUUIDs(Array(field.prefix(16)), width: 16)
      case 0x19:
        if field.count >= 2 { appearance = UInt16(field[0]) | UInt16(field[1]) << 8 }
      default:
        break
      }
    }
    if name == nil, let shortName {
      name = shortName
      nameIsShortened = true
    }
  }

  /// Little-endian UUIDs of `width` octets; a 32-bit one stands for the Base UUID with those 32
  /// bits in front (Vol 3 Part B 2.5.1). A trailing partial UUID is ignored.
  private mutating func addUUIDs(_ field: [UInt8], width: Int) {
    var offset = 0
    while offset + width <= field.count {
      let slice = field[offset..<(offset + width)]
      offset += width
      let uuid: BluetoothUUID?
      switch width {
      case 4:
        let value = slice.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        uuid = BluetoothUUID(high: value << 32 | BluetoothUUID.baseHigh, low: BluetoothUUID.baseLow)
      default:
        uuid = BluetoothUUID(attBytes: slice)
      }
      if let uuid, !services.contains(uuid) { services.append(uuid) }
    }
  }
}

/// The sensors workoutd reads, as a scan tells them: by the services they advertise.
public enum SensorService: String, Sendable, Hashable, Codable, CaseIterable {
  case heartRate = "heart rate"
  case cyclingPower = "cycling power"
  case speedAndCadence = "speed/cadence"

  public var uuid: BluetoothUUID {
    switch self {
    case .heartRate: .heartRateService
    case .cyclingPower: .cyclingPowerService
    case .speedAndCadence: .cyclingSpeedAndCadenceService
    }
  }

  /// The services of these that `data` advertises, in this enum's order.
  public static func advertised(in data: AdvertisingData) -> [SensorService] {
    allCases.filter { data.services.contains($0.uuid) }
  }
}
