import Foundation
import LinuxSupport
import Logging
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport
import WorkoutWeb

@testable import WorkoutDaemon

/// What the web server answers, without a socket or a clock: a request and the time in, the
/// outcome out, on the real store. The transport is tested through the service (WebServerTests).
@Suite("the web routes on a manual clock")
struct WebRoutesTests {
  final class Board {
    let directory = NSTemporaryDirectory() + "workoutd-routes-" + UUID().uuidString
    let store: WorkoutStore
    let routes: WebRoutes

    init(settings: WebSettings = WebSettings()) throws {
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      FileManager.default.createFile(atPath: directory + "/index.html", contents: Data("<html></html>".utf8))
      store = try WorkoutStore.open(at: directory + "/workoutd.db", wallNow: 0).0
      let queue = InputQueue<RuntimeMessage>()
      let log = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
      routes = WebRoutes(
        settings: settings, assets: directory, port: 8080, store: store, queue: queue, log: log,
        feed: LiveFeed(queue: queue, log: log), names: ["board", "board.local"])
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
  }

  static let host = [("host", "board:8080"), ("origin", "http://board:8080")]

  static func post(_ path: String, _ body: String, headers: [(String, String)] = host) -> HTTPRequest {
    HTTPRequest(method: "POST", path: path, headers: headers.map { (name: $0.0, value: $0.1) }, body: Array(body.utf8))
  }

  static func get(_ path: String, cookie: String? = nil, host: String = "board:8080") -> HTTPRequest {
    HTTPRequest(
      method: "GET", path: path,
      headers: [(name: "host", value: host)] + (cookie.map { [(name: "cookie", value: $0)] } ?? []))
  }

  static func response(_ outcome: WebRoutes.Outcome) -> HTTPResponse? {
    if case .response(let response) = outcome { return response }
    return nil
  }

  /// A code from the control socket at `now`, redeemed at `now + 1`: the token's cookie.
  static func pair(_ board: Board, at now: Double, wall: Double) throws -> String {
    let code = try #require(board.routes.handle(ControlRequest(command: .pair), now: now, wall: wall).pairing?.code)
    let paired = try #require(
      response(board.routes.respond(to: post("/api/pair", "{\"code\":\"\(code)\"}"), now: now + 1, wall: wall + 1)))
    #expect(paired.status == 200, "\(String(decoding: paired.body, as: UTF8.self))")
    let cookie = try #require(paired.headers.first { $0.name == "Set-Cookie" }?.value)
    return String(cookie.prefix { $0 != ";" })
  }

  @Test func aCodeIsRedeemedOnceForATokenThatOpensTheRides() throws {
    let board = try Board()
    let cookie = try Self.pair(board, at: 100, wall: 1_000)
    let rides = Self.get("/api/sessions", cookie: cookie)
    #expect(Self.response(board.routes.respond(to: rides, now: 102, wall: 1_002))?.status == 200)
    #expect(try board.store.webClients().map(\.pairedWall) == [1_001])
    // Used once: no code is open after it.
    let again = Self.post("/api/pair", "{\"code\":\"XXXXXX\"}")
    #expect(Self.response(board.routes.respond(to: again, now: 103, wall: 1_003))?.status == 410)
    let anonymous = Self.get("/api/sessions")
    #expect(Self.response(board.routes.respond(to: anonymous, now: 104, wall: 1_004))?.status == 401)
  }

  @Test func aPairingExpiresAfterTokenDaysAndItsCookieWithIt() throws {
    var settings = WebSettings()
    settings.tokenDays = 1
    let board = try Board(settings: settings)
    let code = try #require(board.routes.handle(ControlRequest(command: .pair), now: 0, wall: 0).pairing?.code)
    let paired = try #require(
      Self.response(board.routes.respond(to: Self.post("/api/pair", "{\"code\":\"\(code)\"}"), now: 1, wall: 1_000)))
    let setCookie = try #require(paired.headers.first { $0.name == "Set-Cookie" }?.value)
    #expect(setCookie.contains("Max-Age=86400;"), "\(setCookie)")
    let cookie = String(setCookie.prefix { $0 != ";" })
    let status = Self.get("/api/sessions", cookie: cookie)
    #expect(Self.response(board.routes.respond(to: status, now: 2, wall: 1_000 + 86_399.9))?.status == 200)
    guard
      case .liveFeed(_, let expires) = board.routes.respond(
        to: Self.get("/api/live", cookie: cookie), now: 3, wall: 1_001)
    else {
      Issue.record("no live feed before the expiry")
      return
    }
    #expect(expires == Double(1_000 + 86_400), "the feed ends when the pairing does")
    #expect(Self.response(board.routes.respond(to: status, now: 4, wall: 1_000 + 86_400))?.status == 401)
    let live = board.routes.respond(to: Self.get("/api/live", cookie: cookie), now: 5, wall: 1_000 + 86_400)
    #expect(Self.response(live)?.status == 401)

    // Without token_days a pairing lasts until it is revoked, and its cookie a year.
    let forever = try Board()
    let kept = try Self.pair(forever, at: 0, wall: 1_000)
    #expect(
      Self.response(forever.routes.respond(to: Self.get("/api/sessions", cookie: kept), now: 9, wall: 1e10))?.status
        == 200)
  }

  @Test func aCodeExpiresAtItsLifetime() throws {
    let board = try Board()
    let code = try #require(board.routes.handle(ControlRequest(command: .pair), now: 0, wall: 0).pairing?.code)
    let wrong = Self.post("/api/pair", "{\"code\":\"00000\"}")
    let before = Self.response(board.routes.respond(to: wrong, now: PairingDesk.codeLifetime - 0.001, wall: 0))
    #expect(before?.status == 403, "open until its lifetime")
    let late = Self.post("/api/pair", "{\"code\":\"\(code)\"}")
    let answer = Self.response(board.routes.respond(to: late, now: PairingDesk.codeLifetime, wall: 0))
    #expect(answer?.status == 410)
  }

  @Test func pairingTriesAreCountedPerAddress() throws {
    let board = try Board()
    let wrong = Self.post("/api/pair", "{\"code\":\"ZZZZ-ZZZZ\"}")
    let statuses = (0..<12).map { second in
      Self.response(board.routes.respond(to: wrong, from: "192.168.1.66", now: Double(second), wall: 0))?.status
    }
    #expect(statuses.suffix(2) == [429, 429], "\(statuses)")
    let refused = Self.response(board.routes.respond(to: wrong, from: "192.168.1.66", now: 12, wall: 0))
    #expect(refused?.headers.contains { $0.name == "Retry-After" && $0.value == "48" } == true)
    let code = try #require(board.routes.handle(ControlRequest(command: .pair), now: 13, wall: 0).pairing?.code)
    let right = Self.post("/api/pair", "{\"code\":\"\(code)\"}")
    #expect(Self.response(board.routes.respond(to: right, from: "192.168.1.20", now: 14, wall: 0))?.status == 200)
  }

  @Test func aPhonesLastSeenIsWrittenAtMostOnceAMinuteAtTheTimeGiven() throws {
    let board = try Board()
    let cookie = try Self.pair(board, at: 0, wall: 5_000)
    let status = Self.get("/api/sessions", cookie: cookie)
    func lastSeen() throws -> Double? { try board.store.webClients().first?.lastSeenWall }
    _ = board.routes.respond(to: status, now: 10, wall: 5_010)
    #expect(try lastSeen() == 5_010)
    _ = board.routes.respond(to: status, now: 69.9, wall: 5_069)
    #expect(try lastSeen() == 5_010, "within the minute")
    // (The store writes it only a minute after the last one too, on the wall clock.)
    _ = board.routes.respond(to: status, now: 71, wall: 5_071)
    #expect(try lastSeen() == 5_071)
  }

  @Test func aChangeFromAnotherSiteOrWithoutOriginIsRefusedAndUnpairingEndsTheToken() throws {
    let board = try Board()
    let cookie = try Self.pair(board, at: 0, wall: 0)
    let foreign = Self.post(
      "/api/control", "{\"command\":\"start\"}",
      headers: [("host", "board:8080"), ("origin", "http://evil.example"), ("cookie", cookie)])
    #expect(Self.response(board.routes.respond(to: foreign, now: 1, wall: 1))?.status == 403)
    let bare = Self.post(
      "/api/control", "{\"command\":\"start\"}", headers: [("host", "board:8080"), ("cookie", cookie)])
    #expect(Self.response(board.routes.respond(to: bare, now: 2, wall: 2))?.status == 403)
    let unpair = Self.post("/api/unpair", "", headers: Self.host + [("cookie", cookie)])
    #expect(Self.response(board.routes.respond(to: unpair, now: 3, wall: 3))?.status == 200)
    #expect(try board.store.webClients().first?.revokedWall == 3)
    let rides = Self.get("/api/sessions", cookie: cookie)
    #expect(Self.response(board.routes.respond(to: rides, now: 4, wall: 4))?.status == 401)
  }

  @Test func thePageAndTheWrongMethodsAndPaths() throws {
    let board = try Board()
    let page = Self.response(board.routes.respond(to: Self.get("/"), now: 0, wall: 0))
    #expect(page?.status == 200 && page?.body == Array("<html></html>".utf8))
    let wrongMethod = Self.response(
      board.routes.respond(to: Self.get("/api/control"), now: 0, wall: 0))
    #expect(wrongMethod?.status == 405)
    #expect(wrongMethod?.headers.contains { $0.name == "Allow" && $0.value == "POST" } == true)
    let unknown = Self.response(
      board.routes.respond(to: Self.get("/api/nope"), now: 0, wall: 0))
    #expect(unknown?.status == 404)
    let live = Self.get("/api/live")
    #expect(Self.response(board.routes.respond(to: live, now: 0, wall: 0))?.status == 401)
  }

  /// DNS rebinding: a page of another site whose name now points at the board gets nothing,
  /// not even the pairing it would need; the board's names and addresses are served.
  @Test func aRequestForAnotherHostIsRefused() throws {
    let board = try Board()
    for host in ["evil.example:8080", "board.evil.example", "localhost.evil.example"] {
      let page = Self.response(board.routes.respond(to: Self.get("/", host: host), now: 0, wall: 0))
      #expect(page?.status == 421, "\(host)")
      let pairing = Self.response(
        board.routes.respond(
          to: Self.post(
            "/api/pair", "{\"code\":\"AAAA-AAAA\"}", headers: [("host", host), ("origin", "http://\(host)")]),
          now: 0, wall: 0))
      #expect(pairing?.status == 421, "\(host)")
    }
    #expect(
      Self.response(board.routes.respond(to: HTTPRequest(method: "GET", path: "/"), now: 0, wall: 0))?.status == 421)
    for host in ["board:8080", "BOARD.local", "192.168.4.1:8080", "[fe80::1]:8080"] {
      #expect(
        Self.response(board.routes.respond(to: Self.get("/", host: host), now: 0, wall: 0))?.status == 200, "\(host)")
    }
  }

  /// Session 1 ridden by `riding` and stopped, stored on a board: the board, for its routes.
  func boardWithARide(_ riding: (inout EngineHarness, inout GeoPoint) -> Void) throws -> Board {
    let board = try Board()
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 45.5, longitude: 7.25)
    riding(&h, &position)
    _ = h.press(.stop)
    try board.store.write(
      h.commands, clock: ClockStamp(epoch: "t", moment: Moment(monotonic: 0, wall: 0), wallTrusted: true))
    return board
  }

  /// The bytes `RideJSON.write` streams.
  func streamed(_ ride: WebRoutes.RideJSON) throws -> [UInt8] {
    var pieces: [[UInt8]] = []
    try ride.write { pieces.append($0) }
    return Array(pieces.joined())
  }

  @Test("the ride page's JSON, written a piece at a time, is the JSON of it whole")
  func rideJSONInPieces() throws {
    let board = try boardWithARide { h, position in
      h.ride(seconds: 30, speed: 8, heartRate: 140, from: &position)
      _ = h.press(.lap)
      h.ride(seconds: 30, speed: 8, heartRate: 150, from: &position)
    }
    let ride = try #require(try board.routes.ride(1))
    #expect(ride.laps.count == 2 && !ride.events.isEmpty)
    #expect(ride.samples.vibration.count == ride.samples.timer.count)
    #expect(ride.samples.vibration.allSatisfy { $0 == nil }, "no inertial sensor, no roughness")
    #expect(ride.battery == nil, "no gauge, no battery")
    #expect(try streamed(ride) == Array(try ControlJSON.encode(ride).utf8))
    #expect(try board.routes.ride(2) == nil)
  }

  @Test("the ride page's JSON has the road's roughness of each sample, none where the sensor said nothing")
  func rideJSONWithTheRoadsRoughness() throws {
    let board = try boardWithARide { h, position in
      for second in 0..<20 {
        h.send(.reading(.motion(MotionSecond(vibration: 1 + Double(second) / 8, peak: 12))))
        h.ride(seconds: 1, speed: 8, from: &position)
      }
      h.ride(seconds: 20, speed: 8, from: &position)
    }
    let ride = try #require(try board.routes.ride(1))
    let points = try board.store.points(sessionID: 1)
    #expect(ride.samples.vibration == points.map(\.vibration))
    let felt: [Double?] = (0..<20).map { second -> Double? in 1 + Double(second) / 8 }
    #expect(Array(ride.samples.vibration.prefix(20)) == felt)
    #expect(ride.samples.vibration.last.map { $0 == nil } == true, "none once the sensor is silent")
    let text = String(decoding: try streamed(ride), as: UTF8.self)
    #expect(text.contains("\"vibration\":[1,1.125,"), "\(text.prefix(200))")
  }

  @Test("the ride page's JSON has the battery through the ride where the board has a gauge")
  func rideJSONWithTheBattery() throws {
    let board = try boardWithARide { h, position in
      for minute in 0..<12 {
        h.send(.reading(.battery(BatteryReading(supply: "BAT0", level: 80 - Double(minute), status: .discharging))))
        h.ride(seconds: 60, speed: 8, from: &position)
      }
    }
    let ride = try #require(try board.routes.ride(1))
    let battery = try #require(ride.battery)
    #expect(battery.summary.hasPrefix("battery 80 % at the start, "), "\(battery.summary)")
    #expect(battery.summary.contains("drain"), "\(battery.summary)")
    #expect(battery.minutes.first == 0 && battery.level.first == 80)
    #expect(battery.minutes.count == battery.level.count && battery.minutes.count >= 11)
    let bytes = try streamed(ride)
    #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("{\"battery\":{"))
    #expect(bytes == Array(try ControlJSON.encode(ride).utf8))
  }
}
