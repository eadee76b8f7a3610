import Foundation
import Testing
import UploadHTTP
import WorkoutTestSupport
import WorkoutUpload

/// Strava's conversation run by the real client against fake_strava.py over HTTPS with the test
/// CA: the login's code exchange, an upload polled to its activity, an expired token refreshed
/// and kept, a duplicate, a 429, and an answer cut then the retry ending as a duplicate.
@Suite(.serialized) final class FakeStravaUploadTests {
  let directory: String
  let certificates: TestCertificates
  let client: PlatformHTTPClient
  let app = StravaApp(clientID: "4711", clientSecret: "app-secret")
  let wall = Date().timeIntervalSince1970

  init() throws {
    directory = try temporaryDirectory("strava")
    certificates = try TestCertificates(in: directory + "/tls")
    client = PlatformHTTPClient(settings: PlatformHTTPClient.Settings(caFile: certificates.caFile))
  }

  deinit { try? FileManager.default.removeItem(atPath: directory) }

  /// The fake with `setup` (fake_strava.py's setup.json) and the endpoints it serves.
  func stravaServer(_ setup: [String: Any]) throws -> (FakePlatformServer, StravaServer) {
    let state = directory + "/strava"
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    try JSONSerialization.data(withJSONObject: setup).write(to: URL(fileURLWithPath: state + "/setup.json"))
    let server = try FakePlatformServer(
      script: "fake_strava.py", certificates: certificates, state: state, arguments: [])
    return (server, StravaServer(tokenURL: server.origin + "/oauth/token", apiURL: server.origin + "/api/v3"))
  }

  /// The fake's athlete, with tokens good for six hours.
  func loggedIn(_ extra: [String: Any] = [:]) -> [String: Any] {
    [
      "access_token": "access-1", "refresh_token": "refresh-1", "expires_at": Int(wall) + 6 * 3600,
      "processing_polls": 2,
    ].merging(extra) { $1 }
  }

  var tokens: StravaTokens {
    StravaTokens(accessToken: "access-1", expiresAt: wall + 6 * 3600, refreshToken: "refresh-1")
  }

  /// One attempt as the uploader runs it: each request sent by the client (a poll's delay not
  /// waited: the fake counts polls, not seconds), each keep recorded in `job` and `credentials`.
  /// Nil when stopped once the upload id is kept, as a power cut would stop it.
  func drive(
    _ conversation: inout StravaUpload, job: inout UploadJob, credentials: inout [UInt8], file: [UInt8],
    stopAfterUploadID: Bool = false
  ) throws -> UploadOutcome? {
    var step = conversation.start(job: job, file: file, fileName: "ride.fit")
    for _ in 0..<40 {
      switch step {
      case .send(let request, _):
        step = conversation.receive(client.perform(request))
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
    throw HarnessFailure(description: "the conversation did not end in 40 steps")
  }

  func requests(_ server: FakePlatformServer, _ method: String, _ path: String) throws -> [[String: Any]] {
    try server.received().filter { $0["method"] as? String == method && $0["path"] as? String == path }
  }

  func polls(_ server: FakePlatformServer) throws -> Int {
    try server.received().filter { ($0["path"] as? String)?.hasPrefix("/api/v3/uploads/") == true }.count
  }

  @Test func theCodeIsTradedAndTheRidePolledToItsActivity() throws {
    let (server, endpoints) = try stravaServer(["codes": ["c0de": "read,activity:write"], "processing_polls": 2])
    defer { server.stop() }
    let code = try StravaLogin.authorizationCode(fromPasted: "http://localhost/?state=&code=c0de&scope=activity:write")
    let login = try StravaLogin.tokens(
      fromExchange: client.perform(StravaLogin.tokenExchange(code: code, app: app, server: endpoints)))
    #expect(login.expiresAt > wall + 6 * 3600 - 60)

    var credentials = login.fileContent()
    var job = UploadJob(sessionID: 7, target: .strava, state: .sending, createdAt: wall)
    var conversation = StravaUpload(app: app, tokens: login, now: wall, server: endpoints)
    let done = try drive(&conversation, job: &job, credentials: &credentials, file: rideFile())
    guard case .done(let activity?, duplicate: false) = done else {
      Issue.record("expected the activity, got \(String(describing: done))")
      return
    }
    #expect(Int64(activity) != nil && job.platformUploadID != nil)
    #expect(try requests(server, "POST", "/api/v3/uploads").count == 1)
    #expect(try polls(server) == 2, "processing for two polls: the second has the activity")
  }

  @Test func anExpiredTokenIsRefreshedKeptAndAWaitingJobPolled() throws {
    let (server, endpoints) = try stravaServer(loggedIn(["expires_at": Int(wall) - 5]))
    defer { server.stop() }
    let expired = StravaTokens(accessToken: "access-1", expiresAt: wall - 5, refreshToken: "refresh-1")
    var credentials = expired.fileContent()
    var job = UploadJob(sessionID: 8, target: .strava, state: .sending, createdAt: wall)
    var conversation = StravaUpload(app: app, tokens: expired, now: wall, server: endpoints)
    let cut = try drive(
      &conversation, job: &job, credentials: &credentials, file: rideFile(), stopAfterUploadID: true)
    #expect(cut == nil && job.state == .waiting)
    let kept = try StravaTokens(fileContent: credentials)
    #expect(kept.accessToken != "access-1" && kept.refreshToken != "refresh-1" && kept.expiresAt > wall)
    #expect(try requests(server, "POST", "/oauth/token").count == 1)

    // Restarted with the kept tokens, the waiting job is polled; the file is not sent again.
    var restarted = StravaUpload(app: app, tokens: kept, now: wall, server: endpoints)
    let done = try drive(&restarted, job: &job, credentials: &credentials, file: rideFile())
    guard case .done(_?, duplicate: false) = done else {
      Issue.record("expected the activity, got \(String(describing: done))")
      return
    }
    #expect(try requests(server, "POST", "/api/v3/uploads").count == 1, "the file went once")
    #expect(try requests(server, "POST", "/oauth/token").count == 1, "the kept token still good")
  }

  @Test func theSameRideAgainIsADuplicateOfItsActivity() throws {
    let (server, endpoints) = try stravaServer(loggedIn())
    defer { server.stop() }
    var credentials = tokens.fileContent()
    var first = UploadJob(sessionID: 9, target: .strava, state: .sending, createdAt: wall)
    var one = StravaUpload(app: app, tokens: tokens, now: wall, server: endpoints)
    let created = try drive(&one, job: &first, credentials: &credentials, file: rideFile(seed: 9))
    // Another job (another external_id) with the same file's bytes.
    var second = UploadJob(sessionID: 10, target: .strava, state: .sending, createdAt: wall)
    var two = StravaUpload(app: app, tokens: tokens, now: wall, server: endpoints)
    let again = try drive(&two, job: &second, credentials: &credentials, file: rideFile(seed: 9))
    guard case .done(let activity?, duplicate: false) = created else {
      Issue.record("expected the activity, got \(String(describing: created))")
      return
    }
    #expect(again == .done(platformID: activity, duplicate: true))
  }

  @Test func aRateLimitIsRetriedWhenStravasWindowTurns() throws {
    let (server, endpoints) = try stravaServer(
      loggedIn(["faults": [["method": "POST", "path": "/api/v3/uploads", "answer": 429]]]))
    defer { server.stop() }
    var credentials = tokens.fileContent()
    var job = UploadJob(sessionID: 11, target: .strava, state: .sending, createdAt: wall)
    var conversation = StravaUpload(app: app, tokens: tokens, now: wall, server: endpoints)
    let outcome = try drive(&conversation, job: &job, credentials: &credentials, file: rideFile())
    guard case .retry(let after?, let reason) = outcome else {
      Issue.record("a 429 should be retried after a wait, got \(String(describing: outcome))")
      return
    }
    // Until the next quarter hour at the latest (the fake's usage is below the daily limit).
    #expect(after > 0 && after <= 15 * 60 && reason.contains("rate limit"))
    #expect(job.platformUploadID == nil)
  }

  @Test func aRideWhoseAnswerWasCutIsNotSentTwice() throws {
    let (server, endpoints) = try stravaServer(
      loggedIn(["faults": [["method": "POST", "path": "/api/v3/uploads", "answer": "drop_reply"]]]))
    defer { server.stop() }
    var credentials = tokens.fileContent()
    var job = UploadJob(sessionID: 12, target: .strava, state: .sending, createdAt: wall)
    var first = StravaUpload(app: app, tokens: tokens, now: wall, server: endpoints)
    let lost = try drive(&first, job: &job, credentials: &credentials, file: rideFile())
    guard case .retry = lost else {
      Issue.record("a cut answer should be retried, got \(String(describing: lost))")
      return
    }
    // The retry sends the same external_id; Strava's duplicate answer names the activity.
    var second = StravaUpload(app: app, tokens: tokens, now: wall, server: endpoints)
    let done = try drive(&second, job: &job, credentials: &credentials, file: rideFile())
    let state = try JSONSerialization.jsonObject(
      with: Data(contentsOf: URL(fileURLWithPath: server.state + "/state.json")))
    let activities = try #require((state as? [String: Any])?["activities"] as? [[String: Any]])
    #expect(activities.count == 1)
    #expect(done == .done(platformID: "\(activities[0]["id"] as? Int ?? -1)", duplicate: true))
  }
}
