/// Which Host fields the page answers (RFC 9110 §7.2). DNS rebinding points a name the attacker
/// controls at the board, so that a page of the attacker's, open on a phone on the same Wi-Fi,
/// reaches the board as "its own" site; its requests carry that name in Host. The board answers
/// only to its own names and to addresses: an address cannot be rebound, and the board's
/// addresses change with the network it is on.
public enum HostCheck {
  /// A Host field that is a name or address and an optional port, nothing that could end a
  /// header or a URL's authority.
  public static func isField(_ host: String) -> Bool {
    !host.isEmpty && host.utf8.count <= 255
      && host.utf8.allSatisfy { byte in
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
          || [0x2D, 0x2E, 0x3A, 0x5B, 0x5D].contains(byte)
      }
  }

  /// The host of a Host field without its port, lowercased: "board.local", "192.168.1.20",
  /// "fe80::1"; nil for a field that is not one.
  public static func host(of field: String) -> String? {
    guard isField(field) else { return nil }
    let lowered = field.lowercased()
    if lowered.hasPrefix("[") {
      guard let close = lowered.firstIndex(of: "]") else { return nil }
      let rest = lowered[lowered.index(after: close)...]
      guard rest.isEmpty || isPort(rest.dropFirst()) && rest.first == ":" else { return nil }
      return String(lowered[lowered.index(after: lowered.startIndex)..<close])
    }
    let parts = lowered.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count <= 2, !parts[0].isEmpty, parts.count == 1 || isPort(parts[1]) else { return nil }
    return String(parts[0])
  }

  /// True for the board's own names (`names`, lowercased), an IPv4 address in dotted decimal,
  /// and an IPv6 address in brackets.
  public static func allows(_ field: String?, names: Set<String>) -> Bool {
    guard let field, let host = host(of: field) else { return false }
    if names.contains(host) { return true }
    if field.hasPrefix("[") { return isIPv6(host) }
    return isIPv4(host)
  }

  static func isPort(_ text: Substring) -> Bool {
    !text.isEmpty && text.count <= 5 && text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber)
      && Int(text).map { $0 <= 65535 } == true
  }

  /// Four decimal numbers 0-255: a name made of digits and dots is not one (RFC 1123 §2.1).
  static func isIPv4(_ host: String) -> Bool {
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    return parts.count == 4
      && parts.allSatisfy { part in
        !part.isEmpty && part.count <= 3 && part.allSatisfy { $0.isASCII && $0.isNumber }
          && Int(part).map { $0 <= 255 } == true
      }
  }

  /// Hexadecimal groups and colons (and an IPv4 tail): what may stand in brackets (RFC 3986
  /// §3.2.2); a zone identifier has no place in a Host field.
  static func isIPv6(_ host: String) -> Bool {
    host.contains(":") && host.count <= 45
      && host.allSatisfy { $0 == ":" || $0 == "." || $0.isHexDigit }
  }
}
