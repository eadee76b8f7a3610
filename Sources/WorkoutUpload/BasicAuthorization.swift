/// HTTP Basic authentication (RFC 7617): "Basic " and base64 of "user:password" in UTF-8.
public enum BasicAuthorization {
  /// The Authorization header for `user` and `password`, or nil when `user` holds a colon,
  /// which the scheme cannot carry (RFC 7617 §2).
  public static func header(user: String, password: String) -> HeaderField? {
    guard !user.contains(":") else { return nil }
    return HeaderField("Authorization", "Basic " + base64(Array("\(user):\(password)".utf8)))
  }

  /// Base64 with padding (RFC 4648 §4).
  static func base64(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    var out = ""
    var index = 0
    while index < bytes.count {
      let count = min(3, bytes.count - index)
      var value = 0
      for offset in 0..<3 { value = value << 8 | (offset < count ? Int(bytes[index + offset]) : 0) }
      for position in 0..<4 {
        out.append(position <= count ? alphabet[(value >> (18 - 6 * position)) & 63] : "=")
      }
      index += 3
    }
    return out
  }
}

/// A URL path segment with everything but RFC 3986's unreserved characters percent-encoded
/// (§2.3), so a file name or an id cannot change the path it is put in.
func percentEncodedSegment(_ text: String) -> String {
  let hex = Array("0123456789ABCDEF")
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
