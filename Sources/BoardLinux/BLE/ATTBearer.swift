import CBluetooth
import LinuxSupport
import SensorProtocols

#if canImport(Glibc)
  import Glibc
#endif

/// One ATT bearer: an L2CAP LE socket on the ATT fixed channel, connected to one sensor. Each
/// `SOCK_SEQPACKET` message is one ATT PDU. Tests use one end of a `socketpair` of the same
/// type, with a scripted sensor on the other.
public final class ATTBearer: Sendable {
  public let descriptor: Int32
  private let file: FileDescriptor
  /// The largest PDU a receive takes; ATT's largest is 517 bytes (Core v5.4, Vol 3, Part F, 3.2.9).
  static let receiveLimit = 1024

  /// Takes over `descriptor` (non-blocking); closed when the bearer goes.
  public init(adopting descriptor: Int32) {
    self.descriptor = descriptor
    file = FileDescriptor(owning: descriptor)
  }

  /// Connects to `address` on the ATT channel, waiting up to `timeout` seconds (the kernel's
  /// own LE connect times out after about 20 s, as BlueZ's does) or until `signal` stops.
  /// Returns nil when stopped.
  /// `local`: the address of the controller to connect from (nil: any, which the kernel routes
  /// to the newest controller that is up).
  public static func connect(
    to address: BluetoothAddress, from local: BluetoothAddress? = nil, timeout: Double, signal: StopSignal
  ) throws(SystemError)
    -> ATTBearer?
  {
    let fd = address.bytes.withUnsafeBufferPointer { peer in
      if let local {
        local.bytes.withUnsafeBufferPointer {
          wkd_att_connect(peer.baseAddress, address.kind == .random ? 1 : 0, $0.baseAddress)
        }
      } else {
        wkd_att_connect(peer.baseAddress, address.kind == .random ? 1 : 0, nil)
      }
    }
    guard fd >= 0 else { throw SystemError.last("socket/connect", "L2CAP LE ATT to \(address)") }
    let bearer = ATTBearer(adopting: fd)
    let deadline = SystemClocks.monotonic() + timeout
    while true {
      var descriptors = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]
      if try signal.poll(&descriptors, until: deadline) { return nil }
      if descriptors[0].revents != 0 { break }
      if SystemClocks.monotonic() >= deadline {
        throw SystemError("connect", errno: ETIMEDOUT, context: "L2CAP LE ATT to \(address)")
      }
    }
    let error = wkd_socket_error(fd)
    guard error == 0 else { throw SystemError("connect", errno: error, context: "L2CAP LE ATT to \(address)") }
    return bearer
  }

  /// Sends one PDU.
  public func send(_ pdu: [UInt8]) throws(SystemError) {
    try sendPacket(pdu, on: descriptor, what: "ATT PDU")
  }

  /// The next PDU that has arrived, or nil if none is waiting. A closed link throws
  /// (`ECONNRESET` for an orderly close: the sensor or the kernel ended it).
  public func receive() throws(SystemError) -> [UInt8]? {
    try receivePacket(on: descriptor, limit: Self.receiveLimit, what: "ATT PDU")
  }
}

/// Sends one message on a packet socket (L2CAP seqpacket, HCI control channel), never raising
/// SIGPIPE.
func sendPacket(_ packet: [UInt8], on descriptor: Int32, what: String) throws(SystemError) {
  let sent = packet.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  if sent < 0 { throw SystemError.last("send", what) }
}

/// The next message waiting on a packet socket, nil if none; a closed peer throws ECONNRESET.
func receivePacket(on descriptor: Int32, limit: Int, what: String) throws(SystemError) -> [UInt8]? {
  var buffer = [UInt8](repeating: 0, count: limit)
  while true {
    let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
    if count > 0 { return Array(buffer[..<count]) }
    if count == 0 { throw SystemError("recv", errno: ECONNRESET, context: "\(what): closed by the peer") }
    switch errno {
    case EINTR: continue
    case EAGAIN, EWOULDBLOCK: return nil
    default: throw SystemError.last("recv", what)
    }
  }
}
