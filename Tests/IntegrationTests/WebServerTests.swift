import Foundation
import Testing
import WorkoutControl
import WorkoutStore
import WorkoutTestSupport

@testable import LinuxSupport

/// One HTTP exchange on a fresh connection, as a browser (or an attacker) would send it.
struct WebResponse {
  var status: Int
  var headers: [String: String]
  var body: String
}

/// `source`: the client's own address, when the test plays two hosts (`connect(from:)`).
func http(
  _ method: String, _ path: String, port: Int, headers: [String: String] = [:], body: String? = nil,
  host: String? = nil, from source: String? = nil
) throws -> WebResponse {
  let socket =
    try source.map { try connect(from: $0, port: port) } ?? TCPSocket.connect(host: "127.0.0.1", port: String(port))
  var text = "\(method) \(path) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\nConnection: close\r\n"
  for (name, value) in headers { text += "\(name): \(value)\r\n" }
  if let body { text += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
  text += "\r\n" + (body ?? "")
  try socket.send(Array(text.utf8))
  return try readResponse(socket)
}

/// A connection to the server on 127.0.0.1 from `source`: on Linux every 127.x.y.z address is
/// the loopback's, and 127.0.0.2 is another host to the server, as a second phone on a LAN.
func connect(from source: String, port: Int) throws -> TCPSocket {
  func address(_ host: String, _ port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    _ = inet_pton(AF_INET, host, &address.sin_addr)
    return address
  }
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
  guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
  let client = TCPSocket(FileDescriptor(owning: fd))
  for (call, target) in [("bind", address(source, 0)), ("connect", address("127.0.0.1", port))] {
    var target = target
    let result = withUnsafePointer(to: &target) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        return call == "bind" ? bind(fd, $0, size) : Glibc.connect(fd, $0, size)
      }
    }
    guard result == 0 else { throw TestFailure("\(call) from \(source): errno \(errno)") }
  }
  return client
}

func readResponse(_ socket: TCPSocket, deadline: Double = SystemClocks.monotonic() + 15) throws -> WebResponse {
  var bytes: [UInt8] = []
  while true {
    let chunk = try socket.receive(deadline: deadline)
    if chunk.isEmpty { break }
    bytes += chunk
  }
  let text = String(decoding: bytes, as: UTF8.self)
  guard let split = text.range(of: "\r\n\r\n") else { throw TestFailure("no response head in \(text.prefix(200))") }
  let lines = text[..<split.lowerBound].split(separator: "\r\n")
  let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
  var headers: [String: String] = [:]
  for line in lines.dropFirst() {
    let parts = line.split(separator: ":", maxSplits: 1)
    if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
  }
  return WebResponse(status: status, headers: headers, body: String(text[split.upperBound...]))
}

/// A service with its web server on loopback, on a port the kernel chose.
final class WebService {
  let dir = ServiceDirectory()
  let service: ServiceProcess
  let port: Int

  /// `extra`: more of `[web]`, and sections after it; `arguments`: workoutd's, after these.
  /// `tls`: HTTPS as a board has it by default; these tests' plain-HTTP client needs it off.
  /// `prepare`: what the directory holds before the service starts (a stored ride).
  init(
    speed: String = "20", tls: Bool = false, extra: String = "", arguments: [String] = [],
    prepare: (ServiceDirectory) throws -> Void = { _ in }
  ) throws {
    try prepare(dir)
    let config = dir.path + "/workoutd.toml"
    try "[web]\nenabled = true\naddress = \"127.0.0.1\"\nport = 0\ntls = \(tls)\n\(extra)".write(
      toFile: config, atomically: true, encoding: .utf8)
    service = try ServiceProcess(dir, arguments: ["--speed", speed, "--config", config] + arguments)
    try service.waitUntilReady()
    let log = service.log
    guard let range = log.range(of: #"serving the phone page on 127\.0\.0\.1:(\d+)"#, options: .regularExpression),
      let port = Int(log[range].split(separator: ":").last ?? "")
    else { throw TestFailure("no web server in the log: \(log)") }
    self.port = port
  }

  var origin: String { "http://127.0.0.1:\(port)" }

  func ctl(_ arguments: [String]) throws -> (status: Int32, output: String) {
    try run(binaryDirectory + "/workoutctl", arguments + ["--state-dir", dir.state, "--runtime-dir", dir.runtime])
  }

  func pairingCode() throws -> String {
    let reply = try ctl(["pair", "--json"])
    guard reply.status == 0, let data = reply.output.data(using: .utf8),
      let object = try JSONSerialization.jsonObject(with: data) as? [String: Any], let code = object["code"] as? String
    else { throw TestFailure("workoutctl pair: \(reply.output)") }
    return code
  }

  /// Pairs and returns the token from the cookie.
  func pair() throws -> String {
    let response = try http(
      "POST", "/api/pair", port: port, headers: ["Origin": origin], body: "{\"code\":\"\(try pairingCode())\"}")
    guard response.status == 200, let cookie = response.headers["set-cookie"],
      let token = cookie.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last
    else { throw TestFailure("pairing refused: \(response)") }
    return String(token)
  }

  func cookie(_ token: String) -> [String: String] { ["Cookie": "workoutd_token=\(token)"] }

  /// A connection with the live feed requested with `token`, its answer left to read.
  func liveFeed(_ token: String) throws -> TCPSocket {
    let feed = try TCPSocket.connect(host: "127.0.0.1", port: String(port))
    try feed.send(
      Array("GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: workoutd_token=\(token)\r\n\r\n".utf8))
    return feed
  }
}

@Suite(.serialized)
struct WebServerTests {
  @Test func withoutAPairedTokenNothingIsShownAndNothingChanges() throws {
    let web = try WebService()
    try waitFor("the ride to run", timeout: 60) { try web.service.status().state == .running }

    // The page itself is public (it shows the pairing prompt); the data is not.
    let page = try http("GET", "/", port: web.port)
    #expect(page.status == 200 && page.body.contains("Pair this phone"))
    #expect(page.headers["content-security-policy"]?.contains("script-src 'self'") == true)
    // HEAD: the page's head and no body, so the next answer on the connection starts clean.
    let both = try TCPSocket.connect(host: "127.0.0.1", port: String(web.port))
    defer { both.close() }
    try both.send(
      Array(
        ("HEAD / HTTP/1.1\r\nHost: 127.0.0.1:\(web.port)\r\n\r\n"
          + "GET /icon.svg HTTP/1.1\r\nHost: 127.0.0.1:\(web.port)\r\nConnection: close\r\n\r\n").utf8))
    let headThenIcon = try readResponse(both)
    #expect(headThenIcon.status == 200 && headThenIcon.body.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(headThenIcon)")
    #expect(headThenIcon.headers["content-length"] == String(page.body.utf8.count))
    #expect(try http("GET", "/api/status", port: web.port).status == 401)
    #expect(try http("GET", "/api/live", port: web.port).status == 401)
    let wrong = web.cookie("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
    #expect(try http("GET", "/api/status", port: web.port, headers: wrong).status == 401)
    let blind = try http(
      "POST", "/api/control", port: web.port, headers: ["Origin": web.origin], body: "{\"command\":\"stop\"}")
    #expect(blind.status == 401)
    #expect(try web.service.status().state == .running, "nothing changed")

    // A pairing code from another site's page is refused and stays open for the real page.
    let code = try web.pairingCode()
    let forged = try http(
      "POST", "/api/pair", port: web.port, headers: ["Origin": "http://evil.example"], body: "{\"code\":\"\(code)\"}")
    #expect(forged.status == 403 && forged.headers["set-cookie"] == nil)
    let paired = try http(
      "POST", "/api/pair", port: web.port, headers: ["Origin": web.origin], body: "{\"code\":\"\(code)\"}")
    #expect(paired.status == 200, "\(paired)")
    let cookie = try #require(paired.headers["set-cookie"])
    #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
    let token = String(cookie.split(separator: ";")[0].split(separator: "=", maxSplits: 1)[1])
    // The code is good once: replayed, it is refused.
    let replayed = try http(
      "POST", "/api/pair", port: web.port, headers: ["Origin": web.origin], body: "{\"code\":\"\(code)\"}")
    #expect(replayed.status == 410 && replayed.headers["set-cookie"] == nil, "\(replayed)")

    let status = try http("GET", "/api/status", port: web.port, headers: web.cookie(token))
    #expect(status.status == 200 && status.body.contains("\"state\":\"running\""), "\(status.body.prefix(200))")

    // Control from another site, or with no Origin at all, is refused even with the token.
    for headers in [["Origin": "http://evil.example"], [:], ["Origin": "http://127.0.0.1:1"]] {
      let attempt = try http(
        "POST", "/api/control", port: web.port, headers: web.cookie(token).merging(headers) { $1 },
        body: "{\"command\":\"stop\"}")
      #expect(attempt.status == 403, "\(headers): \(attempt)")
    }
    #expect(try web.service.status().state == .running, "nothing changed")
    // A GET cannot act.
    #expect(try http("GET", "/api/control", port: web.port, headers: web.cookie(token)).status == 405)

    // DNS rebinding: another site's name pointed at the board reaches nothing, not the page,
    // not pairing, not even with the token; the ride goes on.
    let rebound = "evil.example:\(web.port)"
    let forgedPage = try http("GET", "/", port: web.port, host: rebound)
    #expect(forgedPage.status == 421 && !forgedPage.body.contains("Pair this phone"), "\(forgedPage)")
    let forgedPair = try http(
      "POST", "/api/pair", port: web.port, headers: ["Origin": "http://\(rebound)"],
      body: "{\"code\":\"\(try web.pairingCode())\"}", host: rebound)
    #expect(forgedPair.status == 421 && forgedPair.headers["set-cookie"] == nil, "\(forgedPair)")
    #expect(try http("GET", "/api/status", port: web.port, headers: web.cookie(token), host: rebound).status == 421)
    #expect(try http("GET", "/", port: web.port, host: "localhost:\(web.port)").status == 200)
    #expect(try web.service.status().state == .running)

    // Revoked, the token opens nothing.
    let list = try web.ctl(["pair", "--list"])
    #expect(list.status == 0 && list.output.contains("1  paired"), "\(list.output)")
    let revoke = try web.ctl(["pair", "--revoke", "1"])
    #expect(revoke.status == 0, "\(revoke.output)")
    #expect(try http("GET", "/api/status", port: web.port, headers: web.cookie(token)).status == 401)
    let again = try web.ctl(["pair", "--revoke", "1"])
    #expect(again.status != 0 && again.output.contains("no paired phone 1"), "\(again.output)")
    #expect(try web.ctl(["pair", "--list"]).output.contains("REVOKED"))

    // The database keeps the token's hash only; the log never has the token.
    let store = try WorkoutStore.openForReading(at: web.dir.database)
    let hashes = try store.webClients().map(\.tokenHash)
    #expect(hashes.count == 1 && hashes.first != token && hashes.first?.count == 64)
    #expect(!web.service.log.contains(token))
    #expect(!web.service.log.contains(code), "the code is not logged either")
  }

  @Test func aFloodOfGuessesIsLimitedAndPairsNothing() throws {
    let web = try WebService()
    let code = try web.pairingCode()
    var statuses: [Int] = []
    for guess in 0..<14 {
      let response = try http(
        "POST", "/api/pair", port: web.port, headers: ["Origin": web.origin],
        body: "{\"code\":\"ZZZZ-\(String(format: "%04d", guess))\"}")
      statuses.append(response.status)
    }
    // Five wrong tries void the code, ten in a minute close the desk.
    #expect(statuses.prefix(5).allSatisfy { $0 == 403 }, "\(statuses)")
    #expect(statuses[5..<10].allSatisfy { $0 == 410 }, "\(statuses)")
    #expect(statuses.suffix(4).allSatisfy { $0 == 429 }, "\(statuses)")
    let limited = try http(
      "POST", "/api/pair", port: web.port, headers: ["Origin": web.origin], body: "{\"code\":\"\(code)\"}")
    #expect(limited.status == 429 && limited.headers["retry-after"] != nil, "\(limited)")
    #expect(try web.ctl(["pair", "--list"]).output.contains("no phones paired"))
    // One log line for the flood, not one per guess.
    #expect(web.service.log.components(separatedBy: "web: refused").count - 1 <= 2, "\(web.service.log)")
  }

  @Test func aPhoneNamedWithTerminalEscapesIsListedAndLoggedHarmless() throws {
    let web = try WebService()
    let code = try web.pairingCode()
    // A name that would clear the screen and print a forged second line.
    let paired = try http(
      "POST", "/api/pair", port: web.port, headers: ["Origin": web.origin],
      body: "{\"code\":\"\(code)\",\"name\":\"evil\\u001b[2J\\nREVOKED\"}")
    #expect(paired.status == 200, "\(paired)")
    let list = try web.ctl(["pair", "--list"])
    #expect(list.status == 0 && list.output.contains("evil\\u{1B}[2J\\nREVOKED"), "\(list.output)")
    #expect(!list.output.contains("\u{1B}") && list.output.split(separator: "\n").count == 1, "\(list.output)")
    #expect(web.service.log.contains("paired (evil\\u{1B}[2J\\nREVOKED)"), "\(web.service.log)")
    #expect(!web.service.log.contains("\u{1B}"))
  }

  @Test func revokingAPhoneEndsItsOpenLiveFeedAtOnceAndTheRideGoesOn() throws {
    let web = try WebService(speed: "5")
    try waitFor("the ride to run", timeout: 60) { try web.service.status().state == .running }
    let token = try web.pair()
    let feed = try web.liveFeed(token)
    defer { feed.close() }
    var received = ""
    try waitFor("the first status", timeout: 20) {
      if let chunk = try? feed.receive(deadline: SystemClocks.monotonic() + 1) {
        received += String(decoding: chunk, as: UTF8.self)
      }
      return received.contains("event: status")
    }
    let pointsBefore = try web.service.status().points

    let revoke = try web.ctl(["pair", "--revoke", "1"])
    #expect(revoke.status == 0, "\(revoke.output)")
    // The stream is closed by the server within a moment, though statuses keep coming at 5x.
    let revokedAt = SystemClocks.monotonic()
    var closed = false
    while !closed, SystemClocks.monotonic() < revokedAt + 3 {
      guard let chunk = try? feed.receive(deadline: revokedAt + 3) else { break }
      closed = chunk.isEmpty
    }
    #expect(closed, "the live feed of a revoked phone is still open")
    #expect(try http("GET", "/api/live", port: web.port, headers: web.cookie(token)).status == 401)
    try waitFor("the ride to go on recording", timeout: 20) { try web.service.status().points > pointsBefore + 2 }
  }

  @Test func anExpiringPairingEndsItsLiveFeedAtTheExpiry() throws {
    // token_days = 0.0001: 8.64 s.
    let web = try WebService(speed: "5", extra: "token_days = 0.0001\n")
    try waitFor("the ride to run", timeout: 60) { try web.service.status().state == .running }
    let token = try web.pair()
    let pairedAt = SystemClocks.monotonic()
    let feed = try web.liveFeed(token)
    defer { feed.close() }
    var received = ""
    var closed = false
    while !closed, SystemClocks.monotonic() < pairedAt + 15 {
      guard let chunk = try? feed.receive(deadline: pairedAt + 15) else { break }
      received += String(decoding: chunk, as: UTF8.self)
      closed = chunk.isEmpty
    }
    let endedAfter = SystemClocks.monotonic() - pairedAt
    #expect(received.contains("event: status"), "the feed ran before the expiry")
    #expect(closed && endedAfter > 7 && endedAfter < 11, "the feed ended \(endedAfter) s after pairing")
    let pointsBefore = try web.service.status().points
    #expect(try http("GET", "/api/status", port: web.port, headers: web.cookie(token)).status == 401)
    try waitFor("the ride to go on recording", timeout: 20) { try web.service.status().points > pointsBefore + 2 }
  }

  @Test func aNoteFloodFromOnePhoneIsLimitedAndAnotherPhoneIsNot() throws {
    let web = try WebService()
    try waitFor("the ride to run", timeout: 60) { try web.service.status().state == .running }
    let flooder = try web.pair()
    let rider = try web.pair()
    let pointsBefore = try web.service.status().points
    func note(_ token: String) throws -> WebResponse {
      try http(
        "POST", "/api/annotate", port: web.port, headers: web.cookie(token).merging(["Origin": web.origin]) { $1 },
        body: "{\"kind\":\"note\",\"text\":\"flood\"}")
    }
    let statuses = try (0..<20).map { _ in try note(flooder) }
    #expect(statuses.prefix(12).allSatisfy { $0.status == 200 }, "\(statuses.map(\.status))")
    #expect(statuses.suffix(8).allSatisfy { $0.status == 429 }, "\(statuses.map(\.status))")
    let limited = try #require(statuses.last)
    #expect(limited.headers["retry-after"] != nil && limited.body.contains("12 notes a minute"), "\(limited)")
    // The limit is the flooding phone's: the rider's phone still notes.
    #expect(try note(rider).status == 200)
    let sessionID = try #require(try web.service.status().sessionID)
    let notes = try WorkoutStore.openForReading(at: web.dir.database).events(sessionID: sessionID)
      .filter { $0.kind == "annotation" }
    #expect(notes.count == 13, "\(notes.count)")
    try waitFor("the ride to go on recording", timeout: 20) { try web.service.status().points > pointsBefore + 2 }
  }

  @Test func theLiveFeedFollowsTheButtonsAndThePageControlsTheEngine() throws {
    let web = try WebService(speed: "5")
    try waitFor("the ride to run", timeout: 60) { try web.service.status().state == .running }
    let token = try web.pair()

    let feed = try TCPSocket.connect(host: "127.0.0.1", port: String(web.port))
    try feed.send(
      Array(
        "GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:\(web.port)\r\nCookie: workoutd_token=\(token)\r\n\r\n".utf8))
    var received = ""
    func waitForEvent(_ what: String, _ match: String) throws {
      try waitFor(what, timeout: 20) {
        if let chunk = try? feed.receive(deadline: SystemClocks.monotonic() + 1) {
          received += String(decoding: chunk, as: UTF8.self)
        }
        guard let last = received.components(separatedBy: "event: status").last else { return false }
        return last.contains(match) && last.hasSuffix("\n\n")
      }
    }
    try waitForEvent("the first status", "\"state\":\"running\"")
    #expect(received.hasPrefix("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream"))

    // A button (here workoutctl, the same engine path) and the feed follows.
    #expect(try web.service.control(.pause).ok)
    try waitForEvent("the paused state", "\"state\":\"paused\"")

    // The page resumes: the engine, and so workoutctl, see it.
    let resume = try http(
      "POST", "/api/control", port: web.port, headers: web.cookie(token).merging(["Origin": web.origin]) { $1 },
      body: "{\"command\":\"resume\"}")
    #expect(resume.status == 200 && resume.body.contains("\"ok\":true"), "\(resume)")
    #expect(try web.service.status().state == .running)
    try waitForEvent("the running state", "\"state\":\"running\"")
    let refused = try http(
      "POST", "/api/control", port: web.port, headers: web.cookie(token).merging(["Origin": web.origin]) { $1 },
      body: "{\"command\":\"resume\"}")
    #expect(refused.status == 409, "resuming a running session is refused as a button's would be: \(refused)")
    // A drink from the page is kept in the session; one from another site is not.
    let drink = try http(
      "POST", "/api/annotate", port: web.port, headers: web.cookie(token).merging(["Origin": web.origin]) { $1 },
      body: "{\"kind\":\"drink\",\"amount\":500}")
    #expect(drink.status == 200 && drink.body.contains("drink 500 ml"), "\(drink)")
    let forged = try http(
      "POST", "/api/annotate", port: web.port,
      headers: web.cookie(token).merging(["Origin": "http://evil.example"]) { $1 }, body: "{\"kind\":\"drink\"}")
    #expect(forged.status == 403)
    let bad = try http(
      "POST", "/api/annotate", port: web.port, headers: web.cookie(token).merging(["Origin": web.origin]) { $1 },
      body: "{\"kind\":\"rpe\",\"value\":11}")
    #expect(bad.status == 400 && bad.body.contains("1 to 10"), "\(bad)")
    let noSession = try http(
      "POST", "/api/annotate", port: web.port, headers: web.cookie(token).merging(["Origin": web.origin]) { $1 },
      body: "{\"kind\":\"rpe\",\"value\":5,\"session\":99}")
    #expect(noSession.status == 409 && noSession.body.contains("no session 99"), "\(noSession)")
    let sessionID = try #require(try web.service.status().sessionID)
    let notes = try WorkoutStore.openForReading(at: web.dir.database).events(sessionID: sessionID)
      .filter { $0.kind == "annotation" }
    #expect(notes.map(\.detail) == ["drink 500 ml"] && notes.first?.value == 500, "\(notes)")

    let unknown = try http(
      "POST", "/api/control", port: web.port, headers: web.cookie(token).merging(["Origin": web.origin]) { $1 },
      body: "{\"command\":\"reboot\"}")
    #expect(unknown.status == 400)
    feed.close()
  }

  @Test func aPhonePairsOverTLSCheckingTheFingerprintAndPlainHTTPIsRefused() throws {
    let web = try WebService(tls: true)
    try waitFor("the ride to run", timeout: 60) { try web.service.status().state == .running }
    let pairing = try web.ctl(["pair", "--no-qr"])
    try #require(pairing.status == 0, "\(pairing.output)")
    let code = try #require(pairing.output.firstMatch(of: /pairing code: (\S+)/)?.1)
    let printed = try #require(pairing.output.firstMatch(of: /certificate, SHA-256: ([0-9A-F:]{95})/)?.1)
    #expect(pairing.output.contains("open on the phone: https://127.0.0.1:\(web.port)/#pair=\(code)"))

    // Plain HTTP on the HTTPS port is served nothing: a page load is sent to https://, and a
    // request with a token or a code is refused before it is read as one (the code stays open).
    let page = try http("GET", "/", port: web.port)
    #expect(page.status == 301 && page.headers["location"] == "https://127.0.0.1:\(web.port)/", "\(page)")
    let plainPair = try http(
      "POST", "/api/pair", port: web.port, headers: ["Origin": web.origin], body: "{\"code\":\"\(code)\"}")
    #expect(plainPair.status == 400 && plainPair.headers["set-cookie"] == nil, "\(plainPair)")

    let pointsBefore = try web.service.status().points
    let client = try run(
      "/usr/bin/env",
      ["python3", repositoryRoot + "/Tests/IntegrationTests/tls_client.py", String(web.port), String(code)])
    try #require(client.status == 0, "\(client.output)")
    let reply = try #require(
      try JSONSerialization.jsonObject(with: Data(client.output.utf8)) as? [String: Any], "\(client.output)")
    #expect(reply["fingerprint"] as? String == String(printed), "the certificate served is the one pair printed")
    #expect(["TLSv1.2", "TLSv1.3"].contains(reply["version"] as? String ?? ""), "\(reply)")
    #expect(reply["pair"] as? Int == 200 && (reply["cookie"] as? String ?? "").hasSuffix("; Secure"), "\(reply)")
    #expect(reply["status"] as? Int == 200 && reply["state"] as? String == "running", "\(reply)")
    #expect(reply["plainOrigin"] as? Int == 403, "an http:// origin controls an HTTPS page: \(reply)")
    let token = try #require(reply["token"] as? String)
    let plainStatus = try http("GET", "/api/status", port: web.port, headers: web.cookie(token))
    #expect(plainStatus.status == 400 && !plainStatus.body.contains("running"), "\(plainStatus)")
    #expect(
      web.service.log.contains(
        "web: serving the phone page on 127.0.0.1:\(web.port) (HTTPS, certificate SHA-256 \(printed))"))

    // With every place of this address taken (6), the refusal is an HTTPS answer a browser reads.
    let idle = try (0..<6).map { _ in try TCPSocket.connect(host: "127.0.0.1", port: String(web.port)) }
    defer { idle.forEach { $0.close() } }
    usleep(300_000)
    let busy = try run(
      "/usr/bin/env",
      ["python3", repositoryRoot + "/Tests/IntegrationTests/tls_client.py", String(web.port), "--get", "/"])
    #expect(busy.output.contains("\"status\": 503") && busy.output.contains("\"retryAfter\": \"5\""), "\(busy.output)")
    try waitFor("the ride to go on recording", timeout: 20) { try web.service.status().points > pointsBefore + 2 }
    #expect(try web.service.status().state == .running)
  }

  /// `interface`: the page on one network interface only (a hotspot's), not every one.
  @Test func thePageListensOnTheNamedInterfaceOnly() throws {
    let onLoopback = try WebService(extra: "interface = \"lo\"\n")
    #expect(try http("GET", "/", port: onLoopback.port).status == 200)
    #expect(onLoopback.service.log.contains("127.0.0.1:\(onLoopback.port) of lo only"))
    // Bound to another interface, a connection from this machine to 127.0.0.1 (which comes in
    // on lo) is refused by the kernel.
    let interfaces = try FileManager.default.contentsOfDirectory(atPath: "/sys/class/net").sorted()
    guard
      let other = interfaces.first(where: { name in
        name != "lo" && (try? String(contentsOfFile: "/sys/class/net/\(name)/operstate", encoding: .utf8)) == "up\n"
      })
    else {
      print("no interface but lo is up: the refusal half is not tried")
      return
    }
    let elsewhere = try WebService(extra: "interface = \"\(other)\"\n")
    #expect(elsewhere.service.log.contains("of \(other) only"))
    #expect(throws: TCPConnectError.self) { _ = try http("GET", "/", port: elsewhere.port) }
  }

  @Test func badRequestsAndACrowdAreAnsweredAndTheServerGoesOn() throws {
    let web = try WebService(extra: "max_clients = 4\n")
    let socket = try TCPSocket.connect(host: "127.0.0.1", port: String(web.port))
    try socket.send(Array("GET / HTTP/1.1\r\nHost b\r\n\r\n".utf8))
    #expect(try readResponse(socket).status == 400)
    let huge = try TCPSocket.connect(host: "127.0.0.1", port: String(web.port))
    try huge.send(Array(("GET / HTTP/1.1\r\nHost: b\r\nX: " + String(repeating: "a", count: 9000)).utf8))
    #expect(try readResponse(huge).status == 431)

    // Four idle connections hold every place: the fifth is told at once.
    let idle = try (0..<4).map { _ in try TCPSocket.connect(host: "127.0.0.1", port: String(web.port)) }
    usleep(300_000)
    let fifth = try TCPSocket.connect(host: "127.0.0.1", port: String(web.port))
    #expect(try readResponse(fifth).status == 503)
    for connection in idle { connection.close() }
    try waitFor("a place to free up", timeout: 10) { try http("GET", "/", port: web.port).status == 200 }
  }

  @Test func thePairingQRCodeReadsAsTheURL() throws {
    let web = try WebService()
    let reply = try web.ctl(["pair"])
    #expect(reply.status == 0, "\(reply.output)")
    let url = try #require(
      reply.output.split(separator: "\n").first { $0.hasPrefix("open on the phone: ") }?.dropFirst(19))
    #expect(url.hasPrefix("http://127.0.0.1:\(web.port)/#pair="))
    // The terminal's blocks back into modules (light = full block), then a PBM image for zbarimg,
    // a real QR decoder, at 4 pixels a module.
    let rows = reply.output.split(separator: "\n").filter { $0.contains("\u{2588}") }
    var modules: [[Bool]] = []
    for row in rows {
      var upper: [Bool] = []
      var lower: [Bool] = []
      for character in row {
        switch character {
        case "\u{2588}": upper.append(false); lower.append(false)
        case "\u{2584}": upper.append(true); lower.append(false)
        case "\u{2580}": upper.append(false); lower.append(true)
        default: upper.append(true); lower.append(true)
        }
      }
      modules += [upper, lower]
    }
    let scale = 4
    let width = (modules.first?.count ?? 0) * scale
    var pbm = "P1\n\(width) \(modules.count * scale)\n"
    for row in modules {
      let line = row.flatMap { Array(repeating: $0 ? "1" : "0", count: scale) }.joined(separator: " ")
      for _ in 0..<scale { pbm += line + "\n" }
    }
    let image = web.dir.path + "/qr.pbm"
    try pbm.write(toFile: image, atomically: true, encoding: .utf8)
    let decoded = try run("/usr/bin/zbarimg", ["--quiet", "--raw", image])
    #expect(decoded.status == 0, "\(decoded.output)")
    // (zbarimg also says on stderr that it found no D-Bus: not the result.)
    #expect(decoded.output.split(separator: "\n").contains(url), "\(decoded.output)")
  }

  @Test func pairingWhileTheWebServerIsOffSaysHowToTurnItOn() throws {
    let dir = ServiceDirectory()
    let service = try ServiceProcess(dir, arguments: ["--speed", "20"])
    try service.waitUntilReady()
    let reply = try run(
      binaryDirectory + "/workoutctl", ["pair", "--state-dir", dir.state, "--runtime-dir", dir.runtime])
    #expect(reply.status != 0 && reply.output.contains("[web] enabled = true"), "\(reply.output)")
  }
}
