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
}
