/// The FIT protocol's binary layer (Garmin FIT Protocol 2.0, "Flexible and Interoperable Data
/// Transfer"): the file header, definition and data messages with normal record headers, the
/// base types and their invalid values, and the CRC. Pure: bytes in, bytes out; what a message
/// means is the global profile's (FITProfile.swift).

/// FIT's CRC-16 (polynomial 0x8005 reflected, initial 0: CRC-16/ARC), computed four bits at a
/// time with the protocol's table.
public struct FITCRC: Sendable, Hashable {
  private static let table: [UInt16] = [
    0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
    0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400,
  ]
  public private(set) var value: UInt16 = 0

  public init() {}

  public mutating func update(_ byte: UInt8) {
    var crc = value
    var tmp = Self.table[Int(crc & 0xF)]
    crc = (crc >> 4) & 0x0FFF
    crc = crc ^ tmp ^ Self.table[Int(byte & 0xF)]
    tmp = Self.table[Int(crc & 0xF)]
    crc = (crc >> 4) & 0x0FFF
    value = crc ^ tmp ^ Self.table[Int((byte >> 4) & 0xF)]
  }

  public mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
    for byte in bytes { update(byte) }
  }

  public static func of<Bytes: Sequence>(_ bytes: Bytes) -> UInt16 where Bytes.Element == UInt8 {
    var crc = FITCRC()
    crc.update(bytes)
    return crc.value
  }
}

/// A FIT base type: its number in definition messages, its size, and its invalid value.
public enum FITBaseType: UInt8, Sendable, Hashable {
  case enumeration = 0x00
  case sint8 = 0x01
  case uint8 = 0x02
  case sint16 = 0x83
  case uint16 = 0x84
  case sint32 = 0x85
  case uint32 = 0x86
  case string = 0x07
  case float32 = 0x88
  case uint8z = 0x0A
  case byte = 0x0D
  case uint16z = 0x8B
  case uint32z = 0x8C

  public var size: Int {
    switch self {
    case .enumeration, .sint8, .uint8, .uint8z, .string, .byte: 1
    case .sint16, .uint16, .uint16z: 2
    case .sint32, .uint32, .uint32z, .float32: 4
    }
  }

  /// The value that means "no value" (little endian, as this encoder writes).
  public var invalid: UInt64 {
    switch self {
    case .enumeration, .uint8, .byte: 0xFF
    case .sint8: 0x7F
    case .sint16: 0x7FFF
    case .uint16: 0xFFFF
    case .sint32: 0x7FFF_FFFF
    case .uint32, .float32: 0xFFFF_FFFF
    case .uint8z, .uint16z, .uint32z, .string: 0
    }
  }
}

/// One field of a message as defined: its number in the global profile, base type and size.
public struct FITFieldDefinition: Sendable, Hashable {
  public var number: UInt8
  public var type: FITBaseType
  /// Bytes; the base type's size, or a string's fixed length.
  public var size: Int

  public init(_ number: UInt8, _ type: FITBaseType, size: Int? = nil) {
    self.number = number
    self.type = type
    self.size = size ?? type.size
  }
}

/// A developer field in a message layout (FIT 2.0 "Developer Data"): its number among the
/// `field_description`s of developer `developerDataIndex`, and its size. The base type is the
/// description's; the layout keeps it to encode the values.
public struct FITDeveloperFieldDefinition: Sendable, Hashable {
  public var number: UInt8
  public var type: FITBaseType
  public var size: Int
  public var developerDataIndex: UInt8

  public init(_ number: UInt8, _ type: FITBaseType, developerDataIndex: UInt8 = 0) {
    self.number = number
    self.type = type
    self.size = type.size
    self.developerDataIndex = developerDataIndex
  }
}

/// A message layout: the global message number and its fields, in the order data messages
/// carry them; developer fields, if any, after them.
public struct FITMessageDefinition: Sendable, Hashable {
  public var global: UInt16
  public var fields: [FITFieldDefinition]
  public var developerFields: [FITDeveloperFieldDefinition] = []

  /// The field a data message carries at `index`: the developer fields follow the others.
  func dataField(_ index: Int) -> FITFieldDefinition {
    if index < fields.count { return fields[index] }
    let field = developerFields[index - fields.count]
    return FITFieldDefinition(field.number, field.type, size: field.size)
  }

  /// Bytes of one data message of this layout, its record header included.
  public var dataSize: Int {
    1 + fields.reduce(0) { $0 + $1.size } + developerFields.reduce(0) { $0 + $1.size }
  }
}

/// A field's value in a data message: an integer in the field's base type after scale and
/// offset (nil is the type's invalid value), or a string.
public enum FITValue: Sendable, Hashable {
  case integer(Int64?)
  /// An array field: as many elements as the field's size holds, the missing ones invalid.
  case integers([Int64?])
  case text(String)
  /// A float32 field's value; nil, not finite or beyond float32 is invalid.
  case real(Double?)

  /// A physical value scaled and offset as the profile says (value × scale − offset·scale:
  /// FIT stores (value + offset) × scale), rounded to the nearest; nil, not finite, or beyond
  /// any FIT integer (an absurd figure a receiver sent, on which `Int64(_:)` would trap) is
  /// invalid.
  public static func scaled(_ value: Double?, scale: Double = 1, offset: Double = 0) -> FITValue {
    guard let value else { return .integer(nil) }
    let stored = ((value + offset) * scale).rounded()
    guard stored.magnitude < 0x1p63 else { return .integer(nil) }
    return .integer(Int64(stored))
  }
}

/// Encodes messages into bytes, keeping the running data size; the caller supplies the bytes
/// to a file as they come (constant memory) and finishes with the header and CRC.
public struct FITMessageWriter: Sendable {
  /// Local message numbers in use and the definition each currently stands for.
  private var local: [UInt16: UInt8] = [:]
  private var definitions: [FITMessageDefinition] = []

  public init() {}

  /// The definition message for `definition` under local number `localNumber` (0–15).
  public static func definitionMessage(_ definition: FITMessageDefinition, local localNumber: UInt8) -> [UInt8] {
    // Normal header: bit 6 set (definition), bit 5 when developer fields follow, local
    // message type in bits 0–3.
    let developer: UInt8 = definition.developerFields.isEmpty ? 0 : 0x20
    var out: [UInt8] = [0x40 | developer | (localNumber & 0x0F), 0, 0]  // reserved, architecture 0: little endian
    out += [UInt8(definition.global & 0xFF), UInt8(definition.global >> 8), UInt8(definition.fields.count)]
    for field in definition.fields { out += [field.number, UInt8(field.size), field.type.rawValue] }
    if !definition.developerFields.isEmpty {
      // Developer field definitions: number, size, developer_data_index.
      out.append(UInt8(definition.developerFields.count))
      for field in definition.developerFields { out += [field.number, UInt8(field.size), field.developerDataIndex] }
    }
    return out
  }

  /// The data message of `values` (one per field, in order) under local number `localNumber`.
  /// An integer that does not fit its base type is written as invalid: a value the profile
  /// cannot express is no value, never a wrapped one.
  public static func dataMessage(
    _ definition: FITMessageDefinition, local localNumber: UInt8, _ values: [FITValue]
  ) -> [UInt8] {
    precondition(values.count == definition.fields.count + definition.developerFields.count, "one value per field")
    var out: [UInt8] = [localNumber & 0x0F]
    out.reserveCapacity(definition.dataSize)
    for (index, value) in values.enumerated() {
      let field = definition.dataField(index)
      switch value {
      case .text(let text):
        // Null-terminated UTF-8, cut to the field's length (on a character boundary).
        var bytes = Array(text.utf8.prefix(field.size - 1))
        while !bytes.isEmpty, String(validating: bytes, as: UTF8.self) == nil { bytes.removeLast() }
        out += bytes + [UInt8](repeating: 0, count: field.size - bytes.count)
      case .integer(let number):
        append(number, field.type, size: field.size, to: &out)
      case .real(let number):
        let single = number.flatMap { $0.isFinite && $0.magnitude <= Double(Float.greatestFiniteMagnitude) ? $0 : nil }
        let raw = single.map { UInt64(Float($0).bitPattern) } ?? FITBaseType.float32.invalid
        for index in 0..<4 { out.append(UInt8(truncatingIfNeeded: raw >> (8 * UInt64(index)))) }
      case .integers(let numbers):
        let size = field.type.size
        for element in 0..<field.size / size {
          append(element < numbers.count ? numbers[element] : nil, field.type, size: size, to: &out)
        }
      }
    }
    return out
  }

  private static func append(_ number: Int64?, _ type: FITBaseType, size: Int, to out: inout [UInt8]) {
    let raw = number.flatMap { fits($0, type) ? UInt64(bitPattern: $0) : nil } ?? type.invalid
    for index in 0..<size { out.append(UInt8(truncatingIfNeeded: raw >> (8 * UInt64(index)))) }
  }

  private static func fits(_ value: Int64, _ type: FITBaseType) -> Bool {
    let (low, high): (Int64, Int64) =
      switch type {
      case .enumeration, .uint8: (0, 0xFE)
      case .byte: (0, 0xFF)  // invalid only when every byte of the field is 0xFF
      case .uint8z: (1, 0xFF)
      case .sint8: (-0x7F, 0x7E)
      case .sint16: (-0x7FFF, 0x7FFE)
      case .uint16: (0, 0xFFFE)
      case .uint16z: (1, 0xFFFF)
      case .sint32: (-0x7FFF_FFFF, 0x7FFF_FFFE)
      case .uint32: (0, 0xFFFF_FFFE)
      case .uint32z: (1, 0xFFFF_FFFF)
      case .string, .float32: (0, 0)
      }
    return value >= low && value <= high
  }

  /// The bytes for one message: its definition first when this layout is not the one its local
  /// number stands for, then the data. Each global message keeps its own local number, in the
  /// order first seen (at most 16 layouts in a file, which an activity never reaches).
  public mutating func message(_ definition: FITMessageDefinition, _ values: [FITValue]) -> [UInt8] {
    var out: [UInt8] = []
    let number: UInt8
    if let known = local[definition.global] {
      number = known
      if definitions[Int(known)] != definition {
        definitions[Int(known)] = definition
        out += Self.definitionMessage(definition, local: number)
      }
    } else {
      precondition(definitions.count < 16, "at most 16 local message types")
      number = UInt8(definitions.count)
      local[definition.global] = number
      definitions.append(definition)
      out += Self.definitionMessage(definition, local: number)
    }
    out += Self.dataMessage(definition, local: number, values)
    return out
  }

  /// The 14-byte file header for `dataSize` bytes of records: header size, protocol 2.0, the
  /// profile version, ".FIT" and its CRC.
  public static func header(dataSize: UInt32) -> [UInt8] {
    // Profile 21.00 (major × 100 + minor): every message and field written here is in it
    // unchanged (read from the 21.218 SDK's profile).
    let profile: UInt16 = 2100
    var out: [UInt8] = [14, 0x20, UInt8(profile & 0xFF), UInt8(profile >> 8)]
    for index in 0..<4 { out.append(UInt8(truncatingIfNeeded: dataSize >> (8 * UInt32(index)))) }
    out += Array(".FIT".utf8)
    let crc = FITCRC.of(out)
    out += [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    return out
  }

  /// Seconds since the FIT epoch (1989-12-31T00:00:00Z) of a Unix time; nil (written as
  /// invalid) for one a uint32 of them cannot hold, which only a damaged record has.
  public static func timestamp(unix: Double) -> Int64? {
    let seconds = (unix - 631_065_600).rounded(.down)
    return seconds >= 0 && seconds < 0xFFFF_FFFF ? Int64(seconds) : nil
  }

  /// Degrees as FIT's semicircles (2^31 to 180°).
  public static func semicircles(_ degrees: Double?) -> Int64? {
    guard let degrees, abs(degrees) <= 180 else { return nil }
    return Int64((degrees * 2_147_483_648 / 180).rounded())
  }
}
