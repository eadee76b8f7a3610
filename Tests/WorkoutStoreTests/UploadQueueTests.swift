import Foundation
import GRDB
import Testing
import WorkoutUpload

@testable import WorkoutStore

/// The upload queue in the database: its migration, its jobs made and queued by hand, the order
/// they are worked in, and their changes on the disk once saved.
struct UploadQueueTests {
  /// A store holding a ride ended at each of `ends` (wall times; session ids from 1), and, when
  /// `unfinished`, one more session still running after them; the `configured` targets were
  /// configured before the first ride, so they take them all.
  func store(
    endingAt ends: [Double], unfinished: Bool = false, configured: [UploadTarget] = UploadTarget.allCases,
    in dir: TemporaryDirectory
  ) throws -> WorkoutStore {
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    #expect(try store.makeUploadJobs(for: configured, wall: 0).isEmpty)
    try recordRide(into: store, seconds: 3, stop: true)
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { db in
      try db.execute(sql: "CREATE TEMP TABLE ride AS SELECT * FROM session WHERE id = 1")
      try db.execute(sql: "DELETE FROM session")
      for (index, end) in ends.enumerated() {
        try db.execute(sql: "UPDATE ride SET id = ?, uuid = ?, end_wall = ?", arguments: [index + 1, "u\(index)", end])
        try db.execute(sql: "INSERT INTO session SELECT * FROM ride")
      }
      if unfinished {
        try db.execute(
          sql: "UPDATE ride SET id = ?, uuid = 'running', end_wall = NULL, state = 'running'",
          arguments: [ends.count + 1])
        try db.execute(sql: "INSERT INTO session SELECT * FROM ride")
      }
      try db.execute(sql: "DROP TABLE ride")
    }
    try queue.close()
    return store
  }

  /// A database of the release before (v10) holding an ended ride gets the queue's tables at
  /// the next start, its ride kept, and the ride can be queued.
  @Test func aVersion10DatabaseGetsTheQueueWithItsSessionsKept() throws {
    let dir = TemporaryDirectory()
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try recordRide(into: store, seconds: 20, stop: true)
    }
    try DatabaseQueue(path: dir.database).write { db in
      try db.execute(sql: "DROP TABLE upload_job")
      try db.execute(sql: "DROP TABLE upload_target")
      try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v11:%' OR identifier LIKE 'v12:%'")
      #expect(try !db.tableExists("upload_job"))
    }
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let session = try #require(try store.session(id: 1))
    #expect(session.state == "ended")
    #expect(try store.points(sessionID: 1).count == 20)
    #expect(try store.uploadJobs().isEmpty)
    #expect(try store.uploadCounts(targets: UploadTarget.allCases) == UploadCounts(pending: 0, failed: 0))
    #expect(try store.makeUploadJobs(for: [.intervalsICU], wall: 0).isEmpty, "ended before the target")
    #expect(try store.uploadTargets().map(\.name) == ["intervals.icu"])
    #expect(
      try store.queueUpload(sessionID: 1, target: .intervalsICU, again: false, wall: 0)
        == .queued(UploadJob(sessionID: 1, target: .intervalsICU, createdAt: 0)))
  }

  /// A database the first release of the queue (v11) ran on: its targets drawn by time, a job
  /// sent and one waiting on a 429. v12 gives each target the session its time admitted, and the
  /// jobs are read, saved and made as before.
  @Test func aVersion11DatabaseKeepsItsJobsAndItsTargetsLines() throws {
    let dir = TemporaryDirectory()
    // Rides 1 and 2 ended before intervals.icu was configured (at 250), 3 after; 4 is running.
    do { _ = try store(endingAt: [100, 200, 300], unfinished: true, configured: [], in: dir) }
    try DatabaseQueue(path: dir.database).write { db in
      // Tables as the v11 of the first release made them.
      try db.execute(
        sql: """
          DROP TABLE upload_job;
          DROP TABLE upload_target;
          DELETE FROM grdb_migrations WHERE identifier LIKE 'v12:%';
          CREATE TABLE upload_target (name TEXT NOT NULL PRIMARY KEY, since REAL NOT NULL) WITHOUT ROWID;
          CREATE TABLE upload_job (
            session_id INTEGER NOT NULL REFERENCES session(id) ON DELETE CASCADE,
            target TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
            retry_at REAL, platform_upload_id TEXT, platform_id TEXT, reason TEXT,
            created_at REAL NOT NULL, updated_at REAL NOT NULL,
            PRIMARY KEY (session_id, target)) WITHOUT ROWID;
          CREATE INDEX upload_job_state ON upload_job(state, retry_at);
          INSERT INTO upload_target VALUES ('intervals.icu', 250), ('strava', 1000);
          INSERT INTO upload_job VALUES
            (3, 'intervals.icu', 'done', 1, NULL, NULL, 'i42', NULL, 300, 310),
            (3, 'webdav', 'queued', 2, 900, NULL, NULL, 'the platform is busy (HTTP 429)', 300, 320);
          """)
      #expect(try !db.columns(in: "upload_target").map(\.name).contains("first_session"))
    }
    let (reopened, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    #expect(
      try reopened.uploadTargets().map { "\($0.name) \($0.firstSession) \($0.since)" }
        == ["intervals.icu 3 250.0", "strava 4 1000.0"])
    let jobs = try reopened.uploadJobs()
    #expect(jobs.count == 2)
    let waiting = try #require(jobs.first { $0.target == .webdav })
    #expect(waiting.retryAt == 900 && !waiting.retryFromPlatform && waiting.attempts == 2)
    #expect(jobs.first { $0.target == .intervalsICU }?.platformID == "i42")
    // The running ride ends: both configured targets take it, and nothing older.
    try DatabaseQueue(path: dir.database).write { db in
      try db.execute(sql: "UPDATE session SET state = 'ended', end_wall = 400 WHERE id = 4")
    }
    let made = try reopened.makeUploadJobs(for: [.intervalsICU, .strava], wall: 410)
    #expect(made.map { "\($0.sessionID) \($0.target.rawValue)" } == ["4 intervals.icu", "4 strava"])
    var sent = waiting
    sent.retryFromPlatform = true
    sent.retryAt = 1200
    try reopened.saveUploadJob(sent)
    #expect(try reopened.uploadJobs(sessionID: 3).first { $0.target == .webdav } == sent)
    #expect(try reopened.integrityCheck() == ["ok"])
  }

  /// The release of stop 74 made the columns v12 adds in its v11: v12 keeps them and their
  /// values, and the store opens.
  @Test func aVersion11DatabaseWithTheColumnsAlreadyKeepsThem() throws {
    let dir = TemporaryDirectory()
    do {
      let store = try store(endingAt: [100, 200], unfinished: true, configured: [], in: dir)
      #expect(try store.makeUploadJobs(for: [.strava], wall: 250).isEmpty)
      guard case .queued(var job) = try store.queueUpload(sessionID: 1, target: .strava, again: false, wall: 260)
      else {
        Issue.record("the ride was not queued")
        return
      }
      job.retryAt = 900
      job.retryFromPlatform = true
      try store.saveUploadJob(job)
    }
    try DatabaseQueue(path: dir.database).write { db in
      try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v12:%'")
    }
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    #expect(try store.uploadTargets().map { "\($0.name) \($0.firstSession)" } == ["strava 3"])
    #expect(try store.uploadJobs().map { "\($0.sessionID) \($0.retryFromPlatform)" } == ["1 true"])
  }

  @Test func jobsAreMadeOnceForRidesNotEndedWhenTheTargetWasConfigured() throws {
    let dir = TemporaryDirectory()
    let store = try store(endingAt: [100, 200, 300], unfinished: true, configured: [], in: dir)
    let strava = try store.makeUploadJobs(for: [.strava], wall: 350)
    #expect(strava.isEmpty, "the rides ended before Strava was configured are not sent")
    #expect(try store.makeUploadJobs(for: [.strava], wall: 360).isEmpty, "idempotent")
    #expect(try store.uploadJobs(sessionID: 4).isEmpty, "the running session has none")
    // The running ride ends: its end is GPS time, here before the board's clock said Strava was
    // configured (a clock behind GPS time). The session, not the time, decides: it is sent.
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { db in try db.execute(sql: "UPDATE session SET state = 'ended', end_wall = 340 WHERE id = 4") }
    let atEnd = try store.makeUploadJobs(for: [.strava], wall: 400)
    #expect(atEnd.map(\.sessionID) == [4])
    #expect(atEnd.allSatisfy { $0.state == .queued && $0.target == .strava && $0.createdAt == 400 })
    // WebDAV added when every ride is over: from the next ride on; Strava keeps its first.
    #expect(try store.makeUploadJobs(for: [.strava, .webdav], wall: 450).isEmpty)
    let targets = try store.uploadTargets()
    #expect(targets.map { "\($0.name) \($0.firstSession) \($0.since)" } == ["strava 4 350.0", "webdav 5 450.0"])
    try queue.write { db in
      try db.execute(sql: "CREATE TEMP TABLE ride AS SELECT * FROM session WHERE id = 4")
      try db.execute(sql: "UPDATE ride SET id = 5, uuid = 'u5'")
      try db.execute(sql: "INSERT INTO session SELECT * FROM ride")
    }
    let next = try store.makeUploadJobs(for: [.strava, .webdav], wall: 500)
    #expect(next.map { "\($0.sessionID) \($0.target.rawValue)" } == ["5 strava", "5 webdav"])
    #expect(try store.uploadJobs().count == 3)
    #expect(try store.makeUploadJobs(for: [], wall: 600).isEmpty)
  }

  @Test func aTargetConfiguredOnAnEmptyDatabaseTakesTheFirstRide() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    #expect(try store.makeUploadJobs(for: [.intervalsICU], wall: 1_000).isEmpty)
    try recordRide(into: store, seconds: 3, stop: true)
    #expect(try store.makeUploadJobs(for: [.intervalsICU], wall: 2_000).map(\.sessionID) == [1])
  }

  @Test func anyEndedRideIsQueuedByHandAndAFinishedOneOnlyAgainWhenAsked() throws {
    let dir = TemporaryDirectory()
    let store = try store(endingAt: [100, 200], unfinished: true, configured: [], in: dir)
    try store.makeUploadJobs(for: [.strava], wall: 150)
    #expect(try store.queueUpload(sessionID: 9, target: .strava, again: false, wall: 500) == .noSession)
    #expect(try store.queueUpload(sessionID: 3, target: .strava, again: true, wall: 500) == .notEnded(state: "running"))
    // Older than Strava's configuration: sent when asked for.
    guard case .queued(let old) = try store.queueUpload(sessionID: 1, target: .strava, again: false, wall: 500) else {
      Issue.record("the old ride was not queued")
      return
    }
    #expect(old == UploadJob(sessionID: 1, target: .strava, createdAt: 500))
    #expect(
      try store.queueUpload(sessionID: 2, target: .strava, again: false, wall: 150)
        == .queued(UploadJob(sessionID: 2, target: .strava, createdAt: 150)))
    // A pending job is left as it is, `again` or not.
    var sending = try #require(try store.uploadJobs(sessionID: 2).first).starting(at: 510)
    try store.saveUploadJob(sending)
    #expect(try store.queueUpload(sessionID: 2, target: .strava, again: true, wall: 520) == .pending(sending))
    // Done: only again.
    sending.platformUploadID = "u-1"
    let done = sending.ending(with: .done(platformID: "a-1", duplicate: false), at: 530)
    try store.saveUploadJob(done)
    #expect(try store.queueUpload(sessionID: 2, target: .strava, again: false, wall: 540) == .finished(done))
    let again = try store.queueUpload(sessionID: 2, target: .strava, again: true, wall: 550)
    let fresh = UploadJob(sessionID: 2, target: .strava, createdAt: 150, updatedAt: 550)
    #expect(again == .queued(fresh), "afresh: no ids, attempts or reason of the last time")
    #expect(try store.uploadJobs(sessionID: 2) == [fresh])
    // Failed: only again, too.
    try store.saveUploadJob(fresh.starting(at: 560).ending(with: .rejected(reason: "401"), at: 561))
    guard case .finished(let failed) = try store.queueUpload(sessionID: 2, target: .strava, again: false, wall: 570)
    else {
      Issue.record("a failed job was queued without again")
      return
    }
    #expect(failed.state == .failed && failed.reason == "401")
    #expect(try store.queueUpload(sessionID: 2, target: .strava, again: true, wall: 580) == .queued(fresh.at(580)))
  }

  @Test func interruptedJobsComeFirstThenQueuedOnesOldestFirstWhenTheirTimeHasCome() throws {
    let dir = TemporaryDirectory()
    let store = try store(endingAt: [100, 200, 300, 400, 500], in: dir)
    try store.makeUploadJobs(for: [.intervalsICU], wall: 0)
    var jobs = Dictionary(uniqueKeysWithValues: try store.uploadJobs().map { ($0.sessionID, $0) })
    // 1: retrying later; 2: done; 3 and 4: queued; 5: a restart found it waiting.
    try store.saveUploadJob(jobs[1]!.starting(at: 10).ending(with: .retry(after: 90, reason: "503"), at: 10))
    try store.saveUploadJob(jobs[2]!.starting(at: 10).ending(with: .done(platformID: "i2", duplicate: false), at: 11))
    try store.saveUploadJob(jobs[5]!.starting(at: 10).keeping(.platformUploadID("p5"), at: 12))
    #expect(try store.nextUploadJob(at: 20, targets: [.intervalsICU])?.sessionID == 5, "interrupted first")
    #expect(try store.nextUploadJob(at: 20, targets: [.strava]) == nil, "only configured targets")
    #expect(try store.nextUploadJob(at: 20, targets: []) == nil)
    jobs[5] = try store.uploadJobs(sessionID: 5).first
    try store.saveUploadJob(jobs[5]!.ending(with: .done(platformID: "i5", duplicate: false), at: 21))
    #expect(try store.nextUploadJob(at: 22, targets: [.intervalsICU])?.sessionID == 3, "then the oldest due")
    #expect(try store.nextUploadRetry(after: 22, targets: [.intervalsICU]) == 100)
    try store.saveUploadJob(jobs[3]!.starting(at: 23).ending(with: .retry(after: nil, reason: "offline"), at: 23))
    try store.saveUploadJob(jobs[4]!.starting(at: 24).ending(with: .retry(after: nil, reason: "offline"), at: 24))
    #expect(try store.nextUploadJob(at: 25, targets: [.intervalsICU]) == nil, "nothing is due")
    #expect(try store.nextUploadRetry(after: 25, targets: [.intervalsICU]) == 53)
    #expect(try store.nextUploadJob(at: 53, targets: [.intervalsICU])?.sessionID == 3)
    #expect(try store.nextUploadJob(at: 100, targets: [.intervalsICU])?.sessionID == 1, "all due: the oldest")
    #expect(try store.nextUploadRetry(after: 100, targets: [.intervalsICU]) == nil)
    // The network came back: every backoff is over at once; the platform's Retry-After (1's
    // 503 said 90 s) still holds.
    #expect(try store.makeUploadRetriesDue(wall: 30) == 2)
    #expect(try store.nextUploadJob(at: 31, targets: [.intervalsICU])?.sessionID == 3)
    #expect(try store.nextUploadRetry(after: 31, targets: [.intervalsICU]) == 100)
  }

  @Test func listsAreNewestFirstAndCountsSayWhatIsPendingAndWhatFailed() throws {
    let dir = TemporaryDirectory()
    let store = try store(endingAt: [100, 200, 300], in: dir)
    try store.makeUploadJobs(for: [.strava, .webdav], wall: 0)
    #expect(
      try store.uploadJobs().map { "\($0.sessionID) \($0.target.rawValue)" } == [
        "3 strava", "3 webdav", "2 strava", "2 webdav", "1 strava", "1 webdav",
      ])
    #expect(try store.uploadCounts(targets: [.strava, .webdav]) == UploadCounts(pending: 6, failed: 0))
    let jobs = try store.uploadJobs()
    try store.saveUploadJob(jobs[0].ending(with: .done(platformID: "s3", duplicate: false), at: 5))
    let first = jobs[4].ending(with: .rejected(reason: "401: invalid token"), at: 6)
    let last = jobs[5].ending(with: .rejected(reason: "403: no space"), at: 7)
    try store.saveUploadJob(last)
    try store.saveUploadJob(first)
    #expect(
      try store.uploadCounts(targets: [.strava, .webdav]) == UploadCounts(pending: 3, failed: 2, lastFailure: last))
    // A target taken out of the configuration: its jobs wait for nothing and are not counted.
    #expect(try store.uploadCounts(targets: [.strava]) == UploadCounts(pending: 1, failed: 1, lastFailure: first))
    #expect(try store.uploadCounts(targets: []) == UploadCounts(pending: 0, failed: 0))
  }

  /// A target's refusal stands until a later job to it is done; another target's success
  /// does not put it right.
  @Test func aFailureStandsUntilTheTargetSendsARideAgain() throws {
    let dir = TemporaryDirectory()
    let store = try store(endingAt: [100, 200, 300], in: dir)
    try store.makeUploadJobs(for: [.strava, .webdav], wall: 0)
    func job(_ session: Int64, _ target: UploadTarget) throws -> UploadJob {
      try #require(try store.uploadJobs(sessionID: session).first { $0.target == target })
    }
    #expect(try store.standingUploadFailures(targets: [.strava, .webdav]).isEmpty)
    try store.saveUploadJob(try job(1, .strava).ending(with: .rejected(reason: "401"), at: 10))
    try store.saveUploadJob(try job(2, .strava).ending(with: .rejected(reason: "403"), at: 11))
    try store.saveUploadJob(try job(1, .webdav).ending(with: .done(platformID: nil, duplicate: false), at: 12))
    #expect(try store.standingUploadFailures(targets: [.strava, .webdav]).map(\.sessionID) == [2], "the newest")
    #expect(try store.standingUploadFailures(targets: [.webdav]).isEmpty, "only the targets asked for")
    try store.saveUploadJob(try job(3, .strava).ending(with: .done(platformID: "s3", duplicate: false), at: 13))
    #expect(try store.standingUploadFailures(targets: [.strava, .webdav]).isEmpty, "a later ride sent")
    #expect(try store.uploadCounts(targets: [.strava]).failed == 2, "still listed and counted")
  }

  /// A job's change is on the disk once saved: a crash copy (the database and its WAL as a
  /// power cut leaves them) holds it.
  @Test func aSavedChangeSurvivesACrash() throws {
    let dir = TemporaryDirectory()
    let crashed = TemporaryDirectory()
    let store = try store(endingAt: [100], in: dir)
    let job = try #require(try store.makeUploadJobs(for: [.strava], wall: 0).first)
    let waiting = job.starting(at: 1).keeping(.platformUploadID("upload 77"), at: 2)
    try store.saveUploadJob(waiting)
    #expect(try store.durability().synchronous == 2)
    try crashCopy(of: dir, to: crashed)
    let (reopened, _) = try WorkoutStore.open(at: crashed.database, wallNow: 0)
    #expect(try reopened.uploadJobs() == [waiting])
    #expect(try reopened.nextUploadJob(at: 3, targets: [.strava]) == waiting, "resumed after the restart")
  }

  /// A job of a target or state this build does not know (a later release's) is neither
  /// listed, counted nor worked on, and stays as it is.
  @Test func aJobThisBuildCannotReadIsLeftAlone() throws {
    let dir = TemporaryDirectory()
    let store = try store(endingAt: [100], in: dir)
    try DatabaseQueue(path: dir.database).write { db in
      try db.execute(
        sql: """
          INSERT INTO upload_job (session_id, target, state, created_at, updated_at) VALUES
            (1, 'dropbox', 'queued', 0, 0), (1, 'strava', 'paused', 0, 0)
          """)
    }
    #expect(try store.uploadJobs().isEmpty)
    #expect(try store.uploadCounts(targets: UploadTarget.allCases) == UploadCounts(pending: 0, failed: 0))
    #expect(try store.nextUploadJob(at: 1, targets: UploadTarget.allCases) == nil)
    #expect(try store.makeUploadJobs(for: [.webdav], wall: 0).count == 1)
  }

  /// Every column of `upload_job` is written and read back as the job's field.
  @Test func aJobReadsBackWithEveryField() throws {
    let dir = TemporaryDirectory()
    let store = try store(endingAt: [100], in: dir)
    let made = try #require(try store.makeUploadJobs(for: [.webdav], wall: 0).first)
    let full = UploadJob(
      sessionID: 1, target: .webdav, state: .waiting, attempts: 4, retryAt: 99.5, retryFromPlatform: true,
      platformUploadID: "up",
      platformID: "act", reason: "why", createdAt: made.createdAt, updatedAt: 42)
    try store.saveUploadJob(full)
    #expect(try store.uploadJobs() == [full])
    try DatabaseQueue(path: dir.database).read { db in
      let columns = Set(try db.columns(in: "upload_job").map(\.name))
      let written = Set(try UploadJobRecord(full).databaseDictionary.keys)
      #expect(written == columns)
    }
  }
}

extension UploadJob {
  /// The job as queued afresh at `wall`.
  fileprivate func at(_ wall: Double) -> UploadJob {
    var job = self
    job.updatedAt = wall
    return job
  }
}
