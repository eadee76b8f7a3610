import Foundation
import LinuxSupport
import Logging
import Synchronization
import WorkoutControl
import WorkoutCore
import WorkoutExport
import WorkoutStore
import WorkoutWeb

/// What the web server answers, by method and path, and who may ask: a request and the time in,
/// an outcome out. It reads no clock and owns no socket: the transport (`WebServer.swift`)
/// reads the request, gives it the time, and sends or streams what it says.
///
/// `@unchecked Sendable`: what the connections' threads share is behind a `Mutex`; the rest
/// never changes after `init`.
final class WebRoutes: @unchecked Sendable {
  let settings: WebSettings
  let assets: String
  /// The port the page is served on, for the pairing links.
  let port: Int
  let store: WorkoutStore
  let queue: InputQueue<RuntimeMessage>
  let log: Logger
  let feed: LiveFeed
  /// The certificate's SHA-256 fingerprint when the page is HTTPS; nil: plain HTTP.
  let fingerprint: String?
  /// The names the page answers to, besides addresses (`HostCheck`), lowercased.
  let names: Set<String>
  let desk = Mutex(PairingDesk())
  /// Tokens in use (hash -> the phone's row), read from the database at start and kept with it.
  let tokens = Mutex([String: WebClientRecord]())
  /// When each phone's last-seen time was last written (CLOCK_MONOTONIC).
  let touched = Mutex([Int64: Double]())
  /// Refusals logged once per minute at most, counted between.
  let refusals = Mutex((logged: -Double.infinity, unlogged: 0))
  /// When each phone sent its notes of the last minute (CLOCK_MONOTONIC).
  let notesSent = Mutex([Int64: [Double]]())

  init(
    settings: WebSettings, assets: String, port: Int, store: WorkoutStore, queue: InputQueue<RuntimeMessage>,
    log: Logger, feed: LiveFeed, fingerprint: String? = nil, names: Set<String>
  ) {
    self.fingerprint = fingerprint
    self.names = Set(names.map { $0.lowercased() })
    self.settings = settings
    self.assets = assets
    self.port = port
    self.store = store
    self.queue = queue
    self.log = log
    self.feed = feed
    do {
      var known: [String: WebClientRecord] = [:]
      for client in try store.webClients() where client.revokedWall == nil { known[client.tokenHash] = client }
      tokens.withLock { $0 = known }
    } catch {
      log(.error, "web: cannot read the paired phones from \(store.path): \(error); none can use the page until it can")
    }
  }
}

extension WebRoutes {
  enum Outcome {
    case response(HTTPResponse)
    /// The live feed, for the phone with this id: it ends when that phone is revoked, or at
    /// its pairing's expiry (Unix time).
    case liveFeed(Int64, expires: Double?)
    /// A session's file in a format, streamed as it is written.
    case download(Int64, ExportFormat)
    /// A session's figures for the ride page (`RideJSON`), streamed as they are encoded.
    case ride(Int64)
  }

  /// - the page (`board/web`: HTML, CSS, JavaScript; no CDN, nothing fetched from elsewhere);
  /// - `POST /api/pair`: a one-time code for a token (`WebPairing.swift`);
  /// - with a token: `GET /api/status`, `GET /api/live` (server-sent events: the status as the
  ///   engine has it, once a second and at each change made here), `POST /api/control` (start,
  ///   pause, resume, lap, stop: the same engine path as the buttons and `workoutctl`),
  ///   `POST /api/annotate`, `POST /api/unpair`, and the rides (`WebRides.swift`).
  ///
  /// Every request must name the board in its Host field (its names, or an address): a name
  /// rebound to the board by another site is refused (`HostCheck`).
  /// Every request that changes something must come from the board's own page (its Origin is
  /// this server as the browser reached it). Tokens never appear in logs or URLs. `peer` is the
  /// address the request came from (pairing tries are limited per address).
  func respond(to request: HTTPRequest, from peer: String = "", now: Double, wall: Double) -> Outcome {
    guard HostCheck.allows(request.header("host"), names: names) else {
      let host = request.header("host").map { TerminalText.escaped($0.prefix(60)) } ?? "none"
      noteRefusal("a request for a host that is not this board (\(host))", now: now)
      return .response(
        .error(421, "this board answers to its own names and addresses only ([web] names adds one)"))
    }
    switch (request.method, request.path) {
    case ("GET", "/"), ("HEAD", "/"), ("GET", "/index.html"):
      return .response(asset("index.html"))
    case (let method, let path)
    where (method == "GET" || method == "HEAD") && WebAssets.served.keys.contains(String(path.dropFirst())):
      return .response(asset(String(path.dropFirst())))
    case ("POST", "/api/pair"):
      return .response(pair(request, from: peer, now: now, wall: wall))
    case ("GET", "/api/status"):
      guard authorised(request, now: now, wall: wall) != nil else { return .response(unauthorised()) }
      guard let reply = ask(ControlRequest(command: .status)), let status = reply.status,
        let json = try? ControlJSON.encode(status)
      else { return .response(.error(503, "the engine did not answer in time")) }
      return .response(.json(200, json))
    case ("GET", "/api/live"):
      guard let client = authorised(request, now: now, wall: wall) else { return .response(unauthorised()) }
      return .liveFeed(client.id ?? -1, expires: settings.tokenExpiry(pairedWall: client.pairedWall))
    case ("POST", "/api/control"):
      guard authorised(request, now: now, wall: wall) != nil else { return .response(unauthorised()) }
      if let refusal = crossOrigin(request, now: now) { return .response(refusal) }
      return .response(control(request))
    case ("POST", "/api/unpair"):
      guard let client = authorised(request, now: now, wall: wall) else { return .response(unauthorised()) }
      if let refusal = crossOrigin(request, now: now) { return .response(refusal) }
      _ = revoke(id: client.id ?? -1, wall: wall)
      return .response(.json(200, "{\"unpaired\":true}", headers: [("Set-Cookie", WebToken.clearCookie)]))
    case ("POST", "/api/annotate"):
      guard let client = authorised(request, now: now, wall: wall) else { return .response(unauthorised()) }
      if let refusal = crossOrigin(request, now: now) { return .response(refusal) }
      if let wait = noteWait(for: client.id ?? -1, now: now) {
        return .response(
          .error(
            429, "at most \(Annotation.perMinuteLimit) notes a minute: try again in \(Int(wait.rounded(.up))) s",
            headers: [("Retry-After", String(Int(wait.rounded(.up))))]))
      }
      return .response(annotate(request))
    case ("GET", "/api/sessions"):
      guard authorised(request, now: now, wall: wall) != nil else { return .response(unauthorised()) }
      return .response(rides())
    case ("GET", let path) where path.hasPrefix("/api/sessions/"):
      guard authorised(request, now: now, wall: wall) != nil else { return .response(unauthorised()) }
      let rest = path.dropFirst("/api/sessions/".count).split(separator: "/", omittingEmptySubsequences: false)
      guard let id = Int64(rest.first ?? "") else { return .response(.error(404, "no such session")) }
      if rest.count == 1 { return .ride(id) }
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

  /// The phone a request's token belongs to, or nil (no token, an unknown, revoked or expired
  /// one).
  func authorised(_ request: HTTPRequest, now: Double, wall: Double) -> WebClientRecord? {
    guard WebToken.fromCookies(request.header("cookie")) != nil else { return nil }
    guard let client = pairedPhone(request) else {
      noteRefusal("a request with a token that is not (or no longer) paired", now: now)
      return nil
    }
    if let expiry = settings.tokenExpiry(pairedWall: client.pairedWall), wall >= expiry {
      noteRefusal("a request with an expired pairing ([web] token_days)", now: now)
      return nil
    }
    // Last seen, written at most once a minute per phone (each request is not a transaction).
    if let id = client.id,
      touched.withLock({ touched in
        guard now - (touched[id] ?? -.infinity) >= 60 else { return false }
        touched[id] = now
        return true
      })
    {
      try? store.touchWebClient(id: id, wall: wall)
    }
    return client
  }

  /// The phone whose token a request carries, if it is paired; nothing logged or written.
  func pairedPhone(_ request: HTTPRequest) -> WebClientRecord? {
    guard let token = WebToken.fromCookies(request.header("cookie")), token.utf8.count <= 128 else { return nil }
    let hash = WebToken.hash(token)
    return tokens.withLock { $0[hash] }
  }

  func unauthorised() -> HTTPResponse {
    .error(
      401,
      "this phone is not paired (or its pairing expired): run `workoutctl pair` on the board and enter its code here")
  }

  /// A request that changes something must come from this server's own page.
  func crossOrigin(_ request: HTTPRequest, now: Double) -> HTTPResponse? {
    switch OriginCheck.verdict(
      origin: request.header("origin"), host: request.header("host"), secure: fingerprint != nil)
    {
    case .sameOrigin: return nil
    case .missingOrigin:
      noteRefusal("a request that changes something without an Origin", now: now)
      return .error(403, "refused: a request that changes something must come from the board's own page (no Origin)")
    case .crossOrigin(let origin):
      noteRefusal("a request from another site (\(origin.prefix(60)))", now: now)
      return .error(403, "refused: a request from another site (\(origin.prefix(60)))")
    }
  }

  /// One log line per minute at most for refused requests (a flood does not fill the journal).
  func noteRefusal(_ what: String, now: Double) {
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

  // MARK: - Control

  func ask(_ request: ControlRequest) -> ControlReply? {
    let box = ReplyBox()
    queue.post(.control(request, box))
    return box.wait(seconds: 10)
  }

  func control(_ request: HTTPRequest) -> HTTPResponse {
    struct Body: Decodable { var command: String }
    let allowed: [String: ControlCommand] = [
      "start": .start, "pause": .pause, "resume": .resume, "lap": .lap, "stop": .stop, "fine": .fine,
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
  /// nil when `phone` may send a note now (and it is counted); else the seconds until it may.
  func noteWait(for phone: Int64, now: Double) -> Double? {
    notesSent.withLock { sent in
      let recent = (sent[phone] ?? []).filter { $0 > now - 60 }
      if recent.count >= Annotation.perMinuteLimit {
        sent[phone] = recent
        return max(1, recent[0] + 60 - now)
      }
      sent[phone] = recent + [now]
      return nil
    }
  }

  func annotate(_ request: HTTPRequest) -> HTTPResponse {
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

  func asset(_ name: String) -> HTTPResponse {
    guard let type = WebAssets.served[name],
      let data = FileManager.default.contents(atPath: assets + "/" + name)
    else { return .error(404, "not found") }
    return HTTPResponse(status: 200, contentType: type, body: Array(data))
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
