#if canImport(Glibc)
  import Glibc
#endif

/// The machine's own addresses (`getifaddrs(3)`): where a phone on the same network reaches a
/// server that listens on all of them.
public enum NetworkInterfaces {
  /// The IPv4 addresses of the interfaces that are up (of the one named `interface` only, when
  /// given), loopback last ("192.168.1.20", ...).
  public static func ipv4Addresses(of interface: String? = nil) -> [String] {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0 else { return [] }
    defer { freeifaddrs(list) }
    let wanted = interface
    var found: [String] = []
    var loopback: [String] = []
    var entry = list
    while let interface = entry?.pointee {
      entry = interface.ifa_next
      guard let address = interface.ifa_addr, Int32(address.pointee.sa_family) == AF_INET,
        interface.ifa_flags & UInt32(IFF_UP) != 0
      else { continue }
      if let wanted, String(cString: interface.ifa_name) != wanted { continue }
      var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
      var inet = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
      guard inet_ntop(AF_INET, &inet, &text, socklen_t(text.count)) != nil else { continue }
      let name = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      if interface.ifa_flags & UInt32(IFF_LOOPBACK) != 0 {
        loopback.append(name)
      } else {
        found.append(name)
      }
    }
    return found + loopback
  }
}
