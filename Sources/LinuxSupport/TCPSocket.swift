import CLinuxShims
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Why a TCP connection could not be made: the name did not resolve (`getaddrinfo(3)`), or no
/// address it resolved to accepted (`connect(2)`, the last address's error).
public enum TCPConnectError: Error, Sendable, Hashable, CustomStringConvertible {
  /// `getaddrinfo` failed: its `EAI_*` code and `gai_strerror` text.
  case resolve(host: String, port: String, code: Int32, reason: String)
  /// A socket call failed on every address (ECONNREFUSED, ENETUNREACH, ETIMEDOUT, ...).
  case connect(host: String, port: String, SystemError)

  public var description: String {
    switch self {
    case .resolve(let host, let port, _, let reason):
      return "cannot resolve \(host):\(port): \(reason)"
    case .connect(let host, let port, let error):
      return "cannot connect to \(host):\(port): \(String(cString: strerror(error.errno)))"
    }
  }

  /// The errno of a failed connect, 0 for a name that did not resolve.
  public var errno: Int32 {
    if case .connect(_, _, let error) = self { return error.errno }
    return 0
  }
}

/// A TCP client socket (`tcp(7)`): close-on-exec, closed when released. Writes never raise
/// SIGPIPE (`MSG_NOSIGNAL`): a peer that has gone is an EPIPE error, on any thread.
public final class TCPSocket: Sendable {
  public let descriptor: Int32
  private let isClosed = Atomic<Bool>(false)

  private init(descriptor: Int32) {
    self.descriptor = descriptor
  }

  deinit { close() }

  public func close() {
    guard isClosed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
      return
    }
    _ = Glibc.close(descriptor)
  }

  /// Resolves `host` and `port` (a name or a number; IPv4 and IPv6) and connects to the first
  /// address that accepts, in `getaddrinfo`'s order. Blocks until connected or refused: call it
  /// where waiting for a remote host or DNS stalls nothing else.
  public static func connect(host: String, port: String) throws(TCPConnectError) -> TCPSocket {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_flags = AI_ADDRCONFIG
    var list: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host, port, &hints, &list)
    if status != 0 {
      let reason = status == EAI_SYSTEM ? String(cString: strerror(Glibc.errno)) : String(cString: gai_strerror(status))
      throw .resolve(host: host, port: port, code: status, reason: reason)
    }
    defer { freeaddrinfo(list) }
    var lastError = SystemError("connect", errno: EADDRNOTAVAIL, context: "\(host):\(port)")
    var entry = list
    while let address = entry?.pointee {
      entry = address.ai_next
      let fd = socket(address.ai_family, address.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), address.ai_protocol)
      if fd < 0 {
        lastError = .last("socket", "\(host):\(port)")
        continue
      }
      let socket = TCPSocket(descriptor: fd)
      var result: Int32
      repeat {
        result = Glibc.connect(fd, address.ai_addr, address.ai_addrlen)
      } while result < 0 && Glibc.errno == EINTR
      if result == 0 { return socket }
      lastError = .last("connect", "\(host):\(port)")
    }
    throw .connect(host: host, port: port, lastError)
  }

  /// Makes reads and writes return EAGAIN instead of waiting.
  public func setNonBlocking() throws(SystemError) {
    let flags = try retryingInterrupts("fcntl(F_GETFL)") { fcntl(descriptor, F_GETFL) }
    try retryingInterrupts("fcntl(F_SETFL)") { fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }
  }

  /// Writes all of `bytes`. A non-blocking socket that is full is waited on, up to `timeout`
  /// seconds at a time (then ETIMEDOUT: a peer that reads nothing).
  public func send(_ bytes: some Collection<UInt8>, timeout: Double = 2) throws(SystemError) {
    let data = Array(bytes)
    var sent = 0
    while sent < data.count {
      let count = data.withUnsafeBytes { buffer in
        Glibc.send(descriptor, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
      }
      if count >= 0 {
        sent += count
        continue
      }
      let error = Glibc.errno
      if error == EINTR { continue }
      if error == EAGAIN || error == EWOULDBLOCK {
        var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        if poll(&poller, 1, Int32(timeout * 1000)) == 0 { throw SystemError("send", errno: ETIMEDOUT) }
        continue
      }
      throw SystemError("send", errno: error)
    }
  }
}
