import LinuxSupport
import WebTLS
import WorkoutWeb

#if canImport(Glibc)
  import Glibc
#endif

/// A connection the server has no place for is told so in HTTP: a 503 with Retry-After that
/// the browser can read and show, never a reset.
extension WebServer {
  /// Seconds a refused connection is read from after its answer, until the client closes.
  static let refusalLinger = 1.0
  static let busyRetryAfter = 5

  /// Answers a connection `clients` refused, on a thread of `refusing` (a client sending slowly
  /// does not hold up accepting); with none free (a flood of refusals), at once here.
  func refuse(_ client: TCPSocket, _ refusal: ClientCounts.Refusal) {
    let text =
      switch refusal {
      case .peerFull:
        "busy: \(Self.connectionsPerAddress) connections from this address are open; close a tab and try again"
      case .full: "busy: \(settings.maximumClients) connections are open; try again"
      }
    routes.noteRefusal("a connection from \(client.peer): \(text)", now: SystemClocks.monotonic())
    let answer = HTTPResponse.error(503, text, headers: [("Retry-After", String(Self.busyRetryAfter))])
      .serialized(keepAlive: false)
    let tls = self.tls
    let lingering = refusing.start(
      name: "web refusal", { Self.answer(client, answer, tls: tls, lingering: Self.refusalLinger) },
      closing: { client.close() })
    guard lingering != nil else { return }
    // No thread free: a plain answer at once (an HTTPS client sees the connection end).
    Self.answer(client, answer, tls: nil, lingering: 0.01)
    client.close()
  }

  /// Sends `bytes`, ends our side (FIN), then reads and drops what the client sends until it
  /// closes or `lingering` seconds pass. Closing a socket with unread data in it resets the
  /// connection (RFC 1122 4.2.2.13), and a client may lose the answer to the reset before it
  /// reads it; a request that came with the connection is such data.
  /// With `tls`, a client that opens with a TLS handshake is answered over TLS, the only way
  /// an HTTPS browser can read it.
  static func answer(_ client: TCPSocket, _ bytes: [UInt8], tls: TLSServerContext?, lingering: Double) {
    if let tls {
      let deadline = SystemClocks.monotonic() + 2
      guard let first = try? client.peek(deadline: deadline) else { return }
      if first == 22 {
        guard
          let connection = try? TLSConnection(accepting: client, context: tls, deadline: deadline, sendTimeout: 0.5)
        else { return }
        defer { connection.end() }
        try? connection.send(bytes)
        let end = SystemClocks.monotonic() + lingering
        while let chunk = try? connection.receive(deadline: end), !chunk.isEmpty {}
        return
      }
    }
    try? client.setSendTimeout(seconds: 0.5)
    try? client.send(bytes)
    _ = shutdown(client.descriptor, Int32(SHUT_WR))
    let deadline = SystemClocks.monotonic() + lingering
    while let chunk = try? client.receive(deadline: deadline), !chunk.isEmpty {}
  }
}
