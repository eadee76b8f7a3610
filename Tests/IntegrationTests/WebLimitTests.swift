import Foundation
import LinuxSupport
import Testing
import WorkoutControl

/// The limits per client address (issue 57), as a host on the LAN would test them: the rider's
/// phone at 127.0.0.1, another host at 127.0.0.2, the real service between them.
@Suite(.serialized)
struct WebLimitTests {
  static let rider = "127.0.0.1"
  static let neighbour = "127.0.0.2"

  @Test func aFloodOfWrongCodesFromOneAddressNeitherLocksOutNorVoidsTheRidersCode() throws {
    let web = try WebService()
    try waitFor("the ride to run", timeout: 60) { try web.service.status().state == .running }
    let pointsBefore = try web.service.status().points
    func guess(_ number: Int) throws -> Int {
      try http(
        "POST", "/api/pair", port: web.port, headers: ["Origin": web.origin],
        body: "{\"code\":\"ZZZZ-\(String(format: "%04d", number))\"}", from: Self.neighbour
      ).status
    }
    // The neighbour guesses before any code is open, then on while the rider's code is open.
    var statuses = try (0..<4).map(guess)
    let code = try web.pairingCode()
    statuses += try (4..<14).map(guess)
    // Its five wrong tries close the code to it alone; ten failures in a minute limit it alone.
    #expect(statuses.prefix(4).allSatisfy { $0 == 410 }, "\(statuses)")
    #expect(statuses[4..<9].allSatisfy { $0 == 403 }, "\(statuses)")
    #expect(statuses[9] == 410 && statuses.suffix(4).allSatisfy { $0 == 429 }, "\(statuses)")
    // The rider's phone pairs with the code, first time.
    let paired = try http(
      "POST", "/api/pair", port: web.port, headers: ["Origin": web.origin], body: "{\"code\":\"\(code)\"}",
      from: Self.rider)
    #expect(paired.status == 200 && paired.headers["set-cookie"] != nil, "\(paired)")
    // The neighbour is still limited, and told for how long.
    let limited = try http(
      "POST", "/api/pair", port: web.port, headers: ["Origin": web.origin], body: "{\"code\":\"\(code)\"}",
      from: Self.neighbour)
    #expect(limited.status == 429 && limited.headers["retry-after"] != nil, "\(limited)")
    try waitFor("the ride to go on recording", timeout: 20) { try web.service.status().points > pointsBefore + 2 }
  }

  @Test func anIdleCrowdFromOneAddressIsRefusedReadablyAndAnotherUsesThePage() throws {
    let web = try WebService()
    try waitFor("the ride to run", timeout: 60) { try web.service.status().state == .running }
    let token = try web.pair()
    let pointsBefore = try web.service.status().points

    // The neighbour opens as many idle connections as the server has places (16).
    let crowd = try (0..<16).map { _ in try connect(from: Self.neighbour, port: web.port) }
    let opened = SystemClocks.monotonic()
    // Beyond its six, each is told at once, in HTTP it can read: 503 and Retry-After.
    for connection in crowd[6...] {
      let refused = try readResponse(connection, deadline: SystemClocks.monotonic() + 3)
      #expect(refused.status == 503 && refused.headers["retry-after"] == "5", "\(refused)")
      #expect(refused.body.contains("from this address"), "\(refused.body)")
    }
    // One that sends its request with the connection reads its 503 too (no reset).
    let eager = try connect(from: Self.neighbour, port: web.port)
    try eager.send(Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(web.port)\r\n\r\n".utf8))
    #expect(try readResponse(eager).status == 503)

    // Meanwhile the rider's phone loads the page, reads the status and gets its live feed.
    for path in ["/", "/app.js", "/app.css"] {
      #expect(try http("GET", path, port: web.port, from: Self.rider).status == 200, "\(path)")
    }
    let status = try http("GET", "/api/status", port: web.port, headers: web.cookie(token), from: Self.rider)
    #expect(status.status == 200 && status.body.contains("\"state\":\"running\""), "\(status)")
    let feed = try connect(from: Self.rider, port: web.port)
    defer { feed.close() }
    try feed.send(
      Array("GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:\(web.port)\r\nCookie: workoutd_token=\(token)\r\n\r\n".utf8))
    var received = ""
    try waitFor("the first status", timeout: 20) {
      if let chunk = try? feed.receive(deadline: SystemClocks.monotonic() + 1) {
        received += String(decoding: chunk, as: UTF8.self)
      }
      return received.contains("event: status")
    }
    #expect(SystemClocks.monotonic() < opened + 5, "all of this while the crowd held its places")

    // A stranger's idle connection is closed after 5 s, not the 15 s a paired phone's has.
    let closed = try crowd[0].receive(deadline: opened + 10)
    #expect(closed.isEmpty && SystemClocks.monotonic() < opened + 7)
    for connection in crowd { connection.close() }
    try waitFor("the ride to go on recording", timeout: 20) { try web.service.status().points > pointsBefore + 2 }
  }
}
