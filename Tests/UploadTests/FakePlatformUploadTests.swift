import Foundation
import Testing
import UploadHTTP
import WorkoutTestSupport
import WorkoutUpload

/// Each conversation run by the real client against its fake platform over HTTPS: success, a
/// 429 with Retry-After, a 5xx, a connection dropped mid-body, a wrong key, a duplicate.
@Suite(.serialized) final class FakePlatformUploadTests {
  let directory: String
  let certificates: TestCertificates
  let client: PlatformHTTPClient

  init() throws {
    directory = try temporaryDirectory("platforms")
    certificates = try TestCertificates(in: directory + "/tls")
    client = PlatformHTTPClient(settings: PlatformHTTPClient.Settings(caFile: certificates.caFile))
  }

  deinit { try? FileManager.default.removeItem(atPath: directory) }

  func intervalsServer() throws -> FakePlatformServer {
    try FakePlatformServer(
      script: "fake_intervals_icu.py", certificates: certificates, state: directory + "/intervals",
      arguments: ["--athlete", "i42", "--api-key", "k3y"])
  }

  func intervals(_ server: FakePlatformServer, key: String = "k3y") -> IntervalsICUUpload {
    IntervalsICUUpload(athleteID: "i42", apiKey: key, baseURL: server.origin)
  }

  func webdavServer() throws -> FakePlatformServer {
    let server = try FakePlatformServer(
      script: "fake_webdav.py", certificates: certificates, state: directory + "/webdav",
      arguments: ["--user", "rider", "--password", "pw"])
    try FileManager.default.createDirectory(atPath: server.state + "/files/Rides", withIntermediateDirectories: true)
    return server
  }

  func webdav(_ server: FakePlatformServer, folder: String = "Rides", password: String = "pw") -> WebDAVUpload {
    WebDAVUpload(collectionURL: server.origin + "/dav/" + folder, user: "rider", password: password)
  }

  /// The requests the server answered with `status`.
  func answered(_ server: FakePlatformServer, _ status: Int) throws -> [[String: Any]] {
    try server.received().filter { $0["status"] as? Int == status }
  }

  @Test func intervalsTakesTheRideOnce() throws {
    let server = try intervalsServer()
    defer { server.stop() }
    let file = rideFile()
    var conversation = intervals(server)
    #expect(try drive(&conversation, client: client, file: file) == .done(platformID: "i1000", duplicate: false))
    let created = try answered(server, 201)
    let digest = try sha256Hex(file, in: directory)
    #expect(created.count == 1 && created.first?["sha256"] as? String == digest)
    #expect(created.first?["filename"] as? String == "ride-7.fit")
  }

  @Test func intervalsSecondUploadOfTheSameRideIsADuplicate() throws {
    let server = try intervalsServer()
    defer { server.stop() }
    var first = intervals(server)
    _ = try drive(&first, client: client, file: rideFile())
    var again = intervals(server)
    #expect(try drive(&again, client: client, file: rideFile()) == .done(platformID: "i1000", duplicate: true))
    #expect(try answered(server, 201).count == 1)
  }

  @Test func intervalsRateLimitIsRetriedAfterWhatItSays() throws {
    let server = try intervalsServer()
    defer { server.stop() }
    try server.queueFaults(["429 30", "429-date 90"])
    var conversation = intervals(server)
    #expect(
      try drive(&conversation, client: client, file: rideFile())
        == .retry(
          after: 30,
          reason: #"intervals.icu is rate limiting (HTTP 429): {"status": 429, "error": "Too many requests"}"#))
    var dated = intervals(server)
    guard case .retry(let after, _) = try drive(&dated, client: client, file: rideFile()) else {
      Issue.record("a dated 429 was not retried")
      return
    }
    #expect(after == 90)
    var later = intervals(server)
    #expect(try drive(&later, client: client, file: rideFile()) == .done(platformID: "i1000", duplicate: false))
  }

  @Test func intervalsServerErrorAndDroppedConnectionAreRetried() throws {
    let server = try intervalsServer()
    defer { server.stop() }
    try server.queueFaults(["503", "drop"])
    for _ in 0..<2 {
      var conversation = intervals(server)
      guard case .retry(nil, let reason) = try drive(&conversation, client: client, file: rideFile(size: 300_000))
      else {
        Issue.record("not retried")
        continue
      }
      #expect(reason.contains("HTTP 503") || reason.contains("unreachable"), "\(reason)")
    }
    #expect(try answered(server, 201).isEmpty)
    var conversation = intervals(server)
    #expect(
      try drive(&conversation, client: client, file: rideFile(size: 300_000))
        == .done(platformID: "i1000", duplicate: false))
  }

  @Test func intervalsWrongKeyIsRejected() throws {
    let server = try intervalsServer()
    defer { server.stop() }
    var conversation = intervals(server, key: "wrong")
    guard case .rejected(let reason) = try drive(&conversation, client: client, file: rideFile()) else {
      Issue.record("a wrong key was not rejected")
      return
    }
    #expect(reason.contains("refused the key (HTTP 401)") && !reason.contains("wrong"))
    #expect(try answered(server, 201).isEmpty)
  }

  @Test func webdavPutsTheRideOnce() throws {
    let server = try webdavServer()
    defer { server.stop() }
    let file = rideFile()
    var conversation = webdav(server)
    let outcome = try drive(&conversation, client: client, file: file, fileName: "2026-12-07 ride.fit")
    #expect(outcome == .done(platformID: server.origin + "/dav/Rides/2026-12-07%20ride.fit", duplicate: false))
    let stored = try [UInt8](Data(contentsOf: URL(fileURLWithPath: server.state + "/files/Rides/2026-12-07 ride.fit")))
    #expect(stored == file)
    #expect(try answered(server, 201).count == 1)
  }

  @Test func webdavSecondPutOfTheSameRideIsADuplicate() throws {
    let server = try webdavServer()
    defer { server.stop() }
    var first = webdav(server)
    _ = try drive(&first, client: client, file: rideFile())
    var again = webdav(server)
    #expect(
      try drive(&again, client: client, file: rideFile())
        == .done(platformID: server.origin + "/dav/Rides/ride-7.fit", duplicate: true))
    #expect(try answered(server, 201).count == 1 && answered(server, 412).count == 1)
  }

  @Test func webdavMakesAMissingFolder() throws {
    let server = try webdavServer()
    defer { server.stop() }
    var conversation = webdav(server, folder: "New")
    #expect(
      try drive(&conversation, client: client, file: rideFile())
        == .done(platformID: server.origin + "/dav/New/ride-7.fit", duplicate: false))
    #expect(try server.received().map { "\($0["method"]!) \($0["status"]!)" } == ["PUT 409", "MKCOL 201", "PUT 201"])
    var deeper = webdav(server, folder: "Missing/Deeper")
    guard case .rejected(let reason) = try drive(&deeper, client: client, file: rideFile()) else {
      Issue.record("a folder without its parent was not refused")
      return
    }
    #expect(reason.contains("parent does not exist"))
  }

  @Test func webdavFaultsAreRetriedAndAWrongPasswordRejected() throws {
    let server = try webdavServer()
    defer { server.stop() }
    try server.queueFaults(["429 12", "500", "drop"])
    var limited = webdav(server)
    #expect(
      try drive(&limited, client: client, file: rideFile())
        == .retry(
          after: 12, reason: #"WebDAV is rate limiting (HTTP 429): {"status": 429, "error": "Too many requests"}"#))
    for _ in 0..<2 {
      var conversation = webdav(server)
      guard case .retry = try drive(&conversation, client: client, file: rideFile(size: 300_000)) else {
        Issue.record("not retried")
        continue
      }
    }
    var wrong = webdav(server, password: "nope")
    guard case .rejected(let reason) = try drive(&wrong, client: client, file: rideFile()) else {
      Issue.record("a wrong password was not rejected")
      return
    }
    #expect(reason.contains("refused the key (HTTP 401)") && !reason.contains("nope"))
    #expect(!FileManager.default.fileExists(atPath: server.state + "/files/Rides/ride-7.fit"))
  }
}
