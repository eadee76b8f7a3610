/// How one channel's value is stored in an IIO buffer's record: the kernel's scan element
/// `type` file, `[be|le]:[s|u]bits/storagebits[Xrepeat][>>shift]` (Documentation/ABI/testing/
/// sysfs-bus-iio, "in_accel_x_type"): its byte order and signedness, the bits of data within
/// `storageBits` bits, `repeat` such values in a row, and the right shift applied before the
/// unused bits are masked off.
public struct IIOScanFormat: Sendable, Hashable {
  public var bigEndian: Bool
  public var signed: Bool
  public var bits: Int
  public var storageBits: Int
  public var repeatCount: Int
  public var shift: Int

  public init(bigEndian: Bool, signed: Bool, bits: Int, storageBits: Int, repeatCount: Int = 1, shift: Int = 0) {
    self.bigEndian = bigEndian
    self.signed = signed
    self.bits = bits
    self.storageBits = storageBits
    self.repeatCount = repeatCount
    self.shift = shift
  }

  /// Parses a `type` file's line, e.g. `le:s16/16>>0` or `be:u12/16X2>>4`.
  public init(parsing text: String) throws(IIOFormatError) {
    let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
    let parts = line.split(separator: ":", maxSplits: 1).map(String.init)
    guard parts.count == 2, parts[0] == "be" || parts[0] == "le" else { throw IIOFormatError(line, "no be: or le:") }
    var rest = Substring(parts[1])
    guard let sign = rest.first, sign == "s" || sign == "u" else { throw IIOFormatError(line, "no s or u") }
    rest = rest.dropFirst()
    var shift = 0
    if let range = rest.range(of: ">>") {
      guard let value = Int(rest[range.upperBound...]), (0..<64).contains(value) else {
        throw IIOFormatError(line, "a bad shift")
      }
      shift = value
      rest = rest[..<range.lowerBound]
    }
    var repeatCount = 1
    if let x = rest.firstIndex(of: "X") {
      guard let value = Int(rest[rest.index(after: x)...]), (1...64).contains(value) else {
        throw IIOFormatError(line, "a bad repeat")
      }
      repeatCount = value
      rest = rest[..<x]
    }
    let sizes = rest.split(separator: "/", omittingEmptySubsequences: false)
    guard sizes.count == 2, let bits = Int(sizes[0]), let storageBits = Int(sizes[1]),
      [8, 16, 32, 64].contains(storageBits), (1...storageBits).contains(bits), shift + bits <= storageBits
    else { throw IIOFormatError(line, "bad sizes") }
    self.init(
      bigEndian: parts[0] == "be", signed: sign == "s", bits: bits, storageBits: storageBits,
      repeatCount: repeatCount, shift: shift)
  }

  /// Bytes one value takes, and the record's alignment for it.
  public var storageBytes: Int { storageBits / 8 }

  /// The value stored at `offset` (its `index`th repeat): shifted, masked to `bits`, and sign
  /// extended when signed.
  public func value(in record: [UInt8], at offset: Int, index: Int = 0) -> Int64 {
    record.withUnsafeBytes { value(in: $0, at: offset, index: index) }
  }

  /// The value stored at `offset` of `bytes` (a record there, or records one after another:
  /// the offset is the record's start plus its channel's), read in place.
  public func value(in bytes: UnsafeRawBufferPointer, at offset: Int, index: Int = 0) -> Int64 {
    let start = offset + index * storageBytes
    var raw: UInt64 = 0
    for byte in 0..<storageBytes {
      let position = bigEndian ? byte : storageBytes - 1 - byte
      raw = raw << 8 | UInt64(bytes[start + position])
    }
    raw >>= UInt64(shift)
    let mask: UInt64 = bits == 64 ? .max : (1 << UInt64(bits)) - 1
    raw &= mask
    if signed, bits < 64, raw & (1 << UInt64(bits - 1)) != 0 { raw |= ~mask }
    return Int64(bitPattern: raw)
  }
}

/// A `type` file the format does not describe.
public struct IIOFormatError: Error, Sendable, Hashable, CustomStringConvertible {
  public var text: String
  public var problem: String

  init(_ text: String, _ problem: String) {
    self.text = text
    self.problem = problem
  }

  public var description: String { "IIO scan element type \"\(text)\": \(problem)" }
}

/// An enabled channel of a buffer: its name (`accel_x`, `timestamp`), its `index` file (the
/// order in the record) and its format.
public struct IIOScanChannel: Sendable, Hashable {
  public var name: String
  public var index: Int
  public var format: IIOScanFormat

  public init(name: String, index: Int, format: IIOScanFormat) {
    self.name = name
    self.index = index
    self.format = format
  }
}

/// Where each enabled channel stands in a buffer's record, as the kernel lays it out
/// (industrialio-buffer.c, iio_compute_scan_bytes): in `index` order, each element aligned to its
/// own length, the record padded to its largest element's.
public struct IIOScanLayout: Sendable, Hashable {
  /// A channel and its byte offset in the record.
  public struct Placed: Sendable, Hashable {
    public var channel: IIOScanChannel
    public var offset: Int
  }

  /// The channels, in record order.
  public let channels: [Placed]
  /// Bytes a record takes (what one `read` of the character device returns per scan).
  public let recordSize: Int

  public init(_ enabled: [IIOScanChannel]) {
    var offset = 0
    var largest = 1
    var placed: [Placed] = []
    for channel in enabled.sorted(by: { $0.index < $1.index }) {
      // An element (its storage bytes times its repeat) is aligned to its own length.
      let length = channel.format.storageBytes * channel.format.repeatCount
      offset = (offset + length - 1) / length * length
      placed.append(Placed(channel: channel, offset: offset))
      offset += length
      largest = max(largest, length)
    }
    channels = placed
    recordSize = (offset + largest - 1) / largest * largest
  }

  /// Channel `name` and where it stands, nil when it is not enabled: looked up once, for its
  /// values to be read record after record without the name.
  public func placed(_ name: String) -> Placed? {
    channels.first { $0.channel.name == name }
  }

  /// The raw value of channel `name` in `record` (its first repeat), nil when it is not enabled.
  public func value(_ name: String, in record: [UInt8]) -> Int64? {
    guard record.count >= recordSize, let placed = placed(name) else { return nil }
    return placed.channel.format.value(in: record, at: placed.offset)
  }
}
