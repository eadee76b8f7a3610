import GRDB
import WorkoutUpload

/// A row of `upload_job` (migrations v11, v12): one session to one target, the `UploadJob` the
/// uploader works on. Its columns are the job's fields in snake case.
public struct UploadJobRecord: Sendable, Hashable, FetchableRecord, PersistableRecord {
  public static let databaseTableName = "upload_job"

  public var job: UploadJob

  public init(_ job: UploadJob) { self.job = job }

  /// Rows of a target or state this build does not know (a later release's, kept after a
  /// downgrade), or whose session cannot be read, are left out where jobs are read
  /// (`readableSQL`): this build cannot work on them, and leaves them as they are.
  public init(row: Row) throws {
    guard let sessionID = row.readable(Int64.self, "session_id"),
      let target = row.readable(String.self, "target").flatMap(UploadTarget.init(rawValue:)),
      let state = row.readable(String.self, "state").flatMap(UploadJobState.init(rawValue:))
    else { throw StoreError.failed("an upload job that cannot be read: \(row)") }
    let createdAt = row.measurement("created_at") ?? 0
    job = UploadJob(
      sessionID: sessionID, target: target, state: state,
      attempts: row.count("attempts", in: 0...Int(Int32.max)) ?? 0, retryAt: row.measurement("retry_at"),
      retryFromPlatform: row.readable(Bool.self, "retry_from_platform") ?? false,
      platformUploadID: row.readable(String.self, "platform_upload_id"),
      platformID: row.readable(String.self, "platform_id"), reason: row.readable(String.self, "reason"),
      createdAt: createdAt, updatedAt: row.measurement("updated_at") ?? createdAt)
  }

  public func encode(to container: inout PersistenceContainer) {
    container["session_id"] = job.sessionID
    container["target"] = job.target.rawValue
    container["state"] = job.state.rawValue
    container["attempts"] = job.attempts
    container["retry_at"] = job.retryAt
    container["retry_from_platform"] = job.retryFromPlatform
    container["platform_upload_id"] = job.platformUploadID
    container["platform_id"] = job.platformID
    container["reason"] = job.reason
    container["created_at"] = job.createdAt
    container["updated_at"] = job.updatedAt
  }

  /// The condition under which this build can read a job and work on it.
  static let readableSQL =
    ReadableColumns.condition(integers: ["session_id"]) + " AND target IN (\(quoted(UploadTarget.allCases)))"
    + " AND state IN (\(quoted(UploadJobState.allCases)))"

  /// Jobs of `targets` the uploader has work in and this build can work on.
  static func pendingSQL(_ targets: [UploadTarget]) -> String {
    "state IN ('sending', 'waiting', 'queued') AND target IN (\(quoted(targets))) AND \(readableSQL)"
  }

  /// `'queued', 'sending'`: names of an enum's cases as SQL literals (they hold no quote).
  static func quoted<Name: RawRepresentable<String>>(_ names: [Name]) -> String {
    names.map { "'\($0.rawValue)'" }.joined(separator: ", ")
  }
}

/// A row of `upload_target` (migrations v11, v12): a platform, its first session and when it was first configured.
public struct UploadTargetRecord: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord, SnakeCaseColumns {
  public static let databaseTableName = "upload_target"

  /// `UploadTarget`'s raw value.
  public var name: String
  /// The first session that gets a job by itself: the oldest not ended when the target was
  /// first configured, or the next one to be made.
  public var firstSession: Int64
  /// Wall time of the first start with the target configured.
  public var since: Double
}

/// What asking for a session to be sent to a target came to (`WorkoutStore.queueUpload`).
public enum UploadQueueing: Sendable, Hashable {
  /// A new job, or a done or failed one queued again (`again`).
  case queued(UploadJob)
  /// The session's job for that target is still pending: left as it is.
  case pending(UploadJob)
  /// The session was sent (done) or given up on (failed), and `again` was not asked.
  case finished(UploadJob)
  /// There is no such session.
  case noSession
  /// The session has not ended (its state): a ride is sent once it is over.
  case notEnded(state: String)
}

// The upload queue: a job a session and target, each change its own transaction, so that it is
// on the disk (WAL, synchronous FULL) once the call returns and a power cut loses none of it.
extension WorkoutStore {
  /// Registers `targets` (the first time a target is seen, its first session is the oldest not
  /// yet ended, or the next to be made) and makes a queued job for every ended session from a
  /// target's first session on that has none for it. Idempotent: the uploader runs it at start
  /// and when a session ends. Returns the jobs made, oldest session first.
  @discardableResult
  public func makeUploadJobs(for targets: [UploadTarget], wall: Double) throws(StoreError) -> [UploadJob] {
    guard !targets.isEmpty else { return [] }
    return try transaction { db in
      for target in targets {
        try db.execute(
          sql: """
            INSERT OR IGNORE INTO upload_target (name, first_session, since) VALUES (?,
              COALESCE((SELECT MIN(id) FROM session WHERE state != 'ended'), (SELECT MAX(id) + 1 FROM session), 1), ?)
            """,
          arguments: [target.rawValue, wall])
      }
      let rows = try Row.fetchAll(
        db,
        sql: """
          SELECT session.id, upload_target.name FROM session JOIN upload_target
          WHERE upload_target.name IN (\(UploadJobRecord.quoted(targets))) AND session.state = 'ended'
            AND session.id >= upload_target.first_session
            AND NOT EXISTS (SELECT 1 FROM upload_job
              WHERE upload_job.session_id = session.id AND upload_job.target = upload_target.name)
          ORDER BY session.id, upload_target.name
          """)
      return try rows.compactMap { row -> UploadJob? in
        guard let target = UploadTarget(rawValue: row[1]) else { return nil }
        let job = UploadJob(sessionID: row[0], target: target, createdAt: wall)
        try UploadJobRecord(job).insert(db)
        return job
      }
    }
  }

  /// Asks for session `sessionID` to be sent to `target`, however old it is. A job still
  /// pending is left as it is; a done or failed one is queued afresh only when `again`.
  public func queueUpload(
    sessionID: Int64, target: UploadTarget, again: Bool, wall: Double
  ) throws(StoreError) -> UploadQueueing {
    try transaction { db in
      guard let session = try SessionRecord.fetchOne(db, key: sessionID) else { return .noSession }
      guard session.state == "ended" else { return .notEnded(state: session.state) }
      let existing = try UploadJobRecord.fetchOne(
        db, sql: "SELECT * FROM upload_job WHERE session_id = ? AND target = ? AND \(UploadJobRecord.readableSQL)",
        arguments: [sessionID, target.rawValue])?.job
      if let existing {
        if existing.isPending { return .pending(existing) }
        if !again { return .finished(existing) }
      }
      // Afresh: what an earlier attempt left (its ids, its reason, its backoff) is no longer so.
      let job = UploadJob(sessionID: sessionID, target: target, createdAt: existing?.createdAt ?? wall, updatedAt: wall)
      try UploadJobRecord(job).insert(db, onConflict: .replace)
      return .queued(job)
    }
  }

  /// The job to work on at `wall` among `targets` (those configured): first one a kill or a
  /// power cut interrupted (`sending`, `waiting`: a restart resumes it) whose `retryAt` has
  /// come, then the oldest queued one whose `retryAt` has come. nil: nothing is due.
  public func nextUploadJob(at wall: Double, targets: [UploadTarget]) throws(StoreError) -> UploadJob? {
    guard !targets.isEmpty else { return nil }
    return try read { db in
      try UploadJobRecord.fetchOne(
        db,
        sql: """
          SELECT * FROM upload_job WHERE \(UploadJobRecord.pendingSQL(targets)) AND (retry_at IS NULL OR retry_at <= ?)
          ORDER BY state = 'queued', created_at, session_id, target LIMIT 1
          """, arguments: [wall])?.job
    }
  }

  /// The earliest `retryAt` after `wall` of a pending job among `targets`: when the uploader
  /// next has work, if nothing is due before (nil: no job waits for its time).
  public func nextUploadRetry(after wall: Double, targets: [UploadTarget]) throws(StoreError) -> Double? {
    guard !targets.isEmpty else { return nil }
    return try read { db in
      try Double.fetchOne(
        db,
        sql: "SELECT MIN(retry_at) FROM upload_job WHERE \(UploadJobRecord.pendingSQL(targets)) AND retry_at > ?",
        arguments: [wall])
    }
  }

  /// Makes every pending job's retry due now (the network came back: a backoff waited out
  /// the outage), but for those whose time is the platform's own Retry-After: a rate limit
  /// (Strava's 15-minute window) is kept whatever the network does. Returns how many.
  @discardableResult
  public func makeUploadRetriesDue(wall: Double) throws(StoreError) -> Int {
    try transaction { db in
      try db.execute(
        sql: """
          UPDATE upload_job SET retry_at = NULL, updated_at = ?
          WHERE state IN ('sending', 'waiting', 'queued') AND retry_at > ? AND NOT retry_from_platform
          """, arguments: [wall, wall])
      return db.changesCount
    }
  }

  /// Keeps a job's new self (`UploadJob.next`): on the disk once this returns. A job whose row
  /// is gone (its session deleted) is an error, never made again.
  public func saveUploadJob(_ job: UploadJob) throws(StoreError) {
    try transaction { db in try UploadJobRecord(job).update(db) }
  }

  /// The jobs of session `sessionID` (nil: of every session), newest session first.
  public func uploadJobs(sessionID: Int64? = nil) throws(StoreError) -> [UploadJob] {
    try read { db in
      var request = UploadJobRecord.filter(sql: UploadJobRecord.readableSQL)
      if let sessionID { request = request.filter(Column("session_id") == sessionID) }
      return try request.order(Column("session_id").desc, Column("target")).fetchAll(db).map(\.job)
    }
  }

  /// How many jobs of `targets` (the configured ones: a removed target's jobs wait for nothing)
  /// are pending and failed, and the failed one changed last (status). The index on `state`
  /// counts them without reading finished jobs.
  public func uploadCounts(targets: [UploadTarget]) throws(StoreError) -> UploadCounts {
    guard !targets.isEmpty else { return UploadCounts(pending: 0, failed: 0) }
    let named = "target IN (\(UploadJobRecord.quoted(targets))) AND \(UploadJobRecord.readableSQL)"
    return try read { db in
      var counts = UploadCounts(pending: 0, failed: 0)
      let rows = try Row.fetchAll(
        db.cachedStatement(
          sql: """
            SELECT state = 'failed', COUNT(*) FROM upload_job
            WHERE state IN ('sending', 'waiting', 'queued', 'failed') AND \(named)
            GROUP BY state = 'failed'
            """))
      for row in rows {
        if row[0] as Bool { counts.failed = row[1] } else { counts.pending = row[1] }
      }
      if counts.failed > 0 {
        counts.lastFailure = try UploadJobRecord.fetchOne(
          db,
          sql: """
            SELECT * FROM upload_job WHERE state = 'failed' AND \(named)
            ORDER BY updated_at DESC, session_id DESC LIMIT 1
            """)?.job
      }
      return counts
    }
  }

  /// The failures that stand, a job a target of `targets` at most: a target's newest finished
  /// job when it failed. A later ride sent to that target, or the job sent again, puts it right.
  public func standingUploadFailures(targets: [UploadTarget]) throws(StoreError) -> [UploadJob] {
    guard !targets.isEmpty else { return [] }
    return try read { db in
      try UploadJobRecord.fetchAll(
        db,
        sql: """
          SELECT * FROM upload_job AS job WHERE state = 'failed' AND target IN (\(UploadJobRecord.quoted(targets)))
            AND \(UploadJobRecord.readableSQL) AND NOT EXISTS (SELECT 1 FROM upload_job AS later
              WHERE later.target = job.target AND later.state = 'done' AND later.updated_at > job.updated_at)
          ORDER BY updated_at DESC, session_id DESC
          """
      ).map(\.job).reduce(into: [UploadJob]()) { standing, job in
        if !standing.contains(where: { $0.target == job.target }) { standing.append(job) }
      }
    }
  }

  /// The targets registered, and since when (`makeUploadJobs`).
  public func uploadTargets() throws(StoreError) -> [UploadTargetRecord] {
    try read { db in try UploadTargetRecord.order(Column("name")).fetchAll(db) }
  }
}
