import CTLS
import LinuxSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A TLS server context (OpenSSL's `SSL_CTX`): TLS 1.2 and 1.3 with the board's identity.
///
/// `@unchecked Sendable`: OpenSSL's contexts are safe to share once set up (connections made
/// from it on any thread); this one is never changed after `init`.
public final class TLSServerContext: @unchecked Sendable {
  let context: ctls_context

  public convenience init(_ identity: TLSIdentity) throws(TLSError) {
    try self.init(certificatePEM: identity.certificatePEM, keyPEM: identity.keyPEM)
  }

  init(certificatePEM: [UInt8], keyPEM: [UInt8]) throws(TLSError) {
    try loadOpenSSL()
    var error = [CChar](repeating: 0, count: 256)
    let made = certificatePEM.withUnsafeBufferPointer { certificate in
      keyPEM.withUnsafeBufferPointer { key in
        certificate.withMemoryRebound(to: CChar.self) { certificate in
          key.withMemoryRebound(to: CChar.self) { key in
            ctls_server_context(
              certificate.baseAddress, certificate.count, key.baseAddress, key.count, &error, error.count)
          }
        }
      }
    }
    guard let made else { throw TLSError.from(error, "the key and certificate do not make a TLS server") }
    context = made
  }

  deinit { ctls_context_free(context) }
}

/// One client's TLS connection on its TCP socket, used by the one thread that serves it: the
/// socket is made non-blocking, and each wait is a `poll` with a deadline, as the plain
/// socket's are. The socket itself stays the caller's to shut down and close.
///
/// `@unchecked Sendable`: the OpenSSL connection is only touched by the thread serving it.
public final class TLSConnection: @unchecked Sendable {
  public let socket: TCPSocket
  private let connection: ctls_connection
  /// How long a write may wait for room, as SO_SNDTIMEO does for a plain socket.
  private let sendTimeout: Double
  private var ended = false

  /// Runs the server's handshake until `deadline` (CLOCK_MONOTONIC seconds).
  public init(
    accepting socket: TCPSocket, context: TLSServerContext, deadline: Double, sendTimeout: Double = 5
  ) throws(TLSError) {
    do {
      try socket.setNonBlocking()
    } catch {
      throw TLSError("\(error)")
    }
    guard let connection = ctls_accepting(context.context, socket.descriptor) else {
      throw TLSError("cannot start a TLS connection")
    }
    self.socket = socket
    self.connection = connection
    self.sendTimeout = sendTimeout
    var error = [CChar](repeating: 0, count: 256)
    while true {
      let step = ctls_handshake(connection, &error, error.count)
      if step == CTLS_DONE { return }
      try wait(for: step, until: deadline, error, "the TLS handshake")
    }
  }

  deinit {
    if !ended { ctls_close(connection) }
  }

  /// "TLSv1.3".
  public var protocolName: String { String(cString: ctls_protocol(connection)) }

  /// Reads what has arrived, up to `maximum` bytes, waiting until `deadline` for the first:
  /// empty at the end of the stream.
  public func receive(maximum: Int = 4096, deadline: Double) throws(TLSError) -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: maximum)
    var error = [CChar](repeating: 0, count: 256)
    while true {
      var count: Int32 = 0
      let step = buffer.withUnsafeMutableBytes {
        ctls_read(connection, $0.baseAddress, Int32(maximum), &count, &error, error.count)
      }
      switch step {
      case CTLS_DONE:
        buffer.removeLast(maximum - Int(count))
        return buffer
      case CTLS_CLOSED:
        return []
      default:
        try wait(for: step, until: deadline, error, "reading")
      }
    }
  }

  /// Writes all of `bytes`, waiting for room up to the send timeout each time.
  public func send(_ bytes: some Collection<UInt8>) throws(TLSError) {
    let data = Array(bytes)
    var error = [CChar](repeating: 0, count: 256)
    var sent = 0
    while sent < data.count {
      // A record at a time: SSL_write takes all it is given or nothing.
      let size = min(data.count - sent, 16_384)
      let step = data.withUnsafeBytes {
        ctls_write(connection, $0.baseAddress! + sent, Int32(size), &error, error.count)
      }
      if step == CTLS_DONE {
        sent += size
        continue
      }
      if step == CTLS_CLOSED { throw TLSError("the peer closed the connection") }
      try wait(for: step, until: SystemClocks.monotonic() + sendTimeout, error, "writing")
    }
  }

  /// Says goodbye (close_notify) and frees the connection; the socket is left to its owner.
  public func end() {
    guard !ended else { return }
    ended = true
    ctls_close(connection)
  }

  /// Waits for what `step` asks, or throws what it says went wrong.
  private func wait(for step: ctls_result, until deadline: Double, _ error: [CChar], _ what: String) throws(TLSError) {
    let events: Int32
    switch step {
    case CTLS_WANT_READ: events = Int32(POLLIN)
    case CTLS_WANT_WRITE: events = Int32(POLLOUT)
    case CTLS_CLOSED: throw TLSError("\(what): the peer closed the connection")
    default: throw TLSError.from(error, what)
    }
    let left = deadline - SystemClocks.monotonic()
    guard left > 0 else { throw TLSError("\(what): timed out") }
    var poller = pollfd(fd: socket.descriptor, events: Int16(events), revents: 0)
    let ready = poll(&poller, 1, Int32(min(left, 86_400) * 1000) + 1)
    if ready == 0 { throw TLSError("\(what): timed out") }
    if ready < 0, Glibc.errno != EINTR { throw TLSError("\(what): poll failed") }
  }
}
