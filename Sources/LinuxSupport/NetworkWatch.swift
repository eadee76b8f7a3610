import CLinuxShims

#if canImport(Glibc)
  import Glibc
#endif

/// A NETLINK_ROUTE socket subscribed to the kernel's address and route announcements
/// (rtnetlink(7)): readable when the board gains or loses an address or a route, which is how
/// Wi-Fi coming back at home shows (DHCP's address, then its default route). Non-blocking; it
/// waits in a poll(2) set beside the owner's own wake, so no timer runs to notice the network.
public final class NetworkWatch: Sendable {
  public let descriptor: FileDescriptor

  public init() throws(SystemError) {
    let fd = shim_netlink_route_watch()
    guard fd >= 0 else { throw SystemError.last("socket", "NETLINK_ROUTE, its address and route groups") }
    descriptor = FileDescriptor(owning: fd)
  }

  /// The entry that waits for it in a poll(2) set.
  public var pollEntry: pollfd { pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0) }

  /// Reads every announcement queued; true when one of them added an address or a route (the
  /// network may have come up). An overflowed socket (ENOBUFS: announcements were lost) counts
  /// as one, since what was lost may have been.
  public func drain() -> Bool {
    var gained = false
    var buffer = [UInt8](repeating: 0, count: 8192)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(descriptor.rawValue, $0.baseAddress, $0.count, 0) }
      if count > 0 {
        gained = gained || Self.announcesGain(buffer[..<count])
      } else if count < 0 && errno == EINTR {
        continue
      } else {
        if count < 0 && errno == ENOBUFS { gained = true }
        return gained
      }
    }
  }

  /// Whether a datagram of netlink messages (struct nlmsghdr, each NLMSG_ALIGN'd to 4 bytes)
  /// holds an RTM_NEWADDR (20) or RTM_NEWROUTE (24).
  public static func announcesGain(_ datagram: ArraySlice<UInt8>) -> Bool {
    var offset = datagram.startIndex
    while datagram.endIndex - offset >= 16 {
      func word(_ at: Int) -> UInt32 {
        datagram[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) }  // host order: little-endian targets
      }
      let length = Int(word(offset))
      let type = UInt16(datagram[offset + 4]) | UInt16(datagram[offset + 5]) << 8
      guard length >= 16, length <= datagram.endIndex - offset else { return false }
      if type == 20 || type == 24 { return true }
      offset += (length + 3) & ~3
    }
    return false
  }
}
