import Foundation
import Testing

@testable import WorkoutUpload

let platforms = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .appendingPathComponent("Platforms")

/// The fake Strava the uploader's end-to-end tests run against, checked with Python's own
/// http.client over TLS; and the conversation driven against it through strava_relay.py until
/// the project's HTTP client can be.
struct FakeStravaTests {
  @Test func theFakeBehavesAsStravasDocumentationSays() throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", platforms.appendingPathComponent("check_fake_strava.py").path]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let words = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(words)")
    #expect(words.contains("all checks hold"))
  }

  @Test func aRideWhoseAnswerWasLostIsNotSentTwice() throws {
    let wall = Date().timeIntervalSince1970
    let relay = try StravaRelay(setup: [
      "codes": ["c0de": "read,activity:write"], "processing_polls": 2,
      "faults": [["method": "POST", "path": "/api/v3/uploads", "answer": "drop_reply"]],
    ])
    defer { relay.stop() }
    // The login, as workoutctl will make it.
    let code = try StravaLogin.authorizationCode(fromPasted: "http://localhost/?state=&code=c0de&scope=activity:write")
    let login = try StravaLogin.tokens(
      fromExchange: relay.send(StravaLogin.tokenExchange(code: code, app: app, server: relay.server)))
    #expect(login.expiresAt > wall + 6 * 3600 - 60)

    // The first attempt's upload is taken but its answer is cut: a retry.
    var credentials = login.fileContent()
    var job = UploadJob(sessionID: 7, target: .strava, state: .sending, createdAt: wall)
    var first = StravaUpload(
      app: app, tokens: try StravaTokens(fileContent: credentials), now: wall, server: relay.server)
    let lost = try relay.drive(&first, job: &job, credentials: &credentials, file: ride)
    guard case .retry = lost else {
      Issue.record("a cut answer should be retried, got \(lost)")
      return
    }
    // The second sends the same external_id, and Strava's duplicate answer names the ride.
    var second = StravaUpload(
      app: app, tokens: try StravaTokens(fileContent: credentials), now: wall, server: relay.server)
    let done = try relay.drive(&second, job: &job, credentials: &credentials, file: ride)
    let state = try relay.state()
    let activities = try #require(state["activities"] as? [[String: Any]])
    #expect(activities.count == 1)
    #expect(done == .done(platformID: "\(activities[0]["id"] as? Int ?? -1)", duplicate: true))
    #expect(job.platformUploadID != nil)
  }

  @Test func anExpiredTokenIsRefreshedKeptAndAWaitingJobPolled() throws {
    let wall = Date().timeIntervalSince1970
    let relay = try StravaRelay(setup: [
      "access_token": "old-access", "refresh_token": "old-refresh", "expires_at": Int(wall) - 5,
      "processing_polls": 3,
    ])
    defer { relay.stop() }
    var credentials = StravaTokens(accessToken: "old-access", expiresAt: wall - 5, refreshToken: "old-refresh")
      .fileContent()
    var job = UploadJob(sessionID: 8, target: .strava, createdAt: wall)
    var conversation = StravaUpload(
      app: app, tokens: try StravaTokens(fileContent: credentials), now: wall, server: relay.server)
    // Stopped once the upload id is kept, as a power cut would.
    let cut = try relay.drive(&conversation, job: &job, credentials: &credentials, file: ride, stopAfterUploadID: true)
    #expect(cut == nil && job.state == .waiting)
    let rotated = try StravaTokens(fileContent: credentials)
    #expect(rotated.refreshToken != "old-refresh" && rotated.accessToken != "old-access")

    var restarted = StravaUpload(app: app, tokens: rotated, now: wall, server: relay.server)
    let done = try relay.drive(&restarted, job: &job, credentials: &credentials, file: ride)
    guard case .done(let activity?, duplicate: false) = done else {
      Issue.record("expected the activity, got \(String(describing: done))")
      return
    }
    let received = try relay.received()
    #expect(received.filter { $0["path"] as? String == "/api/v3/uploads" }.count == 1, "the file went once")
    #expect(received.filter { ($0["path"] as? String)?.hasPrefix("/api/v3/uploads/") == true }.count == 3)
    #expect(Int64(activity) != nil)
  }
}

/// strava_relay.py: the fake Strava, and requests relayed to it a JSON line each way.
final class StravaRelay {
  let process = Process()
  let input = Pipe()
  let output = Pipe()
  var buffer: [UInt8] = []
  var server = StravaServer.strava
  var stateDirectory = ""

  init(setup: [String: Any]) throws {
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", platforms.appendingPathComponent("strava_relay.py").path]
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    try write(setup)
    let hello = try readObject()
    let base = try #require(hello["base"] as? String)
    server = StravaServer(tokenURL: base + "/oauth/token", apiURL: base + "/api/v3")
    stateDirectory = try #require(hello["state"] as? String)
  }

  func stop() {
    try? input.fileHandleForWriting.close()
    process.waitUntilExit()
  }

  func send(_ request: PlatformRequest) throws -> PlatformReply {
    try write([
      "method": request.method, "url": request.url, "headers": request.headers.map { [$0.name, $0.value] },
      "body": Data(request.body).base64EncodedString(),
    ])
    let reply = try readObject()
    if let words = reply["unreachable"] as? String { return .unreachable(words) }
    let headers = (reply["headers"] as? [[String]] ?? []).map { HeaderField($0[0], $0[1]) }
    let body = Data(base64Encoded: reply["body"] as? String ?? "") ?? Data()
    return .answered(status: reply["status"] as? Int ?? 0, headers: headers, body: Array(body))
  }

  /// Runs one attempt as the uploader will: requests sent (their `after` not waited: the fake
  /// counts polls, not seconds), keeps recorded into `job` and `credentials`. Nil when stopped
  /// after the upload id was kept.
  func drive(
    _ conversation: inout StravaUpload, job: inout UploadJob, credentials: inout [UInt8], file: [UInt8],
    stopAfterUploadID: Bool = false
  ) throws -> UploadOutcome? {
    var step = conversation.start(job: job, file: file, fileName: "ride.fit")
    for _ in 0..<40 {
      switch step {
      case .send(let request, _):
        step = conversation.receive(try send(request))
      case .keep(.credentials(let bytes)):
        credentials = bytes
        step = conversation.kept()
      case .keep(.platformUploadID(let id)):
        job.platformUploadID = id
        job.state = .waiting
        if stopAfterUploadID { return nil }
        step = conversation.kept()
      case .finished(let outcome):
        return outcome
      }
    }
    Issue.record("the conversation did not end")
    return nil
  }

  func state() throws -> [String: Any] {
    let data = try Data(contentsOf: URL(fileURLWithPath: stateDirectory + "/state.json"))
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
  }

  func received() throws -> [[String: Any]] {
    let text = try String(contentsOfFile: stateDirectory + "/received.jsonl", encoding: .utf8)
    return try text.split(separator: "\n").map {
      try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
    }
  }

  private func write(_ object: Any) throws {
    var line = try JSONSerialization.data(withJSONObject: object)
    line.append(UInt8(ascii: "\n"))
    try input.fileHandleForWriting.write(contentsOf: line)
  }

  private func readObject() throws -> [String: Any] {
    while !buffer.contains(UInt8(ascii: "\n")) {
      let chunk = output.fileHandleForReading.availableData
      if chunk.isEmpty { throw RelayEnded() }
      buffer += chunk
    }
    let end = buffer.firstIndex(of: UInt8(ascii: "\n"))!
    let line = Data(buffer[..<end])
    buffer.removeFirst(end + 1)
    return try #require(try JSONSerialization.jsonObject(with: line) as? [String: Any])
  }

  struct RelayEnded: Error {}
}
