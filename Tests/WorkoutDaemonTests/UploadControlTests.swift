import Foundation
import LinuxSupport
import Logging
import Synchronization
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore
import WorkoutUpload

@testable import WorkoutDaemon

/// The control socket's upload commands, answered through the real store of a service's
/// executor on a manual clock, and `status` with the queue's counts.
@Suite struct UploadControlTests {
  static let log = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

  /// A ride recorded and ended (session 1) on the manual runtime.
  /// A ride recorded and ended; the `configured` targets were configured before it.
  func endedRide(configured: [UploadTarget] = []) throws -> ManualRuntime {
    let h = try ManualRuntime(uploadTargets: configured)
    try h.store.makeUploadJobs(for: configured, wall: 0)
    h.startRiding()
    h.run(for: 3)
    #expect(h.control(.stop)?.ok == true)
    h.run(for: 1)
    #expect(try h.store.session(id: 1)?.state == "ended")
    return h
  }

  static func queue(_ session: Int64, to target: String, again: Bool = false) -> ControlRequest {
    ControlRequest(command: .queueUpload, session: session, target: target, again: again)
  }

  @Test func aRideIsQueuedForAConfiguredTargetAndTheUploaderWoken() throws {
    let h = try endedRide()
    let control = UploadControl(
      store: h.store, settings: .naming([.strava]), stateDirectory: h.directory, log: Self.log)
    let wakes = Atomic<Int>(0)
    control.onQueued { wakes.add(1, ordering: .relaxed) }

    let queued = control.handle(Self.queue(1, to: "strava"), wall: 5_000)
    #expect(queued.ok && queued.message == "session 1 queued for strava", "\(queued)")
    #expect(queued.uploads == [UploadJob(sessionID: 1, target: .strava, createdAt: 5_000)])
    #expect(wakes.load(ordering: .relaxed) == 1)

    let twice = control.handle(Self.queue(1, to: "strava", again: true), wall: 5_001)
    #expect(twice.ok && twice.message == "session 1 is on its way to strava already (queued)", "\(twice)")
    #expect(wakes.load(ordering: .relaxed) == 1, "nothing new to wake for")

    let listed = control.handle(ControlRequest(command: .listUploads), wall: 5_002)
    #expect(listed.ok && listed.uploads?.map(\.sessionID) == [1])
    #expect(control.handle(ControlRequest(command: .listUploads, session: 2), wall: 5_002).uploads == [])
  }

  @Test func whatCannotBeQueuedIsRefusedInWords() throws {
    let h = try ManualRuntime()
    h.startRiding()
    let control = UploadControl(
      store: h.store, settings: .naming([.intervalsICU, .webdav]), stateDirectory: h.directory, log: Self.log)
    func refusal(_ request: ControlRequest) -> String {
      let reply = control.handle(request, wall: 1)
      #expect(!reply.ok)
      return reply.message ?? ""
    }
    #expect(refusal(Self.queue(1, to: "strava")).contains("strava is not configured as an upload target"))
    #expect(refusal(Self.queue(1, to: "strava")).contains("intervals.icu, webdav are"))
    #expect(
      refusal(Self.queue(1, to: "dropbox")) == "no upload target \"dropbox\" (known: intervals.icu, strava, webdav)")
    #expect(refusal(Self.queue(9, to: "webdav")) == "no session 9 (workoutctl sessions lists them)")
    #expect(refusal(Self.queue(1, to: "webdav")) == "session 1 is running: a ride is sent once it has ended")
    #expect(refusal(ControlRequest(command: .queueUpload, target: "webdav")) == "queueUpload needs session and target")
    let none = UploadControl(store: h.store, settings: .naming([]), stateDirectory: h.directory, log: Self.log)
    #expect(none.handle(Self.queue(1, to: "webdav"), wall: 1).message?.contains("(none is)") == true)
  }

  @Test func aSentOrFailedRideGoesAgainOnlyWhenAsked() throws {
    let h = try endedRide()
    let control = UploadControl(
      store: h.store, settings: .naming([.webdav]), stateDirectory: h.directory, log: Self.log)
    let job = try #require(control.handle(Self.queue(1, to: "webdav"), wall: 10).uploads?.first)
    try h.store.saveUploadJob(job.starting(at: 11).ending(with: .done(platformID: "r1", duplicate: false), at: 12))
    let done = control.handle(Self.queue(1, to: "webdav"), wall: 13)
    #expect(!done.ok && done.message == "session 1 was sent to webdav already (r1): --again sends it again")
    let again = control.handle(Self.queue(1, to: "webdav", again: true), wall: 14)
    #expect(again.ok && again.uploads?.first?.state == .queued && again.uploads?.first?.platformID == nil)
    try h.store.saveUploadJob(job.starting(at: 15).ending(with: .rejected(reason: "401 Unauthorized"), at: 16))
    let failed = control.handle(Self.queue(1, to: "webdav"), wall: 17)
    #expect(!failed.ok && failed.message == "session 1 failed to go to webdav: 401 Unauthorized; --again tries again")
  }

  /// `status` carries the queue's counts once it holds pending or failed jobs, and none before;
  /// the jobs of a target the configuration no longer names are not counted.
  @Test func statusCountsPendingAndFailedUploads() throws {
    let h = try endedRide(configured: [.strava, .webdav])
    #expect(h.control(.status)?.status?.uploads == nil)
    let jobs = try h.store.makeUploadJobs(for: [.strava, .webdav], wall: 0)
    #expect(jobs.count == 2)
    _ = try h.store.queueUpload(sessionID: 1, target: .intervalsICU, again: false, wall: 0)
    #expect(h.control(.status)?.status?.uploads == UploadCounts(pending: 2, failed: 0))
    let failed = jobs[0].ending(with: .rejected(reason: "bad key"), at: 20)
    try h.store.saveUploadJob(failed)
    let status = try #require(h.control(.status)?.status)
    #expect(status.uploads == UploadCounts(pending: 1, failed: 1, lastFailure: failed))
    let json = try ControlJSON.encode(status)
    let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    let uploads = try #require(object["uploads"] as? [String: Any])
    #expect(uploads["pending"] as? Int == 1 && uploads["failed"] as? Int == 1)
    #expect((uploads["lastFailure"] as? [String: Any])?["reason"] as? String == "bad key")
    #expect(try ControlJSON.decode(StatusReport.self, from: json).uploads == status.uploads)
  }

  /// The commands reach the store through the control socket on the client's thread: the
  /// engine's loop is not running here.
  @Test func theControlSocketAnswersTheUploadCommands() throws {
    let h = try endedRide()
    let path = h.directory + "/control.sock"
    let server = try ControlServer(path: path, group: nil, queue: h.queue, log: Self.log)
    server.uploads = UploadControl(
      store: h.store, settings: .naming([.intervalsICU]), stateDirectory: h.directory, log: Self.log)
    try server.start()
    defer { server.stop() }
    let queued = try sendControl(Self.queue(1, to: "intervals.icu"), socketPath: path)
    #expect(queued.ok && queued.uploads?.first?.target == .intervalsICU, "\(queued)")
    let listed = try sendControl(ControlRequest(command: .listUploads, session: 1), socketPath: path)
    #expect(listed.uploads?.map(\.target) == [.intervalsICU])
  }
}
