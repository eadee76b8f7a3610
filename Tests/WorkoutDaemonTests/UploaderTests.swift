import Foundation
import Logging
import Synchronization
import Testing
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport
import WorkoutUpload

@testable import WorkoutDaemon

#if canImport(Glibc)
  import Glibc
#endif

final class UploadSink: InputSink {
  private let inputs = Mutex<[EngineInput]>([])
  func post(_ input: EngineInput) { inputs.withLock { $0.append(input) } }
  func post(_ input: EngineInput, at moment: Moment) { post(input) }
  var all: [EngineInput] { inputs.withLock { $0 } }
  var statuses: [DeviceStatus] { all.compactMap { if case .device(let status) = $0 { status } else { nil } } }
  var sent: Int { all.filter { if case .uploadsSent = $0 { true } else { false } }.count }
}

/// The real uploader on its thread, with a real store holding a recorded ride and the real
/// HTTP client, against the fake intervals.icu over HTTPS (the test CA as `[upload] ca_file`).
@Suite(.serialized) final class UploaderTests {
  let rides: ManualRuntime
  let certificates: TestCertificates
  let secrets: String
  /// The uploader's wall clock: the manual board's, before the ride's end, so that no retry
  /// time ever comes by itself.
  let wall: Double

  init() throws {
    rides = try ManualRuntime()
    certificates = try TestCertificates(in: rides.directory + "/tls")
    secrets = rides.directory + "/upload-secrets"
    try "intervals_icu_api_key = \"k3y\"\n".write(toFile: secrets, atomically: false, encoding: .utf8)
    chmod(secrets, 0o600)
    // intervals.icu configured before the ride: the ride is its to send.
    try rides.store.makeUploadJobs(for: [.intervalsICU], wall: 0)
    rides.startRiding()
    rides.run(for: 20)
    rides.control(.stop)
    rides.run(for: 5)
    #expect(try rides.store.session(id: 1)?.state == "ended")
    wall = rides.clock.now().wall - 60
  }

  func intervals(_ arguments: [String] = []) throws -> FakePlatformServer {
    try FakePlatformServer(
      script: "fake_intervals_icu.py", certificates: certificates, state: rides.directory + "/intervals-\(UUID())",
      arguments: ["--athlete", "i42", "--api-key", "k3y"] + arguments)
  }

  func settings(baseURL: String) -> UploadSettings {
    var settings = UploadSettings()
    settings.secretsFile = secrets
    settings.caFile = certificates.caFile
    settings.intervalsICU = .init(athleteID: "i42", baseURL: baseURL)
    return settings
  }

  func uploader(_ settings: UploadSettings, sink: UploadSink) -> Uploader {
    let wall = self.wall
    return Uploader(
      settings: settings, store: rides.store, stateDirectory: rides.directory, sink: sink,
      log: Logger(label: "uploader-test") { _ in SwiftLogNoOpLogHandler() }, wall: { wall },
      requestProcess: binaryDirectory + "/workoutd")
  }

  /// The session's job once `done` says so, waiting up to 20 s (a thread of its own sends it).
  func job(until done: (UploadJob) -> Bool) throws -> UploadJob? {
    for _ in 0..<400 {
      if let job = try rides.store.uploadJobs(sessionID: 1).first, done(job) { return job }
      usleep(50_000)
    }
    return try rides.store.uploadJobs(sessionID: 1).first
  }

  @Test func anEndedRideIsSentOnceAndTheLEDSaysSo() throws {
    let server = try intervals()
    defer { server.stop() }
    let sink = UploadSink()
    let part = uploader(settings(baseURL: server.origin), sink: sink)
    try part.start()
    let job = try job { $0.state == .done }
    part.stop()
    #expect(job?.state == .done)
    #expect(job?.platformID == "i1000")
    let created = try server.received().filter { $0["status"] as? Int == 201 }
    #expect(created.count == 1, "the file once")
    #expect((created.first?["filename"] as? String)?.hasSuffix(".fit") == true)
    #expect((created.first?["size"] as? Int ?? 0) > 100, "a FIT file of the ride")
    #expect(sink.sent == 1, "the LED's pattern once the queue is empty")
    #expect(sink.statuses.last?.condition == .available)
    // Kicked again with nothing to send: nothing is sent twice, and no second pattern.
    let again = uploader(settings(baseURL: server.origin), sink: sink)
    try again.start()
    again.kick()
    usleep(300_000)
    again.stop()
    #expect(try server.received().filter { $0["status"] as? Int == 201 }.count == 1)
    #expect(sink.sent == 1)
  }

  @Test func aStopMidUploadLeavesTheJobToTheNextStartWhichDoesNotSendItTwice() throws {
    let server = try intervals()
    defer { server.stop() }
    try server.queueFaults(["silent"])
    let sink = UploadSink()
    let first = uploader(settings(baseURL: server.origin), sink: sink)
    try first.start()
    let sending = try job { $0.state == .sending }
    for _ in 0..<200 where try server.received().isEmpty { usleep(50_000) }
    first.stop()  // as a kill would: the request under way, never answered
    #expect(sending?.state == .sending)
    #expect(try rides.store.uploadJobs(sessionID: 1).first?.state == .sending, "left as it was")
    #expect(try server.received().first?["fault"] as? String == "silent", "the platform had the whole request")
    let second = uploader(settings(baseURL: server.origin), sink: sink)
    try second.start()
    let job = try job { $0.state == .done }
    second.stop()
    #expect(job?.state == .done)
    // The fake kept the first request's file before it fell silent only if it read it all;
    // either way the platform holds one activity.
    let activities =
      try JSONSerialization.jsonObject(
        with: Data(contentsOf: URL(fileURLWithPath: server.state + "/activities.json"))) as? [String: Any]
    #expect(activities?.count == 1)
  }

  /// The installed service's way: each request through the sender's socket, where systemd (here
  /// its systemd-socket-activate, as the unit's Accept=yes does it) runs `workoutd
  /// --upload-request` with the connection as its standard input and output.
  @Test func throughTheSendersSocketAsTheUnitsSendIt() throws {
    let server = try intervals()
    defer { server.stop() }
    let sender = try SocketActivation(
      path: rides.directory + "/upload.sock", program: [binaryDirectory + "/workoutd", "--upload-request"],
      log: rides.directory + "/sender")
    defer { sender.stop() }
    var through = settings(baseURL: server.origin)
    through.senderSocket = sender.path
    let sink = UploadSink()
    let part = uploader(through, sink: sink)
    try part.start()
    let job = try job { $0.state == .done }
    part.stop()
    #expect(job?.state == .done && job?.platformID == "i1000")
    #expect(try server.received().filter { $0["status"] as? Int == 201 }.count == 1)
    #expect(sink.sent == 1)
  }

  /// The service told of a sender's socket that is not there: the job waits, and the uploads
  /// are a fault naming the socket's unit, as a refused key is, until the socket is there.
  @Test func aMissingSendersSocketIsAFaultThatNamesItsUnitUntilItIsThere() throws {
    let server = try intervals()
    defer { server.stop() }
    var missing = settings(baseURL: server.origin)
    missing.senderSocket = rides.directory + "/upload.sock"
    let sink = UploadSink()
    let part = uploader(missing, sink: sink)
    defer { part.stop() }
    try part.start()
    let waiting = try job { $0.attempts == 1 }
    #expect(waiting?.state == .queued)
    #expect(waiting?.reason?.contains("workoutd-upload.socket") == true, "\(waiting?.reason ?? "")")
    // The job's row is written before the status is posted.
    for _ in 0..<100 where sink.statuses.last == nil { usleep(50_000) }
    let fault = try #require(sink.statuses.last)
    #expect(fault.condition == .failing && fault.detail.contains("workoutd-upload.socket"), "\(fault)")
    // The socket started and the queue looked at again: the ride goes, and the fault clears.
    let sender = try SocketActivation(
      path: missing.senderSocket ?? "", program: [binaryDirectory + "/workoutd", "--upload-request"],
      log: rides.directory + "/sender")
    defer { sender.stop() }
    try rides.store.makeUploadRetriesDue(wall: wall)
    part.kick()
    let sent = try job { $0.state == .done }
    #expect(sent?.state == .done && sent?.platformID == "i1000")
    for _ in 0..<100 where sink.statuses.last?.condition != .available { usleep(50_000) }
    #expect(sink.statuses.last?.condition == .available, "\(sink.statuses)")
  }

  @Test func theNetworkDownIsAWaitNotAFault() throws {
    // A port nothing listens on: the connection is refused, as with no route.
    let sink = UploadSink()
    let part = uploader(settings(baseURL: "https://127.0.0.1:1"), sink: sink)
    try part.start()
    let job = try job { $0.attempts == 1 }
    part.stop()
    #expect(job?.state == .queued)
    #expect(job?.retryAt == wall + UploadBackoff().floor)
    #expect(job?.reason?.isEmpty == false)
    #expect(sink.statuses.last?.condition == .available)
    #expect(sink.statuses.last?.detail.contains("1 waiting") == true)
    #expect(sink.sent == 0)
  }

  @Test func aWrongKeyFailsTheJobAndIsAFault() throws {
    let server = try intervals()
    defer { server.stop() }
    try "intervals_icu_api_key = \"wrong\"\n".write(toFile: secrets, atomically: false, encoding: .utf8)
    let sink = UploadSink()
    let part = uploader(settings(baseURL: server.origin), sink: sink)
    try part.start()
    let job = try job { $0.state == .failed }
    part.stop()
    #expect(job?.state == .failed)
    #expect(job?.reason?.contains("refused the key") == true, "\(job?.reason ?? "")")
    #expect(sink.statuses.last?.condition == .failing)
    // A restart does not forget it: the queue holds the refusal, not the pass that met it.
    let restarted = UploadSink()
    let again = uploader(settings(baseURL: server.origin), sink: restarted)
    try again.start()
    for _ in 0..<200 where restarted.statuses.isEmpty { usleep(50_000) }
    again.stop()
    #expect(restarted.statuses.last?.condition == .failing)
    #expect(restarted.statuses.last?.detail.contains("session 1 to intervals.icu") == true)
  }

  @Test func unreadableSecretsAreAFaultAndTheRideWaits() throws {
    chmod(secrets, 0o644)
    let sink = UploadSink()
    let part = uploader(settings(baseURL: "https://127.0.0.1:1"), sink: sink)
    try part.start()
    for _ in 0..<200 where sink.statuses.isEmpty { usleep(50_000) }
    part.stop()
    #expect(sink.statuses.last?.condition == .failing)
    #expect(sink.statuses.last?.detail.contains("can be read by every user") == true)
    #expect(try rides.store.uploadJobs(sessionID: 1).isEmpty, "nothing made or sent until it is put right")
  }
}
