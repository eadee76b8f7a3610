import Foundation
import LinuxSupport
import Logging
import Synchronization
import WorkoutControl
import WorkoutCore
import WorkoutExport
import WorkoutReports
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

/// The board's web server: a phone's browser as its screen (issue 17). A small HTTP/1.1 server
/// on the service's own sockets, a thread per connection as the control socket has (at most
/// `maximumClients`), so an idle board with no phone never wakes for it. What it serves:
///
/// - the page (`board/web`: HTML, CSS, JavaScript; no CDN, nothing fetched from elsewhere);
/// - `POST /api/pair`: a one-time code from `workoutctl pair` for a long-lived token, in an
///   HttpOnly, SameSite=Strict cookie; the database keeps its SHA-256 only;
/// - with a token: `GET /api/status`, `GET /api/live` (server-sent events: the status as the
///   engine has it, once a second and at each change made here), `POST /api/control` (start,
///   pause, resume, lap, stop: the same engine path as the buttons and `workoutctl`);
///
/// Every request that changes something must come from the board's own page (its Origin is
/// this server as the browser reached it). Tokens never appear in logs or URLs.
final class WebServer: @unchecked Sendable {
  let settings: WebSettings
  let assets: String
  private let listener: TCPListener
  private let store: WorkoutStore
  private let queue: InputQueue<RuntimeMessage>
  private let log: Logger
  let feed: LiveFeed

  private struct State {
    var stopping = false
    var finished = false
    var connections = 0
    var open: [ObjectIdentifier: TCPSocket] = [:]
  }
  private let state = Mutex(State())
  private let desk = Mutex(PairingDesk())
  /// Tokens in use (hash -> the phone's row), read from the database at start and kept with it.
  private let tokens = Mutex([String: WebClientRecord]())
  /// When each phone's last-seen time was last written (CLOCK_MONOTONIC).
  private let touched = Mutex([Int64: Double]())
  /// Refusals logged once per minute at most, counted between.
  private let refusals = Mutex((logged: -Double.infinity, unlogged: 0))

  /// Seconds a connection may sit idle between requests, and a request may take to arrive.
  static let idleTimeout = 15.0
  static let requestDeadline = 5.0

  /// Where a download is written before it is sent (the runtime directory).
  private let scratchDirectory: String

  init(
    settings: WebSettings, store: WorkoutStore, queue: InputQueue<RuntimeMessage>, log: Logger,
    scratchDirectory: String
  ) throws(WebServerError) {
    self.scratchDirectory = scratchDirectory
    self.settings = settings
    self.store = store
    self.queue = queue
    self.log = log
    guard let assets = settings.assets ?? WebAssets.find() else {
      throw .noAssets(WebAssets.candidates())
    }
    guard FileManager.default.fileExists(atPath: assets + "/index.html") else {
      throw .noAssets([assets])
    }
    self.assets = assets
    do {
      listener = try TCPListener.listen(host: settings.address, port: settings.port)
    } catch {
      throw .cannotListen("\(settings.address):\(settings.port)", error.description)
    }
    feed = LiveFeed(queue: queue, log: log)
    do {
      var known: [String: WebClientRecord] = [:]
      for client in try store.webClients() where client.revokedWall == nil { known[client.tokenHash] = client }
      tokens.withLock { $0 = known }
    } catch {
      log(.error, "web: cannot read the paired phones from \(store.path): \(error); none can use the page until it can")
    }
  }

  var port: Int { listener.port }

  func start() {
    do {
      try DeviceThread.detach(name: "web") { [self] in serve() }
      feed.start()
    } catch {
      log(.error, "web: cannot start its thread: \(error)")
    }
  }

  func stop() {
    state.withLock { $0.stopping = true }
    listener.shutDown()
    feed.stop()
    for socket in state.withLock({ Array($0.open.values) }) { socket.shutDown() }
    for _ in 0..<200 where state.withLock({ !$0.finished || $0.connections > 0 }) { usleep(10_000) }
    listener.close()
  }

  private func serve() {
    defer { state.withLock { $0.finished = true } }
    while !state.withLock({ $0.stopping }) {
      let client: TCPSocket?
      do {
        client = try listener.accept()
      } catch {
        if state.withLock({ $0.stopping }) { break }
        log(.warning, "web: \(error)")
        usleep(100_000)
        continue
      }
      guard let client else { continue }
      let admitted = state.withLock { state -> Bool in
        guard !state.stopping, state.connections < settings.maximumClients else { return false }
        state.connections += 1
        state.open[ObjectIdentifier(client)] = client
        return true
      }
      guard admitted else {
        try? client.setSendTimeout(seconds: 0.5)
        try? client.send(
          HTTPResponse.error(503, "busy: \(settings.maximumClients) connections are open").serialized(keepAlive: false))
        client.close()
        continue
      }
      do {
        try DeviceThread.detach(name: "web client") { [self] in
          defer {
            state.withLock {
              $0.connections -= 1
              $0.open[ObjectIdentifier(client)] = nil
            }
            client.close()
          }
          converse(with: client)
        }
      } catch {
        state.withLock {
          $0.connections -= 1
          $0.open[ObjectIdentifier(client)] = nil
        }
        client.close()
      }
    }
  }

  /// Requests one after another on a connection (HTTP/1.1 keep-alive), until the peer closes,
  /// idles, errs, or a live feed takes the connection over.
  private func converse(with client: TCPSocket) {
    var parser = HTTPRequestParser()
    try? client.setSendTimeout(seconds: 5)
    var started: Double?
    while !state.withLock({ $0.stopping }) {
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
        if started == nil { started = now }
        parser.append(bytes)
        continue
      }
      started = nil
      switch respond(to: request) {
      case .response(let response):
        let keepAlive = request.keepsAlive
        do {
          try client.send(response.serialized(keepAlive: keepAlive))
        } catch {
          return
        }
        if !keepAlive { return }
      case .liveFeed:
        streamLiveFeed(to: client)
        return
      case .download(let id, let format):
        sendFile(of: id, format: format, to: client)
        return
      }
    }
  }

  enum Outcome {
    case response(HTTPResponse)
    case liveFeed
    /// A session's file in a format, streamed as it is written.
    case download(Int64, ExportFormat)
  }

  func respond(to request: HTTPRequest) -> Outcome {
    switch (request.method, request.path) {
    case ("GET", "/"), ("HEAD", "/"), ("GET", "/index.html"):
      return .response(asset("index.html"))
    case ("GET", let path) where WebAssets.served.keys.contains(String(path.dropFirst())):
      return .response(asset(String(path.dropFirst())))
    case ("POST", "/api/pair"):
      return .response(pair(request))
    case ("GET", "/api/status"):
      guard authorised(request) != nil else { return .response(unauthorised()) }
      guard let reply = ask(ControlRequest(command: .status)), let status = reply.status,
        let json = try? ControlJSON.encode(status)
      else { return .response(.error(503, "the engine did not answer in time")) }
      return .response(.json(200, json))
    case ("GET", "/api/live"):
      guard authorised(request) != nil else { return .response(unauthorised()) }
      return .liveFeed
    case ("POST", "/api/control"):
      guard authorised(request) != nil else { return .response(unauthorised()) }
      if let refusal = crossOrigin(request) { return .response(refusal) }
      return .response(control(request))
    case ("POST", "/api/unpair"):
      guard let client = authorised(request) else { return .response(unauthorised()) }
      if let refusal = crossOrigin(request) { return .response(refusal) }
      _ = revoke(id: client.id ?? -1)
      return .response(.json(200, "{\"unpaired\":true}", headers: [("Set-Cookie", WebToken.clearCookie)]))
    case ("POST", "/api/annotate"):
      guard authorised(request) != nil else { return .response(unauthorised()) }
      if let refusal = crossOrigin(request) { return .response(refusal) }
      return .response(annotate(request))
    case ("GET", "/api/sessions"):
      guard authorised(request) != nil else { return .response(unauthorised()) }
      return .response(rides())
    case ("GET", let path) where path.hasPrefix("/api/sessions/"):
      guard authorised(request) != nil else { return .response(unauthorised()) }
      let rest = path.dropFirst("/api/sessions/".count).split(separator: "/", omittingEmptySubsequences: false)
      guard let id = Int64(rest.first ?? "") else { return .response(.error(404, "no such session")) }
      if rest.count == 1 { return .response(ride(id)) }
      if rest.count == 2, rest[1].hasPrefix("file."), let format = ExportFormat(rawValue: String(rest[1].dropFirst(5)))
      {
        return .download(id, format)
      }
      return .response(.error(404, "no such endpoint: \(path.prefix(80))"))
    case (_, "/api/pair"), (_, "/api/control"), (_, "/api/unpair"), (_, "/api/annotate"):
      return .response(.error(405, "use POST", headers: [("Allow", "POST")]))
    case (_, let path) where path.hasPrefix("/api/"):
      return .response(.error(404, "no such endpoint: \(path.prefix(80))"))
    default:
      return .response(.error(404, "not found"))
    }
  }

  // MARK: - Access

  /// The phone a request's token belongs to, or nil (no token, an unknown or revoked one).
  private func authorised(_ request: HTTPRequest) -> WebClientRecord? {
    guard let token = WebToken.fromCookies(request.header("cookie")), token.utf8.count <= 128 else { return nil }
    let hash = WebToken.hash(token)
    guard let client = tokens.withLock({ $0[hash] }) else {
      noteRefusal("a request with a token that is not (or no longer) paired")
      return nil
    }
    // Last seen, written at most once a minute per phone (each request is not a transaction).
    let now = SystemClocks.monotonic()
    if let id = client.id,
      touched.withLock({ touched in
        guard now - (touched[id] ?? -.infinity) >= 60 else { return false }
        touched[id] = now
        return true
      })
    {
      try? store.touchWebClient(id: id, wall: SystemClocks.wall())
    }
    return client
  }

  private func unauthorised() -> HTTPResponse {
    .error(401, "this phone is not paired: run `workoutctl pair` on the board and enter its code here")
  }

  /// A request that changes something must come from this server's own page.
  private func crossOrigin(_ request: HTTPRequest) -> HTTPResponse? {
    switch OriginCheck.verdict(origin: request.header("origin"), host: request.header("host")) {
    case .sameOrigin: return nil
    case .missingOrigin:
      noteRefusal("a request that changes something without an Origin")
      return .error(403, "refused: a request that changes something must come from the board's own page (no Origin)")
    case .crossOrigin(let origin):
      noteRefusal("a request from another site (\(origin.prefix(60)))")
      return .error(403, "refused: a request from another site (\(origin.prefix(60)))")
    }
  }

  /// One log line per minute at most for refused requests (a flood does not fill the journal).
  private func noteRefusal(_ what: String) {
    let now = SystemClocks.monotonic()
    let line: String? = refusals.withLock { state in
      guard now - state.logged >= 60 else {
        state.unlogged += 1
        return nil
      }
      let more = state.unlogged > 0 ? " (and \(state.unlogged) more refused since the last line)" : ""
      state = (now, 0)
      return "web: refused \(what)\(more)"
    }
    if let line { log(.warning, line) }
  }

  // MARK: - Pairing

  private func pair(_ request: HTTPRequest) -> HTTPResponse {
    if let refusal = crossOrigin(request) { return refusal }
    struct Body: Decodable {
      var code: String
      var name: String?
    }
    guard let body = try? JSONDecoder().decode(Body.self, from: Data(request.body)) else {
      return .error(400, "expected {\"code\": \"...\"}")
    }
    let now = SystemClocks.monotonic()
    switch desk.withLock({ $0.redeem(body.code, at: now) }) {
    case .accepted:
      break
    case .wrong:
      noteRefusal("a wrong pairing code")
      return .error(403, "that is not the code: check it, or run `workoutctl pair` again")
    case .noCode:
      noteRefusal("a pairing attempt with no code open")
      return .error(
        410, "no pairing code is open (it expired, was used, or too many wrong tries): run `workoutctl pair`")
    case .limited(let retryAfter):
      noteRefusal("pairing attempts beyond the limit")
      return .error(
        429, "too many wrong codes: try again in \(Int(retryAfter)) s", headers: [("Retry-After", "\(Int(retryAfter))")]
      )
    }
    let token = WebToken.make()
    let name = String((body.name ?? request.header("user-agent") ?? "a browser").prefix(120))
    let record: WebClientRecord
    do {
      record = try store.addWebClient(
        WebClientRecord(name: name, tokenHash: WebToken.hash(token), pairedWall: SystemClocks.wall()))
    } catch {
      log(.error, "web: cannot keep a paired phone in \(store.path): \(error)")
      return .error(503, "the board cannot store the pairing (\(error)); try again")
    }
    tokens.withLock { $0[record.tokenHash] = record }
    log(.notice, "web: phone \(record.id ?? 0) paired (\(name.prefix(60)))")
    return .json(
      200, "{\"paired\":true,\"id\":\(record.id ?? 0)}", headers: [("Set-Cookie", WebToken.setCookie(token))])
  }

  /// The control socket's pairing commands.
  func handle(_ request: ControlRequest) -> ControlReply {
    switch request.command {
    case .pair:
      let code = desk.withLock { $0.issue(at: SystemClocks.monotonic()) }
      log(.notice, "web: a pairing code was issued (valid \(Int(PairingDesk.codeLifetime)) s)")
      return ControlReply(
        ok: true,
        pairing: PairingReport(code: code.text, expiresIn: PairingDesk.codeLifetime, urls: urls(code: code.text)))
    case .listPairings:
      do {
        let clients = try store.webClients().map {
          WebClientReport(
            id: $0.id ?? 0, name: $0.name, paired: $0.pairedWall, lastSeen: $0.lastSeenWall, revoked: $0.revokedWall)
        }
        return ControlReply(ok: true, webClients: clients)
      } catch {
        return ControlReply(ok: false, message: "cannot read the paired phones: \(error)")
      }
    case .revokePairing:
      guard let id = request.id else { return ControlReply(ok: false, message: "revokePairing needs id") }
      return revoke(id: id)
    default:
      return ControlReply(ok: false, message: "not a pairing command")
    }
  }

  private func revoke(id: Int64) -> ControlReply {
    do {
      guard try store.revokeWebClient(id: id, wall: SystemClocks.wall()) else {
        return ControlReply(ok: false, message: "no paired phone \(id) (see workoutctl pair --list)")
      }
    } catch {
      return ControlReply(ok: false, message: "cannot revoke phone \(id): \(error)")
    }
    tokens.withLock { tokens in tokens = tokens.filter { $0.value.id != id } }
    log(.notice, "web: phone \(id) revoked")
    return ControlReply(ok: true, message: "phone \(id) revoked")
  }

  private func urls(code: String) -> [String] {
    let hosts: [String]
    switch settings.address {
    case "0.0.0.0", "::", "": hosts = NetworkInterfaces.ipv4Addresses()
    default: hosts = [settings.address.contains(":") ? "[\(settings.address)]" : settings.address]
    }
    let port = listener.port == 80 ? "" : ":\(listener.port)"
    return hosts.map { "http://\($0)\(port)/#pair=\(code)" }
  }

  // MARK: - Control and the live feed

  private func ask(_ request: ControlRequest) -> ControlReply? {
    let box = ReplyBox()
    queue.post(.control(request, box))
    return box.wait(seconds: 10)
  }

  private func control(_ request: HTTPRequest) -> HTTPResponse {
    struct Body: Decodable { var command: String }
    let allowed: [String: ControlCommand] = [
      "start": .start, "pause": .pause, "resume": .resume, "lap": .lap, "stop": .stop,
    ]
    guard let body = try? JSONDecoder().decode(Body.self, from: Data(request.body)),
      let command = allowed[body.command]
    else {
      return .error(400, "expected {\"command\": one of \(allowed.keys.sorted().joined(separator: ", "))}")
    }
    guard let reply = ask(ControlRequest(command: command)), let json = try? ControlJSON.encode(reply) else {
      return .error(503, "the engine did not answer in time")
    }
    feed.refresh()
    return .json(reply.ok ? 200 : 409, json)
  }

  /// A drink, a note, an RPE or a mood, for the current workout or `session`.
  private func annotate(_ request: HTTPRequest) -> HTTPResponse {
    struct Body: Decodable {
      var kind: String
      var amount: Double?
      var text: String?
      var value: Double?
      var mood: String?
      var session: Int64?
    }
    guard let body = try? JSONDecoder().decode(Body.self, from: Data(request.body)) else {
      return .error(400, "expected {\"kind\": \"drink\"|\"note\"|\"rpe\"|\"mood\", ...}")
    }
    let annotation: Annotation
    do {
      annotation = try Annotation(
        kind: body.kind, amount: body.amount, text: body.text, value: body.value, mood: body.mood)
    } catch {
      return .error(400, error.description)
    }
    let box = ReplyBox()
    queue.post(.annotate(annotation, sessionID: body.session, box))
    guard let reply = box.wait(seconds: 10), let json = try? ControlJSON.encode(reply) else {
      return .error(503, "the engine did not answer in time")
    }
    return .json(reply.ok ? 200 : 409, json)
  }

  /// The live feed: an event with the status at once, then each new one, and a comment every
  /// 15 s when nothing changed, until the phone goes or the service stops.
  private func streamLiveFeed(to client: TCPSocket) {
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
    while !state.withLock({ $0.stopping }) {
      let next = feed.next(after: seen, until: SystemClocks.monotonic() + 15)
      do {
        switch next {
        case .status(let sequence, let json):
          seen = sequence
          try client.send(HTTPResponse.event(json, name: "status", id: String(sequence)))
        case .quiet:
          try client.send(Array(": still here\n\n".utf8))
        case .stopped:
          return
        }
      } catch {
        return
      }
    }
  }

  // MARK: - The rides

  /// A connection of its own for the pages' reads (WAL: beside the engine's writes, never
  /// holding them up), opened per request with a small cache.
  private func readingStore() throws(StoreError) -> WorkoutStore {
    try WorkoutStore.openForReading(at: store.path, cacheKiB: 256)
  }

  private func rides() -> HTTPResponse {
    do {
      let reader = try readingStore()
      let list = try reader.sessions(limit: 200).map { try SessionSummaryJSON(record: $0, store: reader) }
      return .json(200, try ControlJSON.encode(list))
    } catch {
      return .error(503, "cannot read the sessions: \(error)")
    }
  }

  /// What the ride page draws: the summary, laps, events, time in zone and metrics (as `show`
  /// gives them), and at most `chartPoints` points for the charts (every n-th).
  static let chartPoints = 600

  struct RideJSON: Encodable {
    var session: SessionSummaryJSON
    var laps: [LapRecord]
    var events: [EventRecord]
    var training: TrainingJSON
    var samples: Samples
    var formats: [String]
    /// Its rows a damaged record made unreadable, left out of all of the above (as `show` says).
    var unreadable: UnreadableRows

    struct Samples: Encodable {
      var timer: [Double] = []
      var distance: [Double] = []
      var latitude: [Double?] = []
      var longitude: [Double?] = []
      var altitude: [Double?] = []
      var speed: [Double?] = []
      var heartRate: [Int?] = []
      var power: [Int?] = []
      var cadence: [Double?] = []
    }
  }

  private func ride(_ id: Int64) -> HTTPResponse {
    do {
      let reader = try readingStore()
      guard let record = try reader.session(id: id) else { return .error(404, "no session \(id)") }
      let summary = try SessionSummaryJSON(record: record, store: reader)
      let laps = try reader.laps(sessionID: id)
      let events = try reader.events(sessionID: id)
      let training = try TrainingJSON(
        store: reader, sessionID: id, endTimer: summary.timer, events: events, laps: laps,
        firstActivity: summary.activity)
      let count = try reader.pointCount(sessionID: id)
      let step = max(1, (count + Self.chartPoints - 1) / Self.chartPoints)
      var samples = RideJSON.Samples()
      var from = 0
      while true {
        let page = try reader.points(sessionID: id, from: from, limit: 2000)
        guard let last = page.last else { break }
        for point in page where point.seq % step == 0 {
          samples.timer.append(point.timer)
          samples.distance.append(point.distance)
          samples.latitude.append(point.lat)
          samples.longitude.append(point.lon)
          samples.altitude.append(point.altBaro ?? point.altGPS)
          samples.speed.append(point.wheelSpeed ?? point.speed)
          samples.heartRate.append(point.hr)
          samples.power.append(point.power)
          samples.cadence.append(point.cadence)
        }
        from = last.seq + 1
      }
      let ride = RideJSON(
        session: summary, laps: laps, events: events, training: training, samples: samples,
        formats: ExportFormat.allCases.map(\.rawValue), unreadable: try reader.unreadableRows(sessionID: id))
      return .json(200, try ControlJSON.encode(ride))
    } catch {
      return .error(503, "cannot read session \(id): \(error)")
    }
  }

  /// Writes the file into the scratch directory as the exporter does (point pages streamed
  /// from the store: flat memory however long the ride), sends it, removes it.
  private func sendFile(of id: Int64, format: ExportFormat, to client: TCPSocket) {
    let directory = scratchDirectory + "/web-\(UInt32.random(in: 0...UInt32.max))"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let written: ExportFile.Written
    do {
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      let reader = try readingStore()
      guard let record = try reader.session(id: id) else {
        try? client.send(HTTPResponse.error(404, "no session \(id)").serialized(keepAlive: false))
        return
      }
      written = try ExportFile.write(record, from: reader, format: format, into: directory)
    } catch {
      log(.warning, "web: cannot make session \(id)'s \(format.rawValue): \(error)")
      try? client.send(HTTPResponse.error(503, "cannot make the file: \(error)").serialized(keepAlive: false))
      return
    }
    guard let handle = FileHandle(forReadingAtPath: written.path) else { return }
    defer { try? handle.close() }
    let types: [ExportFormat: String] = [
      .fit: "application/vnd.ant.fit", .gpx: "application/gpx+xml", .tcx: "application/vnd.garmin.tcx+xml",
      .csv: "text/csv; charset=utf-8",
    ]
    let head = HTTPResponse(
      status: 200, contentType: types[format],
      headers: [("Content-Disposition", "attachment; filename=\"\(written.name)\"")])
    do {
      try client.send(head.head(contentLength: Int(written.bytes), keepAlive: false))
      while true {
        let chunk = handle.readData(ofLength: 65536)
        if chunk.isEmpty { break }
        try client.send(chunk)
      }
    } catch {
      return
    }
  }

  private func asset(_ name: String) -> HTTPResponse {
    guard let type = WebAssets.served[name],
      let data = FileManager.default.contents(atPath: assets + "/" + name)
    else { return .error(404, "not found") }
    return HTTPResponse(status: 200, contentType: type, body: Array(data))
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

/// The page's files: which are served, and where they are found.
enum WebAssets {
  static let served: [String: String] = [
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
  ]

  static func candidates() -> [String] {
    SharedData.candidates(installed: "web", inSourceTree: "board/web")
  }

  static func find() -> String? {
    candidates().first { FileManager.default.fileExists(atPath: $0 + "/index.html") }
  }
}

/// The status as phones see it. The engine hands it over after each commit while a phone
/// watches (`wanted`, an atomic read: nothing is made for nobody), so the live feed costs the
/// engine no extra wake-up; when nothing was committed for 2 s (no session, an idle board), or
/// at once after a control from the page, this thread asks the engine itself. With no watcher
/// its thread sleeps without a timeout: no wake-ups on an idle board.
final class LiveFeed: @unchecked Sendable {
  enum Next {
    case status(Int, String)
    case quiet
    case stopped
  }

  /// The feed thread's wake-ups (a watcher came, a status was handed, a refresh asked) apart
  /// from the watchers' (a new status), so neither wakes the other's threads for nothing.
  private let work = MonotonicCondition()
  private let news = MonotonicCondition()
  private let queue: InputQueue<RuntimeMessage>
  private let log: Logger
  private let watching = Atomic<Int>(0)
  // Guarded by `work`.
  private var watchers = 0
  private var refreshAsked = false
  private var handed: StatusReport?
  private var feedStopping = false
  // Guarded by `news`.
  private var sequence = 0
  private var latest = ""
  private var stopping = false
  /// Seconds without a status from the engine before this thread asks for one.
  static let askAfter = 2.0

  init(queue: InputQueue<RuntimeMessage>, log: Logger) {
    self.queue = queue
    self.log = log
  }

  /// Whether anyone watches (the engine thread asks before making a status).
  var wanted: Bool { watching.load(ordering: .relaxed) > 0 }

  /// The engine's status after a commit, taken on the engine thread: encoded on this one.
  func hand(_ status: StatusReport) {
    work.locked { handed = status }
    // Signalled after the mutex is let go: the feed thread wakes to a free mutex, not to wait
    // for this one (a second context switch).
    work.signal()
  }

  func start() {
    do {
      try DeviceThread.detach(name: "web feed") { [self] in run() }
    } catch {
      log(.error, "web: cannot start the live feed's thread: \(error)")
    }
  }

  func stop() {
    work.locked {
      feedStopping = true
      work.signal()
    }
    news.locked {
      stopping = true
      news.broadcast()
    }
  }

  func subscribe() {
    work.locked {
      watchers += 1
      watching.wrappingAdd(1, ordering: .relaxed)
      refreshAsked = true
      work.signal()
    }
  }

  func unsubscribe() {
    work.locked {
      watchers -= 1
      watching.wrappingSubtract(1, ordering: .relaxed)
    }
  }

  /// Asks for a new status now (after a control from the page).
  func refresh() {
    work.locked {
      refreshAsked = true
      work.signal()
    }
  }

  func next(after seen: Int, until deadline: Double) -> Next {
    news.locked {
      while !stopping && sequence <= seen {
        if !news.wait(until: deadline) { return stopping ? .stopped : .quiet }
      }
      return stopping ? .stopped : .status(sequence, latest)
    }
  }

  private func publish(_ status: StatusReport) {
    guard let json = try? ControlJSON.encode(status) else { return }
    news.locked {
      sequence += 1
      latest = json
    }
    news.broadcast()
  }

  private func run() {
    var lastPublished = -Double.infinity
    while true {
      enum Work {
        case stop
        case publish(StatusReport)
        case ask
      }
      let next = work.locked { () -> Work in
        while true {
          if feedStopping { return .stop }
          if watchers == 0 {
            handed = nil
            _ = work.wait(until: nil)
            continue
          }
          if let status = handed {
            handed = nil
            return .publish(status)
          }
          if refreshAsked || SystemClocks.monotonic() >= lastPublished + Self.askAfter {
            refreshAsked = false
            return .ask
          }
          _ = work.wait(until: lastPublished + Self.askAfter)
        }
      }
      switch next {
      case .stop:
        return
      case .publish(let status):
        publish(status)
        lastPublished = SystemClocks.monotonic()
      case .ask:
        let box = ReplyBox()
        queue.post(.control(ControlRequest(command: .status), box))
        if let status = box.wait(seconds: 5)?.status { publish(status) }
        lastPublished = SystemClocks.monotonic()
      }
    }
  }
}
