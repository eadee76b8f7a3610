import CLinuxShims
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// An AF_UNIX socket (`socket(7)`, `unix(7)`): the control socket's server and clients, and the
/// datagram socket of the systemd notify protocol. Closed when released.
public final class UnixSocket: Sendable {
  public let descriptor: Int32
  /// Closed once, whichever thread gets there first (the descriptor number could be reused).
  private let file: FileDescriptor

  private init(descriptor: Int32) {
    self.descriptor = descriptor
    file = FileDescriptor(owning: descriptor)
  }

  /// Closes it, once (a socket's close has nothing to report).
  public func close() {
    try? file.close()
  }

  /// Makes a socket of `type` (SOCK_STREAM, SOCK_DGRAM), close-on-exec.
  public static func make(type: Int32) throws(SystemError) -> UnixSocket {
    let fd = try retryingInterrupts("socket") { socket(AF_UNIX, type | Int32(SOCK_CLOEXEC.rawValue), 0) }
    return UnixSocket(descriptor: fd)
  }

  /// A listening stream socket at `path` with file mode `mode` and, if given, group `group`
  /// (so members of the service's group, and only they, may connect). A stale socket file
  /// left by a killed process is replaced.
  public static func listen(path: String, mode: mode_t, group: gid_t? = nil) throws(SystemError) -> UnixSocket {
    let server = try bound(type: Int32(SOCK_STREAM.rawValue), path: path)
    try retryingInterrupts("chmod", path) { chmod(path, mode) }
    if let group {
      try retryingInterrupts("chown", path) { chown(path, uid_t.max, group) }
    }
    try retryingInterrupts("listen", path) { Glibc.listen(server.descriptor, 16) }
    return server
  }

  /// A datagram socket bound at `path`, which receives what is sent there (a stand-in for
  /// systemd's notify socket in tests).
  public static func receivingDatagrams(at path: String) throws(SystemError) -> UnixSocket {
    try bound(type: Int32(SOCK_DGRAM.rawValue), path: path)
  }

  /// A socket of `type` bound at `path`, replacing a stale socket file a killed process left.
  private static func bound(type: Int32, path: String) throws(SystemError) -> UnixSocket {
    let socket = try make(type: type)
    unlink(path)
    var address = try socketAddress(path)
    try retryingInterrupts("bind", path) {
      withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          bind(socket.descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
      }
    }
    return socket
  }

  /// Connects a stream socket to `path`.
  public static func connect(path: String) throws(SystemError) -> UnixSocket {
    let client = try make(type: Int32(SOCK_STREAM.rawValue))
    var address = try socketAddress(path)
    try retryingInterrupts("connect", path) {
      withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          Glibc.connect(client.descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
      }
    }
    return client
  }

  /// Waits up to `timeout` seconds for a connection and accepts it; nil on timeout.
  public func accept(timeout: Double) throws(SystemError) -> UnixSocket? {
    guard try waitReadable(timeout: timeout) else { return nil }
    let fd = try retryingInterrupts("accept") { shim_accept_cloexec(descriptor) }
    return UnixSocket(descriptor: fd)
  }

  /// Waits up to `timeout` seconds (infinity: until something happens) until the socket has
  /// something to read, or was shut down.
  public func waitReadable(timeout: Double) throws(SystemError) -> Bool {
    var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    let milliseconds = timeout.isFinite ? Int32(max(0, min(timeout, 86_400)) * 1000) : -1
    let ready = try retryingInterrupts("poll") { poll(&poller, 1, milliseconds) }
    return ready > 0
  }

  /// Shuts the socket down for both directions: a thread blocked in `poll` on it wakes up.
  public func shutDown() {
    _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
  }

  /// Sets how long a read or write may block before failing with EAGAIN.
  public func setTimeouts(seconds: Double) throws(SystemError) {
    var value = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1e6))
    for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
      try retryingInterrupts("setsockopt") {
        setsockopt(descriptor, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
      }
    }
  }

  /// Reads up to and without the first newline, or to the end of the stream. nil if the peer
  /// closed without sending anything. Fails beyond `limit` bytes, and with ETIMEDOUT when the
  /// line is not complete by `deadline` (CLOCK_MONOTONIC seconds): a peer that trickles a byte
  /// now and then cannot hold the reader longer than that, whatever each read's timeout.
  public func readLine(limit: Int = 65536, deadline: Double? = nil) throws(SystemError) -> String? {
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while true {
      if let deadline {
        let left = deadline - SystemClocks.monotonic()
        guard left > 0, try waitReadable(timeout: left) else {
          throw SystemError("read", errno: ETIMEDOUT, context: "no complete line in time (\(bytes.count) bytes)")
        }
      }
      let count = try retryingInterrupts("read") { read(descriptor, &byte, 1) }
      if count == 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
      if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
      bytes.append(byte)
      if bytes.count > limit { throw SystemError("read", errno: EMSGSIZE, context: "line longer than \(limit) bytes") }
    }
  }

  /// Reads until the peer closes the stream.
  public func readToEnd(limit: Int = 16 << 20) throws(SystemError) -> String {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = try retryingInterrupts("read") { read(descriptor, &chunk, chunk.count) }
      if count == 0 { return String(decoding: bytes, as: UTF8.self) }
      bytes += chunk[0..<count]
      if bytes.count > limit { throw SystemError("read", errno: EMSGSIZE, context: "reply longer than \(limit) bytes") }
    }
  }

  public func writeAll(_ text: String) throws(SystemError) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      // send(MSG_NOSIGNAL): a peer that has gone is EPIPE, never a SIGPIPE that kills the writer.
      let written = try retryingInterrupts("send") {
        bytes.withUnsafeMutableBytes {
          Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
        }
      }
      offset += written
    }
  }

  /// Sends `request` and reads the reply to the end of the stream: the request written as the
  /// peer reads it, the writing half shut down once it is all sent (the peer's end of file),
  /// the reply taken meanwhile, up to `replyLimit` bytes. nil when `stop` came first. A peer
  /// that has gone before reading it all is EPIPE, never a SIGPIPE (MSG_NOSIGNAL).
  public func exchange(_ request: [UInt8], replyLimit: Int, stop: StopSignal?) throws(SystemError) -> [UInt8]? {
    var pending = request[...]
    var writing = true
    var reply: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      if writing && pending.isEmpty {
        guard Glibc.shutdown(descriptor, Int32(SHUT_WR)) == 0 else { throw SystemError("shutdown", errno: errno) }
        writing = false
      }
      var entries = [pollfd(fd: descriptor, events: Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0), revents: 0)]
      if let stop {
        if try stop.poll(&entries, until: nil) { return nil }
      } else {
        _ = try retryingInterrupts("poll") { Glibc.poll(&entries, 1, -1) }
      }
      let ready = entries[0].revents
      if writing && ready & Int16(POLLOUT) != 0 {
        let sent = pending.withUnsafeBytes {
          Glibc.send(descriptor, $0.baseAddress!, min($0.count, 65536), Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
        if sent > 0 {
          pending = pending.dropFirst(sent)
        } else if errno != EINTR && errno != EAGAIN {
          let sent = request.count - pending.count
          throw SystemError("send", errno: errno, context: "\(sent) of \(request.count) bytes sent")
        }
      }
      if ready & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
        let count = Glibc.recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        if count == 0 { return reply }
        if count < 0 {
          if errno == EINTR || errno == EAGAIN { continue }
          throw SystemError("recv", errno: errno)
        }
        reply += buffer[..<count]
        if reply.count > replyLimit {
          throw SystemError("recv", errno: EMSGSIZE, context: "a reply longer than \(replyLimit) bytes")
        }
      }
    }
  }

  /// Sends one datagram to the socket at `path` (a leading "@" names the abstract namespace).
  /// Never blocks: a receiver whose queue is full gives EAGAIN (unix(7)), not a wait.
  public func send(_ text: String, to path: String) throws(SystemError) {
    var address = try Self.socketAddress(path)
    var length = socklen_t(MemoryLayout<sa_family_t>.size + path.utf8.count)
    if !path.hasPrefix("@") { length += 1 }
    let bytes = Array(text.utf8)
    try retryingInterrupts("sendto", path) {
      withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          sendto(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), $0, length)
        }
      }
    }
  }

  /// The next datagram, if one comes within `timeout` seconds (0: only one already waiting).
  public func receiveDatagram(timeout: Double, limit: Int = 4096) throws(SystemError) -> String? {
    guard try waitReadable(timeout: timeout) else { return nil }
    var buffer = [UInt8](repeating: 0, count: limit)
    let count = try retryingInterrupts("recv") { Glibc.recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT)) }
    return String(decoding: buffer[0..<count], as: UTF8.self)
  }

  /// The credentials of the process at the other end of a connected socket (SO_PEERCRED).
  public func peerCredentials() throws(SystemError) -> (pid: pid_t, uid: uid_t, gid: gid_t) {
    var pid: pid_t = 0
    var uid: uid_t = 0
    var gid: gid_t = 0
    try retryingInterrupts("getsockopt", "SO_PEERCRED") { shim_peer_credentials(descriptor, &pid, &uid, &gid) }
    return (pid, uid, gid)
  }

  private static func socketAddress(_ path: String) throws(SystemError) -> sockaddr_un {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard bytes.count < capacity else {
      throw SystemError("socket", errno: ENAMETOOLONG, context: "\(path) is longer than \(capacity - 1) bytes")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in bytes.enumerated() { raw[index] = byte }
      // "@name" is Linux's abstract namespace: a leading NUL byte.
      if bytes.first == UInt8(ascii: "@") { raw[0] = 0 }
    }
    return address
  }
}
