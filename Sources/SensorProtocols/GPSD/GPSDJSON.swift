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
    guard bytes.count <= maximumLineLength else { return nil }
    var scanner = Scanner(bytes: bytes)
    scanner.skipSpace()
    guard let result = scanner.object() else { return nil }
    scanner.skipSpace()
    return scanner.atEnd ? result : nil
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

  /// As `tpv(from:)`, over raw bytes (the line as read from gpsd's socket).
  public static func tpv(from bytes: UnsafeBufferPointer<UInt8>) -> TPVSnapshot? {
    guard let members = members(of: bytes) else { return nil }
    var isTPV = false
    var snapshot = TPVSnapshot()
    // Read only for the altitude bit, as libgps counts them: the deprecated "alt" and a
    // marine receiver's "depth".
    var otherAltitude = false
    for (key, value) in members {
      switch (key, value) {
      case ("class", .string(let name)): isTPV = name == "TPV"
      case ("time", .string(let text)): snapshot.time = parseTime(text)
      case ("mode", .number(let n)): snapshot.mode = integer(n) ?? 0
      case ("status", .number(let n)): snapshot.status = integer(n) ?? 0
      case ("leapseconds", .number(let n)): snapshot.leapSeconds = integer(n) ?? 0
      case ("ept", .number(let n)): snapshot.timeError = n
      case ("lat", .number(let n)): snapshot.latitude = n
      case ("lon", .number(let n)): snapshot.longitude = n
      case ("altHAE", .number(let n)): snapshot.altitudeHAE = n
      case ("altMSL", .number(let n)): snapshot.altitudeMSL = n
      case ("geoidSep", .number(let n)): snapshot.geoidSeparation = n
      case ("eph", .number(let n)): snapshot.eph = n
      case ("epx", .number(let n)): snapshot.epx = n
      case ("epy", .number(let n)): snapshot.epy = n
      case ("epv", .number(let n)): snapshot.epv = n
      case ("track", .number(let n)): snapshot.track = n
      case ("speed", .number(let n)): snapshot.speed = n
      case ("eps", .number(let n)): snapshot.eps = n
      case ("climb", .number(let n)): snapshot.climb = n
      case ("alt", .number(let n)), ("depth", .number(let n)): if n.isFinite { otherAltitude = true }
      default: break
      }
    }
    guard isTPV else { return nil }
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

  /// Parses gpsd's ISO 8601 UTC time, "2019-04-06T23:57:24.020Z" (fraction optional, up to
  /// nanoseconds), into a `GPSDTime`; nil unless the text is exactly that shape with fields in
  /// range. Seconds up to 60 are accepted (a leap second).
  public static func parseTime(_ text: some StringProtocol) -> GPSDTime? {
    let b = Array(text.utf8)
    guard b.count >= 20, b.count <= 40 else { return nil }
    func digits(_ range: Range<Int>) -> Int64? {
      var value: Int64 = 0
      for i in range {
        let c = b[i]
        guard c >= 48, c <= 57 else { return nil }
        value = value * 10 + Int64(c - 48)
      }
      return value
    }
    guard b[4] == 45, b[7] == 45, b[10] == 84, b[13] == 58, b[16] == 58,
      let year = digits(0..<4), let month = digits(5..<7), let day = digits(8..<10),
      let hour = digits(11..<13), let minute = digits(14..<16), let second = digits(17..<19)
    else { return nil }
    var index = 19
    var nanoseconds: Int64 = 0
    if b[index] == 46 {  // "."
      index += 1
      var scale: Int64 = 100_000_000
      let start = index
      while index < b.count, b[index] >= 48, b[index] <= 57 {
        if scale > 0 {
          nanoseconds += Int64(b[index] - 48) * scale
          scale /= 10
        }
        index += 1
      }
      guard index > start else { return nil }
    }
    guard index == b.count - 1, b[index] == 90 else { return nil }  // "Z"
    guard (1...12).contains(month), day >= 1, day <= CivilCalendar.daysIn(month: month, year: year),
      hour < 24, minute < 60, second <= 60
    else { return nil }
    let days = CivilCalendar.daysSince1970(year: year, month: month, day: day)
    return GPSDTime(
      seconds: days * 86_400 + hour * 3_600 + minute * 60 + second, nanoseconds: nanoseconds)
  }

  private static func integer(_ value: Double) -> Int? {
    guard value.isFinite, value.rounded() == value, abs(value) < 1e15 else { return nil }
    return Int(value)
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

    mutating func object() -> [(key: String, value: Value)]? {
      guard expect(123) else { return nil }  // {
      var result: [(key: String, value: Value)] = []
      result.reserveCapacity(24)  // a TPV has about 20 members: one allocation
      skipSpace()
      if expect(125) { return result }  // }
      while true {
        skipSpace()
        guard let key = string() else { return nil }
        skipSpace()
        guard expect(58) else { return nil }  // :
        skipSpace()
        guard let value = value() else { return nil }
        result.append((key, value))
        skipSpace()
        if expect(44) { continue }  // ,
        return expect(125) ? result : nil
      }
    }

    mutating func value() -> Value? {
      guard let c = current else { return nil }
      switch c {
      case 34: return string().map(Value.string)
      case 123, 91: return skipComposite() ? .composite : nil
      case 116: return literal("true") ? .bool(true) : nil
      case 102: return literal("false") ? .bool(false) : nil
      case 110: return literal("null") ? .null : nil
      default: return number().map(Value.number)
      }
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

    mutating func number() -> Double? {
      let start = index
      if current == 45 { index += 1 }  // -
      var sawDigit = false
      while let c = current, (c >= 48 && c <= 57) || c == 46 || c == 101 || c == 69 || c == 43 || c == 45 {
        if c >= 48 && c <= 57 { sawDigit = true }
        index += 1
      }
      guard sawDigit, index - start <= 64 else { return nil }
      let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
      return Double(text)
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
            guard index + 4 <= bytes.count,
              let code = UInt32(
                String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<index + 4]), as: UTF8.self),
                radix: 16)
            else { return nil }
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
          guard string() != nil else { return false }
          skipSpace()
          guard expect(58) else { return false }
          skipSpace()
        }
        guard value() != nil else { return false }
        skipSpace()
        if expect(44) { continue }
        return expect(close)
      }
    }
  }
}
