import Foundation
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutTestSupport
import WorkoutUpload

/// `workoutctl uploads`, `workoutctl upload` and the uploads line of `status`, against a
/// stand-in service's replies; and the real service's answer to them.
struct UploadsCLITests {
  static let jobs = [
    UploadJob(
      sessionID: 12, target: .strava, state: .waiting, attempts: 1, retryAt: 4_102_444_800, platformUploadID: "u77",
      reason: "503 Service Unavailable", createdAt: 1_700_000_000),
    UploadJob(
      sessionID: 12, target: .webdav, state: .failed, reason: "401 wrong password\u{1B}[2J", createdAt: 1_700_000_000),
    UploadJob(sessionID: 3, target: .intervalsICU, state: .done, platformID: "i4242", createdAt: 1_600_000_000),
  ]

  @Test func uploadsIsATableWithThePlatformsWordsEscaped() throws {
    let dir = ServiceDirectory()
    let requests = ReceivedLines()
    let server = try dir.answering(ControlReply(ok: true, uploads: Self.jobs), requests: requests)
    defer { server.shutDown() }
    let listed = try dir.workoutctl(["uploads"])
    #expect(listed.status == 0, "\(listed.output)")
    let lines = listed.output.split(separator: "\n").map(String.init)
    #expect(lines.count == 4, "\(listed.output)")
    #expect(lines[0].contains("session") && lines[0].contains("next try") && lines[0].contains("reason"))
    let words = lines.dropFirst().map { $0.split(separator: " ").map(String.init) }
    #expect(
      words[0] == [
        "12", "strava", "waiting", "1", "2100-01-01", "00:00:00Z", "upload", "u77", "503", "Service", "Unavailable",
      ], "\(lines[1])")
    #expect(words[1] == ["12", "webdav", "failed", "0", "-", "-", "401", "wrong", "password\\u{1B}[2J"], "\(lines[2])")
    #expect(words[2] == ["3", "intervals.icu", "done", "0", "-", "i4242"], "\(lines[3])")
    #expect(!listed.output.contains("\u{1B}"), "no escape reaches the terminal")
    let request = try ControlJSON.decode(ControlRequest.self, from: try #require(requests.lines.first))
    #expect(request.command == .listUploads && request.session == nil)

    let json = try dir.workoutctl(["uploads", "--json", "--session", "12"])
    #expect(json.status == 0, "\(json.output)")
    #expect(try ControlJSON.decode([UploadJob].self, from: json.output) == Self.jobs)
    #expect(try ControlJSON.decode(ControlRequest.self, from: requests.lines[1]).session == 12)
  }

  @Test func anEmptyQueueSaysHowToFillIt() throws {
    let dir = ServiceDirectory()
    let server = try dir.answering(ControlReply(ok: true, uploads: []))
    defer { server.shutDown() }
    let listed = try dir.workoutctl(["uploads"])
    #expect(listed.status == 0 && listed.output == "no uploads (workoutctl upload SESSION --to TARGET)\n")
  }

  @Test func uploadQueuesASessionForATargetAgainOnlyWhenAsked() throws {
    let dir = ServiceDirectory()
    let requests = ReceivedLines()
    let server = try dir.answering(
      ControlReply(ok: true, message: "session 3 queued for strava"), requests: requests)
    defer { server.shutDown() }
    let queued = try dir.workoutctl(["upload", "3", "--to", "strava"])
    #expect(queued.status == 0 && queued.output == "session 3 queued for strava\n", "\(queued.output)")
    let again = try run(
      binaryDirectory + "/workoutctl",
      ["--runtime-dir", dir.runtime, "upload", "3", "--to", "strava", "--again"])
    #expect(again.status == 0, "\(again.output)")
    let sent = try requests.lines.map { try ControlJSON.decode(ControlRequest.self, from: $0) }
    #expect(sent.map(\.command) == [.queueUpload, .queueUpload])
    #expect(sent.map(\.session) == [3, 3] && sent.map(\.target) == ["strava", "strava"])
    #expect(sent.map(\.again) == [false, true])
    let missing = try dir.workoutctl(["upload", "3"])
    #expect(missing.status != 0 && missing.output.contains("--to"), "\(missing.output)")
  }

  @Test func aRefusedUploadIsAFailureInTheServicesWords() throws {
    let dir = ServiceDirectory()
    let server = try dir.answering(ControlReply(ok: false, message: "no session 9 (workoutctl sessions lists them)"))
    defer { server.shutDown() }
    let refused = try dir.workoutctl(["upload", "9", "--to", "webdav"])
    #expect(refused.status == 1)
    #expect(refused.output == "workoutctl: no session 9 (workoutctl sessions lists them)\n", "\(refused.output)")
  }

  @Test func statusHasAnUploadsLineWhenThereAreAny() throws {
    let failed = UploadJob(
      sessionID: 12, target: .strava, state: .failed, reason: "401 Unauthorized", createdAt: 1_700_000_000)
    let engine = EngineHarness().engine.status(at: Moment(monotonic: 0, wall: 0))
    let dir = ServiceDirectory()
    let server = try dir.answeringStatus(engine, uploads: UploadCounts(pending: 2, failed: 1, lastFailure: failed))
    defer { server.shutDown() }
    let status = try dir.workoutctl(["status"])
    #expect(status.status == 0, "\(status.output)")
    #expect(
      status.output.contains("\nuploads: 2 pending, 1 FAILED (session 12 to strava: 401 Unauthorized)\n"),
      "\(status.output)")
    let brief = try dir.workoutctl(["status", "--brief"])
    #expect(brief.output.contains("UPLOAD FAILED"), "\(brief.output)")

    let quiet = ServiceDirectory()
    let none = try quiet.answeringStatus(engine)
    defer { none.shutDown() }
    let plain = try quiet.workoutctl(["status"])
    #expect(!plain.output.contains("uploads"), "\(plain.output)")
  }

  /// The service answers the commands itself: with no target configured, it says so.
  @Test func theServiceListsItsQueueAndRefusesATargetNotConfigured() throws {
    let dir = ServiceDirectory()
    let service = try ServiceProcess(dir, arguments: [])
    try service.waitUntilReady()
    let listed = try dir.workoutctl(["uploads"])
    #expect(listed.status == 0 && listed.output.hasPrefix("no uploads"), "\(listed.output)")
    let refused = try dir.workoutctl(["upload", "1", "--to", "strava"])
    #expect(refused.status == 1)
    #expect(refused.output.contains("strava is not configured as an upload target (none is)"), "\(refused.output)")
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
  }
}
