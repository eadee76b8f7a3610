import Foundation
import LinuxSupport
import Logging
import Synchronization
import WebTLS
import WorkoutControl
import WorkoutStore
import WorkoutWeb

#if canImport(Glibc)
  import Glibc
#endif

/// `[web]`: the phone's screen. Off unless enabled.
public struct WebSettings: Sendable, Equatable {
  public var enabled = false
  /// Where it listens: all addresses by default, so a phone on the board's Wi-Fi reaches it.
  public var address = "0.0.0.0"
  /// The one network interface it listens on ("wlan0": the board's hotspot), whatever its
  /// addresses; nil: every interface with `address`.
  public var interface: String?
  public var port = 8080
  /// The page's files (board/web); nil: found next to the binary or in the system's data
  /// directories.
  public var assets: String?
  /// Connections at once; a phone holds one for its live feed and opens a few for the page.
  /// (At most `WebServer.connectionsPerAddress` of them from one address.)
  public var maximumClients = 16
  /// HTTPS: the token and the pairing code never cross the Wi-Fi in clear. Off, anyone on the
  /// network can read them and take over the page.
  public var tls = true
  /// The administrator's certificate (PEM, the chain after it) and key; nil: the board's own,
  /// made at first start in the state directory and signed by itself.
  public var certificate: String?
  public var key: String?
  /// Names the page is reached by besides the board's host name, that name with `.local` and
  /// `localhost` (a DNS name of your own): any other name in a request is refused.
  public var names: [String] = []
  /// Days a phone's pairing lasts (fractions allowed); 0: until it is revoked.
  public var tokenDays = 0.0

  /// When a phone paired at `pairedWall` (Unix time) stops being let in; nil: never.
  func tokenExpiry(pairedWall: Double) -> Double? {
    tokenDays > 0 ? pairedWall + tokenDays * 86_400 : nil
  }

  public init() {}
}

/// The board's web server: a phone's browser as its screen. A small HTTP/1.1 server on the
/// service's own sockets, a thread per connection as the control socket has (at most
/// `maximumClients`, `connectionsPerAddress` from one address; beyond, a 503 the client can read,
/// `WebRefusal.swift`), so an idle board with no phone never wakes for it. This file is its
/// transport (accepting, reading requests, the clock, stopping); what it answers is
/// `WebRoutes`, pairing in `WebPairing.swift`, the rides in `WebRides.swift`.
///
/// `@unchecked Sendable`: what threads share is behind a `Mutex` or in `stopping`, `clients`,
/// `routes` and `feed`; `acceptThread` is written by `start()` before that thread exists and
/// taken by `stop()` after the stop request.
final class WebServer: @unchecked Sendable {
  let settings: WebSettings
  let listener: TCPListener
  let routes: WebRoutes
  var log: Logger { routes.log }
  var feed: LiveFeed { routes.feed }

  /// HTTPS (`[web] tls`); nil: plain HTTP.
  let tls: TLSServerContext?
  let stopping = StopSignal()
  private let clients: ClientThreads
  /// Threads that see refused connections closed (`WebRefusal.swift`).
  let refusing = ClientThreads(limit: 8)
  private var acceptThread: DeviceThread?
  /// The files and ride pages made at once; other phones wait their turn. Each holds the
  /// ride's events and laps, a reading connection and buffers (860 KiB for a 12-hour ride), and
  /// a board's few cores make no more a second by making more at once: 16 made at once took
  /// the release service's peak RSS from 21 to 46 MiB, 4 to 29 (Benchmarks/downloads.py).
  let makers = Turns(places: WebServer.makersAtOnce)
  static let makersAtOnce = 4
  /// The clients' sockets, shut down at stop so a client waiting for its next request ends.
  private let open = Mutex([ObjectIdentifier: TCPSocket]())

  /// Seconds a connection may sit idle between requests, and a request may take to arrive.
  static let idleTimeout = 15.0
  static let requestDeadline = 5.0
  /// Idle seconds for a connection that has not shown a paired phone's token: a stranger's
  /// connection holds a place only briefly.
  static let strangerIdleTimeout = 5.0
  /// Connections at once from one address: 6, as many as a browser opens to one host (Chrome,
  /// Firefox, Safari), so a phone's own page is never refused whatever it loads at once, while
  /// one host's idle crowd leaves the other places to the rest.
  static let connectionsPerAddress = 6

  init(
    settings: WebSettings, identity: TLSIdentity?, store: WorkoutStore, queue: InputQueue<RuntimeMessage>,
    log: Logger
  ) throws(WebServerError) {
    do {
      tls = try identity.map { identity throws(TLSError) in try TLSServerContext(identity) }
    } catch {
      throw .tls(error.description)
    }
    self.settings = settings
    clients = ClientThreads(limit: settings.maximumClients, perPeer: Self.connectionsPerAddress)
    guard let assets = settings.assets ?? WebAssets.find() else {
      throw .noAssets(WebAssets.candidates())
    }
    guard FileManager.default.fileExists(atPath: assets + "/index.html") else {
      throw .noAssets([assets])
    }
    do {
      listener = try TCPListener.listen(host: settings.address, port: settings.port, device: settings.interface)
    } catch {
      let place = "\(settings.address):\(settings.port)" + (settings.interface.map { " on \($0)" } ?? "")
      throw .cannotListen(place, error.description)
    }
    routes = WebRoutes(
      settings: settings, assets: assets, port: listener.port, store: store, queue: queue, log: log,
      feed: LiveFeed(queue: queue, log: log), fingerprint: identity?.fingerprintText,
      names: Set(WebIdentity.boardNames().hostNames + settings.names))
  }

  var port: Int { listener.port }

  /// The control socket's pairing commands (`WebRoutes.handle`), at this moment.
  func handle(_ request: ControlRequest) -> ControlReply {
    routes.handle(request, now: SystemClocks.monotonic(), wall: SystemClocks.wall())
  }

  func start() throws(SystemError) {
    try feed.start()
    do {
      acceptThread = try DeviceThread.start(name: "web") { [self] in serve() }
    } catch {
      feed.stop()
      throw error
    }
  }

  /// Ends the accept loop, the live feeds and the connections, and waits for their threads
  /// (a download under way has its send timeout to end).
  func stop() {
    stopping.stop()
    listener.shutDown()
    acceptThread?.join()
    acceptThread = nil
    feed.stop()
    for socket in open.withLock({ Array($0.values) }) { socket.shutDown() }
    if !clients.waitUntilNone(until: SystemClocks.monotonic() + Self.requestDeadline + 1) {
      log(.warning, "web: a connection was still open at stop")
    }
    _ = refusing.waitUntilNone(until: SystemClocks.monotonic() + Self.refusalLinger + 1)
    listener.close()
  }

  private func serve() {
    while !stopping.isStopRequested {
      let client: TCPSocket?
      do {
        client = try listener.accept()
      } catch {
        if stopping.isStopRequested { return }
        log(.warning, "web: \(error)")
        if stopping.wait(seconds: 0.1) { return }
        continue
      }
      guard let client else { continue }
      let key = ObjectIdentifier(client)
      open.withLock { $0[key] = client }
      let refusal = clients.start(
        name: "web client", peer: client.peer, { [self] in converse(with: client) },
        closing: { [self] in
          open.withLock { $0[key] = nil }
          client.close()
        })
      guard let refusal else { continue }
      open.withLock { $0[key] = nil }
      refuse(client, refusal)
    }
  }

  /// The connection's TLS handshake, when the page is HTTPS, then its requests. A client that
  /// speaks plain HTTP to it is told where the page is, and nothing else.
  private func converse(with socket: TCPSocket) {
    guard let tls else {
      try? socket.setSendTimeout(seconds: 5)
      return converse(over: socket)
    }
    let deadline = SystemClocks.monotonic() + Self.requestDeadline
    // RFC 8446 §5.1: a TLS connection opens with a handshake record, content type 22.
    let first: UInt8?
    do {
      first = try socket.peek(deadline: deadline)
    } catch {
      log(.info, "web: a connection sent nothing within \(Int(Self.requestDeadline)) s: \(error)")
      return
    }
    guard let first else { return }
    guard first == 22 else { return refusePlainHTTP(on: socket) }
    let connection: TLSConnection
    do {
      connection = try TLSConnection(accepting: socket, context: tls, deadline: deadline)
    } catch {
      log(.info, "web: a TLS handshake failed: \(error)")
      return
    }
    defer { connection.end() }
    converse(over: connection)
  }

  /// Plain HTTP on the HTTPS port: a browser is sent to the page's https:// address; the request
  /// is not served, so a token sent in clear is never accepted.
  private func refusePlainHTTP(on socket: TCPSocket) {
    try? socket.setSendTimeout(seconds: 1)
    var parser = HTTPRequestParser()
    let deadline = SystemClocks.monotonic() + Self.requestDeadline
    var request: HTTPRequest?
    while request == nil {
      do {
        request = try parser.next()
      } catch {
        return
      }
      if request != nil { break }
      guard let bytes = try? socket.receive(deadline: deadline), !bytes.isEmpty else { return }
      parser.append(bytes)
    }
    guard let request else { return }
    try? socket.send(routes.plainHTTPRefusal(request).serialized(keepAlive: false))
  }

  /// Requests one after another on a connection (HTTP/1.1 keep-alive), until the peer closes,
  /// idles, errs, or a live feed takes the connection over.
  private func converse(over client: any WebConnection) {
    var parser = HTTPRequestParser()
    var started: Double?
    // Whether a request showed a paired phone's token: until then, the stranger's idle time.
    var paired = false
    while !stopping.isStopRequested {
      let request: HTTPRequest?
      do {
        request = try parser.next()
      } catch {
        try? client.send(HTTPResponse.error(error.status, error.description).serialized(keepAlive: false))
        return
      }
      guard let request else {
        let now = SystemClocks.monotonic()
        if parser.pendingBytes > 0, started == nil { started = now }
        let idle = paired ? Self.idleTimeout : Self.strangerIdleTimeout
        let deadline = started.map { $0 + Self.requestDeadline } ?? now + idle
        guard let bytes = try? client.receive(deadline: deadline), !bytes.isEmpty else { return }
        // The request's time counts from its first byte, not from the idle wait before it.
        if started == nil { started = SystemClocks.monotonic() }
        parser.append(bytes)
        continue
      }
      started = nil
      paired = paired || routes.pairedPhone(request) != nil
      switch routes.respond(to: request, from: client.peer, now: SystemClocks.monotonic(), wall: SystemClocks.wall()) {
      case .response(let response):
        let keepAlive = request.keepsAlive
        do {
          try client.send(response.serialized(keepAlive: keepAlive, method: request.method))
        } catch {
          return
        }
        if !keepAlive { return }
      case .liveFeed(let phone, let expires):
        streamLiveFeed(to: client, phone: phone, expires: expires)
        return
      case .download(let id, let format):
        makers.run(giveUp: { stopping.isStopRequested }) { sendFile(of: id, format: format, to: client) }
        return
      case .ride(let id):
        makers.run(giveUp: { stopping.isStopRequested }) { sendRide(id, to: client) }
        return
      }
    }
  }

  /// The live feed: an event with the status at once, then each new one, and a comment every
  /// 15 s when nothing changed, until the phone goes, is revoked, its pairing expires (`expires`,
  /// Unix time), or the service stops.
  private func streamLiveFeed(to client: any WebConnection, phone: Int64, expires: Double?) {
    do {
      try client.send(HTTPResponse.eventStreamHead())
      // The browser reconnects by itself after 2 s when the link drops (EventSource).
      try client.send(Array("retry: 2000\n\n".utf8))
    } catch {
      return
    }
    feed.subscribe()
    defer { feed.unsubscribe() }
    // The feed's first status is number 1.
    var seen = 0
    while !stopping.isStopRequested {
      let left = expires.map { $0 - SystemClocks.wall() } ?? .infinity
      if left <= 0 { return }
      let next = feed.next(after: seen, for: phone, until: SystemClocks.monotonic() + min(15, left))
      do {
        switch next {
        case .status(let sequence, let json):
          seen = sequence
          try client.send(HTTPResponse.event(json, name: "status", id: String(sequence)))
        case .quiet:
          try client.send(Array(": still here\n\n".utf8))
        case .stopped, .revoked:
          return
        }
      } catch {
        return
      }
    }
  }
}

/// Why the web server could not start: said at start-up, in one line.
enum WebServerError: Error, CustomStringConvertible {
  case noAssets([String])
  case cannotListen(String, String)
  case tls(String)

  var description: String {
    switch self {
    case .noAssets(let places):
      "the web page's files are not in \(places.joined(separator: ", ")) (set [web] assets to board/web)"
    case .cannotListen(let address, let reason): "cannot listen on \(address): \(reason)"
    case .tls(let reason): "no HTTPS: \(reason) (or set [web] tls = false, which sends the phone's token in clear)"
    }
  }
}

/// A connection a request is read from and its answer written to: the TCP socket, or the TLS
/// connection on it.
protocol WebConnection {
  /// The client's address ("192.168.4.20"), as accept gave it.
  var peer: String { get }
  func receive(maximum: Int, deadline: Double) throws -> [UInt8]
  func send(_ bytes: some Collection<UInt8>) throws
}

extension WebConnection {
  func receive(deadline: Double) throws -> [UInt8] { try receive(maximum: 4096, deadline: deadline) }
}

extension TCPSocket: WebConnection {
  func send(_ bytes: some Collection<UInt8>) throws { try send(bytes, timeout: 2) }
}

extension TLSConnection: WebConnection {
  var peer: String { socket.peer }
}
