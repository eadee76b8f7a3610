/// Percent-encoding (RFC 3986 §2.1): everything but the unreserved characters (§2.3) as %XX of
/// its UTF-8 bytes, so a file name or an id cannot change the path it is put in, nor a value the
/// query or form it is put in; and its inverse, for the redirect address the rider pastes.
public enum PercentEncoding {
  static let hex = Array("0123456789ABCDEF")

  /// `text` with every byte but A-Z, a-z, 0-9, "-", ".", "_" and "~" percent-encoded: fit for a
  /// path segment, a query's names and values, and an application/x-www-form-urlencoded body.
  public static func encoded(_ text: String) -> String {
    var out = ""
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"),
        UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
        out.append(Character(Unicode.Scalar(byte)))
      default:
        out += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 15)])
      }
    }
    return out
  }

  /// `text` with its %XX escapes decoded and `+` read as a space (HTML's form encoding, which a
  /// query string may use); nil if an escape is broken or the bytes are not UTF-8.
  public static func decoded(_ text: Substring) -> String? {
    var bytes: [UInt8] = []
    var rest = text.utf8[...]
    while let byte = rest.popFirst() {
      if byte == UInt8(ascii: "+") {
        bytes.append(UInt8(ascii: " "))
      } else if byte == UInt8(ascii: "%") {
        guard rest.count >= 2, let value = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16)
        else { return nil }
        bytes.append(value)
        rest = rest.dropFirst(2)
      } else {
        bytes.append(byte)
      }
    }
    return String(validating: bytes, as: UTF8.self)
  }
}
