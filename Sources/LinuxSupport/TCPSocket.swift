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

/// `getaddrinfo(3)` for a stream socket of either family; free the list with `freeaddrinfo`.
func resolve(host: String, port: String, flags: Int32) throws(TCPConnectError) -> UnsafeMutablePointer<addrinfo>? {
  var hints = addrinfo()
  hints.ai_family = AF_UNSPEC
  hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
  hints.ai_flags = flags
  var list: UnsafeMutablePointer<addrinfo>?
  let status = getaddrinfo(host, port, &hints, &list)
  if status != 0 {
    let reason = status == EAI_SYSTEM ? String(cString: strerror(Glibc.errno)) : String(cString: gai_strerror(status))
    throw .resolve(host: host, port: port, code: status, reason: reason)
  }
  return list
}

/// Tries the addresses `resolve` gives for `host` and `port`, in `getaddrinfo`'s order: a
/// close-on-exec socket for each, handed to `use`, which returns what it made of it or the
/// error that sends it on to the next address. Throws the last address's error (`call` names
/// the one given when there is no address at all).
func onFirstAddress<Made>(
  host: String, port: String, flags: Int32, call: String,
  _ use: (addrinfo, FileDescriptor) -> Result<Made, SystemError>
) throws(TCPConnectError) -> Made {
  let list = try resolve(host: host, port: port, flags: flags)
  defer { freeaddrinfo(list) }
  var lastError = SystemError(call, errno: EADDRNOTAVAIL, context: "\(host):\(port)")
  var entry = list
  while let address = entry?.pointee {
    entry = address.ai_next
    let fd = socket(address.ai_family, address.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), address.ai_protocol)
    guard fd >= 0 else {
      lastError = .last("socket", "\(host):\(port)")
      continue
    }
    switch use(address, FileDescriptor(owning: fd)) {
    case .success(let made): return made
    case .failure(let error): lastError = error
    }
  }
  throw .connect(host: host, port: port, lastError)
}

/// A TCP client socket (`tcp(7)`): close-on-exec, closed when released. Writes never raise
/// SIGPIPE (`MSG_NOSIGNAL`): a peer that has gone is an EPIPE error, on any thread.
public final class TCPSocket: Sendable {
  public let descriptor: Int32
  /// The address at the other end, as text, for a socket a listener accepted ("" otherwise).
  public let peer: String
  private let file: FileDescriptor

  init(_ file: FileDescriptor, peer: String = "") {
    descriptor = file.rawValue
    self.peer = peer
    self.file = file
  }

  /// Closes it, once (a socket's close has nothing to report).
  public func close() {
    try? file.close()
  }

  /// Resolves `host` and `port` (a name or a number; IPv4 and IPv6) and connects to the first
  /// address that accepts, in `getaddrinfo`'s order. Blocks until connected or refused: call it
  /// where waiting for a remote host or DNS stalls nothing else.
  public static func connect(host: String, port: String) throws(TCPConnectError) -> TCPSocket {
    try onFirstAddress(host: host, port: port, flags: AI_ADDRCONFIG, call: "connect") { address, file in
      Result { () throws(SystemError) in
        try retryingInterrupts("connect", "\(host):\(port)") {
          Glibc.connect(file.rawValue, address.ai_addr, address.ai_addrlen)
        }
        return TCPSocket(file)
      }
    }
  }

  /// Waits up to `timeout` seconds (infinity: for ever) for something to read, or the end of
  /// the stream, or a shutdown.
  public func waitReadable(timeout: Double) throws(SystemError) -> Bool {
    var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    let milliseconds = timeout.isFinite ? Int32(max(0, min(timeout, 86_400)) * 1000) : -1
    let ready = try retryingInterrupts("poll") { poll(&poller, 1, milliseconds) }
    return ready > 0
  }

  /// Reads what has arrived, up to `maximum` bytes, waiting until `deadline` (CLOCK_MONOTONIC
  /// seconds) for the first byte: empty at the end of the stream; ETIMEDOUT at the deadline.
  public func receive(maximum: Int = 4096, deadline: Double) throws(SystemError) -> [UInt8] {
    let left = deadline - SystemClocks.monotonic()
    guard left > 0, try waitReadable(timeout: left) else { throw SystemError("recv", errno: ETIMEDOUT) }
    var buffer = [UInt8](repeating: 0, count: maximum)
    let count = try retryingInterrupts("recv") {
      buffer.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress!, maximum, Int32(MSG_DONTWAIT)) }
    }
    buffer.removeLast(maximum - count)
    return buffer
  }

  /// The first byte waiting, left in the stream (`MSG_PEEK`), waiting until `deadline` for it:
  /// nil at the end of the stream; ETIMEDOUT at the deadline.
  public func peek(deadline: Double) throws(SystemError) -> UInt8? {
    let left = deadline - SystemClocks.monotonic()
    guard left > 0, try waitReadable(timeout: left) else { throw SystemError("recv", errno: ETIMEDOUT) }
    var byte: UInt8 = 0
    let count = try retryingInterrupts("recv") { Glibc.recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) }
    return count == 1 ? byte : nil
  }

  /// How long a blocking write may wait for room before failing (SO_SNDTIMEO): a peer that
  /// reads nothing cannot hold the writer longer.
  public func setSendTimeout(seconds: Double) throws(SystemError) {
    var value = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1e6))
    try retryingInterrupts("setsockopt", "SO_SNDTIMEO") {
      setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }
  }

  /// Shuts the connection down both ways: a thread waiting on it wakes, the peer sees the end.
  public func shutDown() {
    _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
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

/// A listening TCP socket (`tcp(7)`): the board's web server. SO_REUSEADDR, so a restarted
/// service binds again at once over connections left in TIME_WAIT.
public final class TCPListener: Sendable {
  public let descriptor: Int32
  /// The port bound (the one the kernel chose, when asked for port 0).
  public let port: Int
  private let file: FileDescriptor

  private init(_ file: FileDescriptor, port: Int) {
    descriptor = file.rawValue
    self.port = port
    self.file = file
  }

  /// Closes it, once (a socket's close has nothing to report).
  public func close() {
    try? file.close()
  }

  /// Binds `host` ("0.0.0.0", "::", "127.0.0.1", a name) and `port`, and listens; on the
  /// network interface named `device` only, when given (SO_BINDTODEVICE, socket(7): whatever
  /// addresses it has now or gets later, and no other interface's).
  public static func listen(
    host: String, port: Int, device: String? = nil, backlog: Int32 = 32
  ) throws(TCPConnectError) -> TCPListener {
    try onFirstAddress(host: host, port: String(port), flags: AI_PASSIVE | AI_NUMERICSERV, call: "bind") {
      address, file in
      Result { () throws(SystemError) in
        var one: Int32 = 1
        _ = setsockopt(file.rawValue, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if let device {
          let name = Array(device.utf8CString)
          guard setsockopt(file.rawValue, SOL_SOCKET, SO_BINDTODEVICE, name, socklen_t(name.count)) == 0 else {
            throw .last("setsockopt(SO_BINDTODEVICE)", device)
          }
        }
        guard bind(file.rawValue, address.ai_addr, address.ai_addrlen) == 0 else {
          throw .last("bind", "\(host):\(port)")
        }
        guard Glibc.listen(file.rawValue, backlog) == 0 else { throw .last("listen", "\(host):\(port)") }
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
          $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(file.rawValue, $0, &length) }
        }
        let boundPort: UInt16 =
          Int32(bound.ss_family) == AF_INET6
          ? withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port }
          }
          : withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }
          }
        return TCPListener(file, port: Int(UInt16(bigEndian: boundPort)))
      }
    }
  }

  /// Waits (no timeout: an idle board does not wake) for a connection; nil once shut down.
  public func accept() throws(SystemError) -> TCPSocket? {
    var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    _ = try retryingInterrupts("poll") { poll(&poller, 1, -1) }
    if poller.revents & Int16(POLLIN) == 0 { return nil }
    var peer = [CChar](repeating: 0, count: 64)
    let fd = try retryingInterrupts("accept") { shim_accept_peer(descriptor, &peer, peer.count) }
    return TCPSocket(FileDescriptor(owning: fd), peer: String(cString: peer))
  }

  /// Wakes a thread waiting in `accept` (it returns nil or fails).
  public func shutDown() {
    _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
  }
}
