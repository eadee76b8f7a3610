import Foundation
import GRDB
import WorkoutCore

/// How an unfinished session was put back together after a restart.
public enum ResumeBasis: Sendable, Hashable {
  /// From its checkpoint and the points recorded after it.
  case checkpoint
  /// From its events, laps and points: the checkpoint could not be used, for this reason.
  case rebuilt(reason: String)
}

/// An unfinished session found on opening, ready to resume.
public struct ResumableSession: Sendable {
  public var session: ActiveSession
  /// The clock reading of its last committed second.
  public var lastCommit: ClockStamp
  /// Its last recorded point, for status.
  public var lastPoint: TrackPoint?
  public var basis: ResumeBasis
  /// The rows this resume read that cannot be placed and are left out: the points after its
  /// checkpoint (all its points when rebuilt), and, when rebuilt, its laps and events. Each is
  /// so counted once: the resume saves a checkpoint past them.
  public var unreadable = UnreadableRows()
}

/// An unfinished session as the store found it.
public enum UnfinishedSession: Sendable {
  case resumable(ResumableSession)
  /// Neither its checkpoint nor its record could be read back: it is to be closed, its rows
  /// kept (`closeUnresumable`).
  case unresumable(sessionID: Int64, state: String, reason: String)
  /// Found only because its row's state cannot be read (a damaged record): its event log says
  /// it ended. Nothing is to be resumed or closed; its row is to say `ended` again
  /// (`markEnded`).
  case ended(sessionID: Int64)
}

// Resuming: the unfinished sessions put back together after a restart, or closed.
extension WorkoutStore {
  /// The highest session id used so far (0 for an empty store).
  public func maxSessionID() throws(StoreError) -> Int64 {
    try read { db in try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM session") ?? 0 }
  }

  /// Sessions that were not ended, oldest first, each put back together as it stood at its
  /// last committed second: from its checkpoint and the points recorded after it, or, when
  /// the checkpoint is of another format or does not decode, from its events, laps and points
  /// (see `ResumeCheckpoint`). The event log decides the state either way.
  public func unfinishedSessions(
    settings: EngineSettings = EngineSettings()
  ) throws(StoreError)
    -> [UnfinishedSession]
  {
    try read { db in
      // IS NOT: a state that cannot be read (NULL) is not "ended"; the event log decides it.
      try SessionRecord.fetchAll(db, sql: "SELECT * FROM session WHERE state IS NOT 'ended' ORDER BY id")
        .map { record in try Self.resumable(record, settings: settings, in: db) }
    }
  }

  private static func resumable(
    _ record: SessionRecord, settings: EngineSettings, in db: Database
  ) throws -> UnfinishedSession {
    let lastTransition = try Row.fetchOne(
      db,
      sql:
        "SELECT to_state, cause, detail FROM event WHERE session_id = ? AND kind = 'transition' ORDER BY id DESC LIMIT 1",
      arguments: [record.id])
    let loggedState = lastTransition?.readable(String.self, "to_state").flatMap(SessionState.init(rawValue:))
    if loggedState == .ended { return .ended(sessionID: record.id) }
    guard let state = loggedState ?? SessionState(rawValue: record.state), state.isUnfinished else {
      return .unresumable(
        sessionID: record.id, state: record.state,
        reason:
          "its state \"\(lastTransition?.readable(String.self, "to_state") ?? record.state)\" is not one this version knows"
      )
    }
    let pausedBySystem =
      state == .paused && lastTransition?.readable(String.self, "detail") == SystemReason.autoPause.rawValue

    var rebuild: SessionRebuild
    var basis = ResumeBasis.checkpoint
    var unreadable = UnreadableRows()
    switch Self.checkpoint(of: record) {
    case .success(let checkpoint):
      rebuild = SessionRebuild(checkpoint: checkpoint)
    case .failure(let problem):
      guard let activity = ActivityType(rawValue: record.activity) else {
        return .unresumable(
          sessionID: record.id, state: record.state,
          reason: "\(problem), and its activity \"\(record.activity)\" is not one this version knows")
      }
      basis = .rebuilt(reason: problem)
      let opened = try Row.fetchOne(
        db, sql: "SELECT wall, monotonic FROM event WHERE session_id = ? ORDER BY id LIMIT 1", arguments: [record.id])
      let started = try Row.fetchOne(
        db,
        sql:
          "SELECT wall, monotonic FROM event WHERE session_id = ? AND kind = 'transition' AND to_state = 'running' ORDER BY id LIMIT 1",
        arguments: [record.id])
      var start = started.flatMap(\.moment)
      if started != nil, start == nil {
        // Its start's times are unreadable (a damaged record): its first point was recorded in
        // its first second of running.
        start = try Row.fetchOne(
          db,
          sql:
            "SELECT wall, monotonic FROM point WHERE session_id = ? AND \(PointRecord.readableSQL) ORDER BY seq LIMIT 1",
          arguments: [record.id]
        )?.moment
      }
      var closedLaps = ClosedLaps()
      for lap in try LapRecord.fetchAll(
        db, sql: "SELECT * FROM lap WHERE session_id = ? AND \(LapRecord.readableSQL) ORDER BY number",
        arguments: [record.id])
      {
        closedLaps.add(lap.summary)
      }
      unreadable.laps = try Self.unreadableRows(of: record.id, in: "lap", LapRecord.readableSQL, db)
      unreadable.events = try Self.unreadableRows(of: record.id, in: "event", EventRecord.readableSQL, db)
      // The zones it ran with, as its events name them (those this binary cannot read are left
      // out; `show` says so).
      let zones = try details(of: "zoneConfiguration", in: record.id, db)
        .compactMap(SessionAnalysis.configuration(fromEvent:))
      rebuild = SessionRebuild(
        id: record.id, activity: activity, machine: SessionMachine(state: state),
        openedAt: Moment(
          monotonic: opened?.readable(Double.self, "monotonic") ?? record.clockMonotonic, wall: record.openedWall),
        start: start, closedLaps: closedLaps,
        settings: settings, zones: zones)
    }
    let firstPoint = rebuild.firstPoint
    let points = try PointRecord.fetchCursor(
      db, sql: "SELECT * FROM point WHERE session_id = ? AND seq >= ? AND \(PointRecord.readableSQL) ORDER BY seq",
      arguments: [record.id, firstPoint])
    while let point = try points.next() {
      rebuild.add(point.trackPoint)
    }
    // The points it cannot place are counted, and the next second is numbered after the last
    // of them, so that it does not replace a damaged row (`INSERT OR REPLACE`).
    unreadable.points = try Self.unreadablePoints(of: record.id, from: firstPoint, db)
    // (Numbers only: text sorts after them, and would stop the index's walk back there.)
    if let last = try Row.fetchOne(
      db, sql: "SELECT seq FROM point WHERE session_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1",
      arguments: [record.id, Int64.max])?.readable(Int.self, "seq")
    {
      rebuild.numberPoints(after: last)
    }
    var session = rebuild.session
    if basis != .checkpoint {
      session.targetZones = TargetZone.fromEvents(try details(of: "targetZoneSet", in: record.id, db))
    }
    if basis != .checkpoint,
      let change = try Row.fetchOne(
        db,
        sql:
          "SELECT wall, detail, value FROM event WHERE session_id = ? AND kind = 'activity' ORDER BY id DESC LIMIT 1",
        arguments: [record.id])
    {
      // A multisport workout rebuilt from its record: the activity it is in, and the session's
      // totals when that began (its last point then), for the activity's own figures.
      session.currentActivity = change.readable(String.self, "detail").flatMap(ActivityType.init(rawValue:))
      // Its number is the event's value; one this binary cannot read (NULL, text, a fraction,
      // or beyond an Int, on which `Int(_:)` would trap at every start) is derived from the
      // record instead: each change of activity is one event, after activity 1.
      let recorded = change.readable(Double.self, "value").flatMap { Int(exactly: $0) }
      session.activityNumber =
        try recorded
        ?? Int.fetchOne(
          db, sql: "SELECT COUNT(*) FROM event WHERE session_id = ? AND kind = 'activity'", arguments: [record.id]
        ).map { $0 + 1 }
      if let wall = change.readable(Double.self, "wall"),
        let at = try Row.fetchOne(
          db,
          sql:
            "SELECT elapsed, timer, distance FROM point WHERE session_id = ? AND wall <= ? ORDER BY seq DESC LIMIT 1",
          arguments: [record.id, wall])
      {
        var start = IntervalTotals()
        start.elapsed = at.readable(Double.self, "elapsed") ?? 0
        start.timer = at.readable(Double.self, "timer") ?? 0
        start.distance = at.readable(Double.self, "distance") ?? 0
        session.activityStart = start
      }
    }
    // The event log is the record of what happened; the checkpoint follows it.
    if session.state != state || session.machine.pausedBySystem != pausedBySystem {
      session.machine = SessionMachine(state: state, pausedBySystem: pausedBySystem)
    }
    // The last committed second: the last point when it is newer than the checkpoint (it was
    // written in the same run of the service, as every run saves a checkpoint on taking the
    // session up), else the checkpoint's own clock reading.
    var lastCommit = record.lastCommit
    if let last = rebuild.lastPoint, last.sequence >= record.points {
      lastCommit.moment = last.moment
    }
    return .resumable(
      ResumableSession(
        session: session, lastCommit: lastCommit, lastPoint: rebuild.lastPoint, basis: basis,
        unreadable: unreadable))
  }

  /// The details of a session's events of `kind`, oldest first; those that are not text (a
  /// damaged record's NULL) are left out, as a detail this binary cannot parse is.
  private static func details(of kind: String, in sessionID: Int64, _ db: Database) throws -> [String] {
    try Row.fetchAll(
      db, sql: "SELECT detail FROM event WHERE session_id = ? AND kind = ? ORDER BY id", arguments: [sessionID, kind]
    ).compactMap { $0.readable(String.self, "detail") }
  }

  /// The session's checkpoint if this binary can read it, else why not.
  private enum CheckpointLookup {
    case success(ActiveSession)
    case failure(String)
  }

  private static func checkpoint(of record: SessionRecord) -> CheckpointLookup {
    guard record.snapshotVersion == ResumeCheckpoint.format else {
      return .failure(
        "its checkpoint is of format \(record.snapshotVersion), this version reads format \(ResumeCheckpoint.format)")
    }
    do {
      let session = try decode(ActiveSession.self, from: record.snapshot)
      guard session.id == record.id else {
        return .failure("its checkpoint is of session \(session.id)")
      }
      return .success(session)
    } catch {
      return .failure("its checkpoint does not decode (\(Self.describe(error)))")
    }
  }

  private static func describe(_ error: any Error) -> String {
    switch error {
    case DecodingError.keyNotFound(let key, let context):
      "no \"\(key.stringValue)\" at \(path(context))"
    case DecodingError.typeMismatch(let type, let context):
      "\(context.codingPath.isEmpty ? "the whole" : path(context)) is not \(type)"
    case DecodingError.valueNotFound(let type, let context):
      "no \(type) at \(path(context))"
    case DecodingError.dataCorrupted(let context):
      "\(context.debugDescription)\(context.codingPath.isEmpty ? "" : " at " + path(context))"
    default:
      "\(error)"
    }
  }

  private static func path(_ context: DecodingError.Context) -> String {
    context.codingPath.isEmpty ? "the top level" : context.codingPath.map(\.stringValue).joined(separator: ".")
  }

  /// Closes an unfinished session that cannot be resumed: `ended`, with an `abandoned` event
  /// that says why. Its points, laps and events stay as they are.
  public func closeUnresumable(sessionID: Int64, state: String, reason: String, clock: ClockStamp) throws(StoreError) {
    do {
      try queue.inTransaction { db in
        try Self.markEnded(sessionID, db)
        var event = EventRecord(
          sessionID: sessionID,
          event: SessionEvent(
            kind: .abandoned, moment: clock.moment, to: .ended, cause: TransitionCause.recovery.kind,
            detail: reason),
          epoch: clock.epoch)
        event.fromState = state
        try event.insert(db)
        return .commit
      }
    } catch {
      throw StoreError(error)
    }
  }

  /// Writes `ended` into the row of a session whose event log says it ended (its row's state
  /// could not be read). No event: the ride was finished, and its record says so already.
  public func markEnded(sessionID: Int64) throws(StoreError) {
    try transaction { db in try Self.markEnded(sessionID, db) }
  }

  /// A session's row says `ended`, with an end: its own, or its last committed second's.
  private static func markEnded(_ sessionID: Int64, _ db: Database) throws {
    try db.execute(
      sql: "UPDATE session SET state = 'ended', end_wall = COALESCE(end_wall, clock_wall) WHERE id = ?",
      arguments: [sessionID])
  }

  /// An unfinished session as it stands at its last committed second: its checkpoint with
  /// the points recorded since folded in, or rebuilt from its rows (what a restart would resume).
  public func current(of record: SessionRecord) throws(StoreError) -> ActiveSession {
    let found = try read { db in try Self.resumable(record, settings: EngineSettings(), in: db) }
    switch found {
    case .resumable(let resumable): return resumable.session
    case .unresumable(let id, _, let reason): throw .unreadableSnapshot(sessionID: id, reason)
    case .ended(let id): throw .unreadableSnapshot(sessionID: id, "its event log says it ended")
    }
  }
}
