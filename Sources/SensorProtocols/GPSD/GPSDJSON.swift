import WorkoutCore

/// gpsd's JSON reports ("{"class":"TPV",...}" lines, gpsd_json(5)), decoded without I/O: the
/// same split as libgps's `gps_unpack`, which parses a line apart from reading it.
///
/// BoardLinux's gpsd client reads the socket and decodes each line here; the values are those
/// libgps would give (checked against libgps's own `gps_unpack`, line by line over gpsd's
/// regression captures, by BoardLinuxTests), and the same decoder reads recorded streams (gpsd's
/// `.chk` files, `gpspipe -w` captures) for tests and replays.
///
/// The decoder is total: any byte sequence gives a value or nil, never a trap. Objects nested
/// deeper than 32 levels, or lines longer than `maximumLineLength`, are refused.
public enum GPSDJSON {
  /// gpsd's TCP port, as IANA assigned it.
  public static let defaultPort = 2947

  /// Longest line accepted (gpsd's own limit, `GPS_JSON_RESPONSE_MAX`, is 4096 bytes; SKY
  /// reports with many satellites come close).
  public static let maximumLineLength = 16_384

  /// One JSON value as far as gpsd reports need: nested arrays and objects are skipped.
  public enum Value: Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    /// An array or object, not decoded.
    case composite
  }

  /// The top-level members of a JSON object line, in order; nil if the line is not one
  /// well-formed JSON object (surrounding whitespace and a trailing CR/LF are fine).
  public static func members(of line: some StringProtocol) -> [(key: String, value: Value)]? {
    let bytes = Array(line.utf8)
    return bytes.withUnsafeBufferPointer { members(of: $0) }
  }

  /// As `members(of:)`, over raw bytes.
  public static func members(of bytes: UnsafeBufferPointer<UInt8>) -> [(key: String, value: Value)]? {
    var result: [(key: String, value: Value)] = []
    result.reserveCapacity(24)  // a TPV has about 20 members: one allocation
    let wellFormed = forEachMember(of: bytes) { key, value in
      result.append((key.string(in: bytes), value.value(in: bytes)))
    }
    return wellFormed ? result : nil
  }

  /// Hands each top-level member of a JSON object line to `body`, in order, without making a
  /// String or an array (strings are where their bytes are); false if the line is not one
  /// well-formed JSON object, and then what `body` was given must be thrown away. The grammar
  /// of `members(of:)`, which is built on it.
  static func forEachMember(of bytes: UnsafeBufferPointer<UInt8>, _ body: (Token, Token) -> Void) -> Bool {
    guard bytes.count <= maximumLineLength else { return false }
    var scanner = Scanner(bytes: bytes)
    scanner.skipSpace()
    guard scanner.object(body) else { return false }
    scanner.skipSpace()
    return scanner.atEnd
  }

  /// A value as the scanner found it: a string as the range of its bytes (or decoded, when it
  /// holds escapes), a number already read.
  enum Token {
    /// The bytes between the quotes, which hold no escape.
    case string(Range<Int>)
    /// A string with escapes, decoded.
    case escapedString(String)
    case number(Double)
    case bool(Bool)
    case null
    /// An array or object, checked and skipped.
    case composite

    func value(in bytes: UnsafeBufferPointer<UInt8>) -> Value {
      switch self {
      case .string, .escapedString: .string(string(in: bytes))
      case .number(let n): .number(n)
      case .bool(let b): .bool(b)
      case .null: .null
      case .composite: .composite
      }
    }

    /// A string token's text ("" for any other token).
    func string(in bytes: UnsafeBufferPointer<UInt8>) -> String {
      switch self {
      case .string(let range): String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
      case .escapedString(let text): text
      default: ""
      }
    }

    /// Whether this is a string token whose text is `text`'s bytes, compared without making a
    /// String.
    func isString(_ text: StaticString, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
      switch self {
      case .string(let range):
        return text.withUTF8Buffer { equal(UnsafeBufferPointer(rebasing: bytes[range]), $0) }
      case .escapedString(let decoded):
        var decoded = decoded
        return decoded.withUTF8 { d in text.withUTF8Buffer { equal(d, $0) } }
      default:
        return false
      }
    }
  }

  static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    for i in 0..<a.count where a[i] != b[i] { return false }
    return true
  }

  /// The `class` of a report line ("TPV", "SKY", "DEVICE", ...), or nil if it is not a JSON
  /// object with a string `class`.
  public static func reportClass(of line: some StringProtocol) -> String? {
    guard let members = members(of: line) else { return nil }
    for member in members where member.key == "class" {
      if case .string(let name) = member.value { return name }
    }
    return nil
  }

  /// Decodes a TPV line the way libgps does (`json_tpv_read` then the `set` computation of
  /// `libgps_json_unpack`): absent reals are NaN, an absent time is nil, an absent mode is 0,
  /// and `fields` is derived from which values are finite. nil for anything but a TPV object.
  public static func tpv(from line: some StringProtocol) -> TPVSnapshot? {
    let bytes = Array(line.utf8)
    return bytes.withUnsafeBufferPointer { tpv(from: $0) }
  }

  /// As `tpv(from:)`, over raw bytes (the line as read from gpsd's socket). Each member's key
  /// is matched on its bytes and numbers are read in place: a TPV a second or more is the
  /// service's steadiest work, and making a String of every key and number was most of it.
  public static func tpv(from bytes: UnsafeBufferPointer<UInt8>) -> TPVSnapshot? {
    var isTPV = false
    var snapshot = TPVSnapshot()
    // Read only for the altitude bit, as libgps counts them: the deprecated "alt" and a
    // marine receiver's "depth".
    var otherAltitude = false
    let wellFormed = forEachMember(of: bytes) { key, value in
      guard let member = TPVMember(key, in: bytes) else { return }
      if member == .class {
        switch value {
        case .string, .escapedString: isTPV = value.isString("TPV", in: bytes)
        default: break
        }
        return
      }
      if member == .time {
        switch value {
        case .string(let range): snapshot.time = parseTime(UnsafeBufferPointer(rebasing: bytes[range]))
        case .escapedString(let text): snapshot.time = parseTime(text)
        default: break
        }
        return
      }
      guard case .number(let n) = value else { return }
      switch member {
      case .mode: snapshot.mode = integer(n) ?? 0
      case .status: snapshot.status = integer(n) ?? 0
      case .leapseconds: snapshot.leapSeconds = integer(n) ?? 0
      case .ept: snapshot.timeError = n
      case .lat: snapshot.latitude = n
      case .lon: snapshot.longitude = n
      case .altHAE: snapshot.altitudeHAE = n
      case .altMSL: snapshot.altitudeMSL = n
      case .geoidSep: snapshot.geoidSeparation = n
      case .eph: snapshot.eph = n
      case .epx: snapshot.epx = n
      case .epy: snapshot.epy = n
      case .epv: snapshot.epv = n
      case .track: snapshot.track = n
      case .speed: snapshot.speed = n
      case .eps: snapshot.eps = n
      case .climb: snapshot.climb = n
      case .alt, .depth: if n.isFinite { otherAltitude = true }
      case .class, .time: break
      }
    }
    guard wellFormed else { return nil }
    guard isTPV else { return nil }
    return completed(snapshot, otherAltitude: otherAltitude)
  }

  /// A TPV's members as read, completed as libgps's `libgps_json_unpack` completes them: a
  /// time of zero is none, and `fields` says which values are known.
  static func completed(_ read: TPVSnapshot, otherAltitude: Bool) -> TPVSnapshot {
    var snapshot = read
    if snapshot.time?.seconds == 0 { snapshot.time = nil }
    var fields: GPSDFieldMask = [.status]
    if snapshot.time != nil { fields.insert(.time) }
    if snapshot.timeError.isFinite { fields.insert(.timeError) }
    if snapshot.longitude.isFinite { fields.insert(.position) }
    if snapshot.altitudeHAE.isFinite || snapshot.altitudeMSL.isFinite || otherAltitude { fields.insert(.altitude) }
    if snapshot.epx.isFinite && snapshot.epy.isFinite { fields.insert(.horizontalError) }
    if snapshot.epv.isFinite { fields.insert(.verticalError) }
    if snapshot.track.isFinite { fields.insert(.track) }
    if snapshot.speed.isFinite { fields.insert(.speed) }
    if snapshot.climb.isFinite { fields.insert(.climb) }
    if snapshot.eps.isFinite { fields.insert(.speedError) }
    if snapshot.mode != 0 { fields.insert(.mode) }
    snapshot.fields = fields
    return snapshot
  }

  /// The TPV members libgps reads (`json_tpv_read`'s attributes that `TPVSnapshot` keeps),
  /// known by their key's bytes.
  enum TPVMember: CaseIterable {
    case `class`, time, mode, status, leapseconds, ept, lat, lon, altHAE, altMSL, geoidSep, eph, epx, epy, epv
    case track, speed, eps, climb, alt, depth

    /// A key's first 8 bytes packed into an integer, the first byte lowest: a key of 8 bytes or
    /// fewer that does not end in a NUL byte (only an escape, `\u0000`, makes one) is known by
    /// this integer alone, as no name holds a NUL.
    static func pack(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
      var packed: UInt64 = 0
      var i = min(bytes.count, 8)
      while i > 0 {
        i -= 1
        packed = packed << 8 | UInt64(bytes[i])
      }
      return packed
    }

    init?(_ key: Token, in bytes: UnsafeBufferPointer<UInt8>) {
      switch key {
      case .string(let range): self.init(UnsafeBufferPointer(rebasing: bytes[range]))
      case .escapedString(let text):
        var text = text
        guard let member = text.withUTF8({ TPVMember($0) }) else { return nil }
        self = member
      default: return nil
      }
    }

    init?(_ key: UnsafeBufferPointer<UInt8>) {
      // Each case is its name packed (`pack`); `tpvMemberKeysArePackedNames` checks them all.
      // One switch is one compare tree: a TPV's twenty members a second are matched in a few
      // instructions each, the keys libgps does not read as fast as the rest.
      guard let last = key.last, last != 0 else { return nil }  // "lat\u0000" packs as "lat"
      let packed = Self.pack(key)
      guard key.count <= 8 else {
        // "leapseconds", the one longer key: its first 8 bytes and "nds".
        guard key.count == 11, packed == 0x6f63_6573_7061_656c, key[8] == 110, key[9] == 100, key[10] == 115
        else { return nil }
        self = .leapseconds
        return
      }
      switch packed {
      case 0x73_7361_6c63: self = .class
      case 0x656d_6974: self = .time
      case 0x6564_6f6d: self = .mode
      case 0x7375_7461_7473: self = .status
      case 0x74_7065: self = .ept
      case 0x74_616c: self = .lat
      case 0x6e_6f6c: self = .lon
      case 0x4541_4874_6c61: self = .altHAE
      case 0x4c53_4d74_6c61: self = .altMSL
      case 0x7065_5364_696f_6567: self = .geoidSep
      case 0x68_7065: self = .eph
      case 0x78_7065: self = .epx
      case 0x79_7065: self = .epy
      case 0x76_7065: self = .epv
      case 0x6b_6361_7274: self = .track
      case 0x64_6565_7073: self = .speed
      case 0x73_7065: self = .eps
      case 0x62_6d69_6c63: self = .climb
      case 0x74_6c61: self = .alt
      case 0x68_7470_6564: self = .depth
      default: return nil
      }
    }
  }

  /// What a DEVICE report says about a receiver: its path and whether gpsd has it open.
  /// gpsd sends `"activated":"<time>"` when it opens a device and `"activated":0` when it
  /// closes one (end of data, receiver unplugged).
  public struct DeviceReport: Sendable, Hashable {
    public var path: String?
    /// nil when the report does not say.
    public var activated: Bool?
  }

  /// Decodes a DEVICE line; nil for anything else.
  public static func device(from line: some StringProtocol) -> DeviceReport? {
    let bytes = Array(line.utf8)
    return bytes.withUnsafeBufferPointer { device(from: $0) }
  }

  /// As `device(from:)`, over raw bytes.
  public static func device(from bytes: UnsafeBufferPointer<UInt8>) -> DeviceReport? {
    guard let members = members(of: bytes) else { return nil }
    var isDevice = false
    var report = DeviceReport()
    for (key, value) in members {
      switch (key, value) {
      case ("class", .string(let name)): isDevice = name == "DEVICE"
      case ("path", .string(let path)): report.path = path
      case ("activated", .number(let n)): report.activated = n != 0
      case ("activated", .string(let text)): report.activated = !text.isEmpty
      default: break
      }
    }
    return isDevice ? report : nil
  }

  /// The `release` of a VERSION report (gpsd's greeting on every connection, "3.22"); nil for
  /// anything else. A VERSION without a string `release` gives "".
  public static func versionRelease(from bytes: UnsafeBufferPointer<UInt8>) -> String? {
    stringMember("release", ofClass: "VERSION", in: bytes)
  }

  /// An ERROR report's `message`; nil for anything else.
  public static func errorMessage(from bytes: UnsafeBufferPointer<UInt8>) -> String? {
    stringMember("message", ofClass: "ERROR", in: bytes)
  }

  /// The string member `key` of a report of class `name` ("" when it has none); nil when the
  /// line is not such a report.
  static func stringMember(_ key: String, ofClass name: String, in bytes: UnsafeBufferPointer<UInt8>) -> String? {
    guard let members = members(of: bytes) else { return nil }
    var isClass = false
    var found = ""
    for member in members {
      switch (member.key, member.value) {
      case ("class", .string(let value)): isClass = value == name
      case (key, .string(let value)): found = value
      default: break
      }
    }
    return isClass ? found : nil
  }

  /// A recursive-descent reader over one line's bytes; every access is bounds-checked.
  private struct Scanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    var atEnd: Bool { index >= bytes.count }
    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipSpace() {
      while let c = current, c == 32 || c == 9 || c == 10 || c == 13 { index += 1 }
    }

    mutating func expect(_ c: UInt8) -> Bool {
      guard current == c else { return false }
      index += 1
      return true
    }

    /// One object, each member handed to `body` as it is read (see `forEachMember`).
    mutating func object(_ body: (Token, Token) -> Void) -> Bool {
      guard expect(123) else { return false }  // {
      skipSpace()
      if expect(125) { return true }  // }
      while true {
        skipSpace()
        guard current == 34, let key = stringToken() else { return false }
        skipSpace()
        guard expect(58) else { return false }  // :
        skipSpace()
        guard let value = token() else { return false }
        body(key, value)
        skipSpace()
        if expect(44) { continue }  // ,
        return expect(125)
      }
    }

    mutating func token() -> Token? {
      guard let c = current else { return nil }
      switch c {
      case 34: return stringToken()
      case 123, 91: return skipComposite() ? .composite : nil
      case 116: return literal("true") ? .bool(true) : nil
      case 102: return literal("false") ? .bool(false) : nil
      case 110: return literal("null") ? .null : nil
      default: return number().map(Token.number)
      }
    }

    /// A string at `index` (its opening quote): where its bytes are when it has no escape
    /// (most strings), else decoded by `string()`, which also refuses bad escapes and
    /// control characters.
    mutating func stringToken() -> Token? {
      guard current == 34 else { return nil }
      var end = index + 1
      while end < bytes.count, bytes[end] != 34, bytes[end] != 92, bytes[end] >= 32 { end += 1 }
      if end < bytes.count, bytes[end] == 34 {
        defer { index = end + 1 }
        return .string(index + 1..<end)
      }
      return string().map(Token.escapedString)
    }

    mutating func literal(_ word: StaticString) -> Bool {
      let count = word.utf8CodeUnitCount
      guard index + count <= bytes.count else { return false }
      let matches = word.withUTF8Buffer { w in
        (0..<count).allSatisfy { bytes[index + $0] == w[$0] }
      }
      if matches { index += count }
      return matches
    }

    /// A number at `index`. gpsd's reals take `exactDecimalPrefix` in one pass; anything it
    /// does not read, or that goes on past it (`1.2.3`, `1e5e`), is found as the bytes a
    /// number may hold and read by `exactDecimal` or `Double(String)`, as before.
    mutating func number() -> Double? {
      if let (value, end) = GPSDJSON.exactDecimalPrefix(bytes, from: index), end - index <= 64,
        end == bytes.count || !Self.mayBeInNumber(bytes[end])
      {
        index = end
        return value
      }
      let start = index
      if current == 45 { index += 1 }  // -
      var sawDigit = false
      while let c = current, Self.mayBeInNumber(c) {
        if c >= 48 && c <= 57 { sawDigit = true }
        index += 1
      }
      guard sawDigit, index - start <= 64 else { return nil }
      let digits = UnsafeBufferPointer(rebasing: bytes[start..<index])
      if let exact = GPSDJSON.exactDecimal(digits) { return exact }
      return Double(String(decoding: digits, as: UTF8.self))
    }

    /// A digit, `.`, `e`, `E`, `+` or `-`.
    @inline(__always)
    static func mayBeInNumber(_ c: UInt8) -> Bool {
      (c >= 48 && c <= 57) || c == 46 || c == 101 || c == 69 || c == 43 || c == 45
    }

    mutating func string() -> String? {
      guard expect(34) else { return nil }
      // Most strings have no escapes: made straight from the bytes (one copy, none for the
      // short keys, which Swift keeps inline).
      var end = index
      while end < bytes.count, bytes[end] != 34, bytes[end] != 92, bytes[end] >= 32 { end += 1 }
      if end < bytes.count, bytes[end] == 34 {
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<end]), as: UTF8.self)
        index = end + 1
        return text
      }
      var out: [UInt8] = []
      while let c = current {
        index += 1
        switch c {
        case 34: return String(decoding: out, as: UTF8.self)
        case 92:
          guard let e = current else { return nil }
          index += 1
          switch e {
          case 34, 92, 47: out.append(e)
          case 98: out.append(8)
          case 102: out.append(12)
          case 110: out.append(10)
          case 114: out.append(13)
          case 116: out.append(9)
          case 117:
            // Exactly four hex digits (RFC 8259 7; libgps's json.c refuses fewer): not a
            // sign, which `UInt32(_:radix:)` would take ("\u+06c").
            guard index + 4 <= bytes.count else { return nil }
            var code: UInt32 = 0
            for digit in bytes[index..<index + 4] {
              // One byte is an ASCII or Latin-1 scalar: only 0-9, a-f, A-F have a value.
              guard let value = Character(Unicode.Scalar(digit)).hexDigitValue else { return nil }
              code = code << 4 | UInt32(value)
            }
            index += 4
            let scalar = Unicode.Scalar(code) ?? "\u{FFFD}"
            out.append(contentsOf: Array(String(Character(scalar)).utf8))
          default: return nil
          }
        case 0..<32: return nil
        default: out.append(c)
        }
      }
      return nil
    }

    /// Skips a nested array or object, strings included; false if it is malformed or too deep.
    mutating func skipComposite() -> Bool {
      guard depth < 32, let open = current else { return false }
      depth += 1
      defer { depth -= 1 }
      let close: UInt8 = open == 123 ? 125 : 93
      index += 1
      skipSpace()
      if expect(close) { return true }
      while true {
        skipSpace()
        if open == 123 {
          guard stringToken() != nil else { return false }
          skipSpace()
          guard expect(58) else { return false }
          skipSpace()
        }
        guard token() != nil else { return false }
        skipSpace()
        if expect(44) { continue }
        return expect(close)
      }
    }
  }
}
