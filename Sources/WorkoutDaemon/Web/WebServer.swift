import Foundation
import LinuxSupport
import Logging
import Synchronization
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
  public var port = 8080
  /// The page's files (board/web); nil: found next to the binary or in the system's data
  /// directories.
  public var assets: String?
  /// Connections at once; a phone holds one for its live feed and opens a few for the page.
  public var maximumClients = 16

  public init() {}
}

/// The board's web server: a phone's browser as its screen. A small HTTP/1.1 server on the
/// service's own sockets, a thread per connection as the control socket has (at most
/// `maximumClients`), so an idle board with no phone never wakes for it. This file is its
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

  let stopping = StopSignal()
  private let clients: ClientThreads
  private var acceptThread: DeviceThread?
  /// The clients' sockets, shut down at stop so a client waiting for its next request ends.
  private let open = Mutex([ObjectIdentifier: TCPSocket]())

  /// Seconds a connection may sit idle between requests, and a request may take to arrive.
  static let idleTimeout = 15.0
  static let requestDeadline = 5.0

  /// Where a download is written before it is sent (the runtime directory).
  let scratchDirectory: String

  init(
    settings: WebSettings, store: WorkoutStore, queue: InputQueue<RuntimeMessage>, log: Logger,
    scratchDirectory: String
  ) throws(WebServerError) {
    self.scratchDirectory = scratchDirectory
    self.settings = settings
    clients = ClientThreads(limit: settings.maximumClients)
    guard let assets = settings.assets ?? WebAssets.find() else {
      throw .noAssets(WebAssets.candidates())
    }
    guard FileManager.default.fileExists(atPath: assets + "/index.html") else {
      throw .noAssets([assets])
    }
    do {
      listener = try TCPListener.listen(host: settings.address, port: settings.port)
    } catch {
      throw .cannotListen("\(settings.address):\(settings.port)", error.description)
    }
    routes = WebRoutes(
      settings: settings, assets: assets, port: listener.port, store: store, queue: queue, log: log,
      feed: LiveFeed(queue: queue, log: log))
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
      let started = clients.start(
        name: "web client", { [self] in converse(with: client) },
        closing: { [self] in
          open.withLock { $0[key] = nil }
          client.close()
        })
      guard !started else { continue }
      open.withLock { $0[key] = nil }
      try? client.setSendTimeout(seconds: 0.5)
      try? client.send(
        HTTPResponse.error(503, "busy: \(settings.maximumClients) connections are open").serialized(keepAlive: false))
      client.close()
    }
  }

  /// Requests one after another on a connection (HTTP/1.1 keep-alive), until the peer closes,
  /// idles, errs, or a live feed takes the connection over.
  private func converse(with client: TCPSocket) {
    var parser = HTTPRequestParser()
    try? client.setSendTimeout(seconds: 5)
    var started: Double?
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
        let deadline = started.map { $0 + Self.requestDeadline } ?? now + Self.idleTimeout
        guard let bytes = try? client.receive(deadline: deadline), !bytes.isEmpty else { return }
        // The request's time counts from its first byte, not from the idle wait before it.
        if started == nil { started = SystemClocks.monotonic() }
        parser.append(bytes)
        continue
      }
      started = nil
      switch routes.respond(to: request, now: SystemClocks.monotonic(), wall: SystemClocks.wall()) {
      case .response(let response):
        let keepAlive = request.keepsAlive
        do {
          try client.send(response.serialized(keepAlive: keepAlive))
        } catch {
          return
        }
        if !keepAlive { return }
      case .liveFeed(let phone):
        streamLiveFeed(to: client, phone: phone)
        return
      case .download(let id, let format):
        sendFile(of: id, format: format, to: client)
        return
      }
    }
  }

  /// The live feed: an event with the status at once, then each new one, and a comment every
  /// 15 s when nothing changed, until the phone goes, is revoked, or the service stops.
  private func streamLiveFeed(to client: TCPSocket, phone: Int64) {
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
      let next = feed.next(after: seen, for: phone, until: SystemClocks.monotonic() + 15)
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

  var description: String {
    switch self {
    case .noAssets(let places):
      "the web page's files are not in \(places.joined(separator: ", ")) (set [web] assets to board/web)"
    case .cannotListen(let address, let reason): "cannot listen on \(address): \(reason)"
    }
  }
}
