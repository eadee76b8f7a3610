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
