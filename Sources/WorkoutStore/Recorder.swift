import Foundation
import GRDB
import GRDBSQLite
import WorkoutCore

// The write path: each engine step's commands (a recorded second is one point row), and
// events added beside the engine's.
extension WorkoutStore {
  /// Writes the store commands of one engine step in one transaction, stamping the session
  /// with `clock` (the reading the next start will measure its gap from). Commands that are
  /// not for the store are skipped.
  ///
  /// A recorded second is one point row: an append to the end of `point`'s b-tree, about one
  /// page in the WAL. The session row (with its checkpoint) is written only when the engine
  /// saves a checkpoint, and with statements prepared once.
  ///
  /// BEGIN and COMMIT are statements prepared once too (GRDB's `inTransaction` compiles both
  /// anew each time: a tenth of the commit's own CPU). A failure rolls back what the
  /// transaction did, as `inTransaction` would, and the error names what failed.
  ///
  /// Nearly every recorded second writes one point and nothing else: then the insert is its
  /// own transaction (SQLite's autocommit: the statement takes the write lock as BEGIN
  /// IMMEDIATE does, and commits, durably, when it is done, or rolls itself back), which
  /// spares two statements' execution a second.
  public func write(_ commands: [EngineCommand], clock: ClockStamp) throws(StoreError) {
    do {
      try queue.writeWithoutTransaction { db in
        if let (sessionID, point) = Self.lonePoint(in: commands) {
          try insert(point, of: sessionID, in: db)
          return
        }
        try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
        do {
          for command in commands {
            try apply(command, clock: clock, in: db)
          }
          try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
        } catch {
          if db.isInsideTransaction { try? db.rollback() }
          throw error
        }
      }
    } catch {
      throw StoreError(error)
    }
  }

  private func apply(_ command: EngineCommand, clock: ClockStamp, in db: Database) throws {
    switch command {
    case .openSession(let session):
      try SessionRecord(session, clock: clock).insert(db)
    case .recordEvent(let sessionID, let event):
      var record = EventRecord(sessionID: sessionID, event: event, epoch: clock.epoch)
      try record.insert(db)
    case .recordPoint(let sessionID, let point):
      try insert(point, of: sessionID, in: db)
    case .recordRRIntervals(let sessionID, let sequence, let intervals):
      let insert = try db.cachedStatement(sql: RRIntervalRecord.insertSQL)
      for (position, interval) in intervals.enumerated() {
        try insert.execute(arguments: [sessionID, sequence, position, Int(interval)])
      }
    case .recordBatterySample(let sessionID, let sample):
      try db.cachedStatement(sql: BatterySampleRecord.insertSQL).execute(arguments: [
        sessionID, clock.epoch, sample.moment.monotonic, sample.moment.wall, sample.level, sample.voltage,
        sample.current,
        sample.status.rawValue,
      ])
    case .recordLap(let sessionID, let lap):
      try LapRecord(sessionID: sessionID, lap: lap).insert(db, onConflict: .replace)
    case .saveSnapshot(let session):
      let record = try SessionRecord(session, clock: clock)
      let statement = try db.cachedStatement(
        sql: """
          UPDATE session SET state = ?, start_wall = ?, elapsed = ?, timer = ?, distance = ?, ascent = ?,
            descent = ?, points = ?, snapshot = ?, snapshot_version = ?, clock_epoch = ?, clock_monotonic = ?,
            clock_wall = ?, clock_wall_trusted = ?
          WHERE id = ?
          """)
      try statement.execute(arguments: [
        record.state, record.startWall, record.elapsed, record.timer, record.distance, record.ascent,
        record.descent, record.points, record.snapshot, record.snapshotVersion, record.clockEpoch,
        record.clockMonotonic, record.clockWall, record.clockWallTrusted, record.id,
      ])
    case .finalizeSession(let sessionID, let summary):
      try db.execute(
        sql: "UPDATE session SET summary = ?, end_wall = ? WHERE id = ?",
        arguments: [try Self.encode(summary), summary.end.wall, sessionID])
    case .correctWallTimes(let sessionID, let seconds, let firstPoint, let firstLap):
      try db.execute(
        sql: "UPDATE point SET wall = wall + ? WHERE session_id = ? AND seq >= ?",
        arguments: [seconds, sessionID, firstPoint])
      try db.execute(
        sql: "UPDATE lap SET start_wall = start_wall + ?, end_wall = end_wall + ? WHERE session_id = ? AND number >= ?",
        arguments: [seconds, seconds, sessionID, firstLap])
      // Events and battery samples of this boot only: earlier boots' were written with other
      // clocks.
      try db.execute(
        sql: "UPDATE event SET wall = wall + ? WHERE session_id = ? AND clock_epoch = ?",
        arguments: [seconds, sessionID, clock.epoch])
      try db.execute(
        sql: "UPDATE battery_sample SET wall = wall + ? WHERE session_id = ? AND clock_epoch = ?",
        arguments: [seconds, sessionID, clock.epoch])
    case .correctBoardClock, .warmUpSensors, .indicate, .chirp, .log, .powerOff:
      break
    }
  }

  /// The point, when it is the only command of `commands` for the store.
  static func lonePoint(in commands: [EngineCommand]) -> (Int64, TrackPoint)? {
    var found: (Int64, TrackPoint)?
    for command in commands {
      switch command {
      case .correctBoardClock, .warmUpSensors, .indicate, .chirp, .log, .powerOff:
        continue
      case .recordPoint(let sessionID, let point) where found == nil:
        found = (sessionID, point)
      default:
        return nil
      }
    }
    return found
  }

  /// Inserts a point, bound and stepped with SQLite's calls on a statement prepared once (see
  /// `PointRecord.bind` and `HeldStatement`), and resets the statement, so that it is never left
  /// mid-step.
  private func insert(_ point: TrackPoint, of sessionID: Int64, in db: Database) throws {
    let statement = try pointInsert.statement(in: db)
    PointRecord(sessionID: sessionID, point: point).bind(to: statement)
    let code = sqlite3_step(statement)
    sqlite3_reset(statement)
    guard code == SQLITE_DONE else {
      throw DatabaseError(
        resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: PointRecord.insertSQL)
    }
  }

  /// Adds an event to a session beside the engine's (an annotation from the phone page);
  /// returns it with its id.
  public func addEvent(_ event: EventRecord) throws(StoreError) -> EventRecord {
    try inserted(event)
  }
}

extension SessionRecord {
  init(_ session: ActiveSession, clock: ClockStamp) throws {
    let totals = session.builder.totals
    self.init(
      id: session.id, uuid: UUID().uuidString.lowercased(), activity: session.activity.rawValue,
      state: session.state.rawValue,
      openedWall: session.openedAt.wall, startWall: session.builder.startMoment?.wall, endWall: nil,
      elapsed: totals.elapsed, timer: totals.timer, distance: totals.distance, ascent: totals.ascent,
      descent: totals.descent, points: session.builder.pointCount,
      snapshot: try WorkoutStore.encode(session), snapshotVersion: ResumeCheckpoint.format, summary: nil,
      clockEpoch: clock.epoch, clockMonotonic: session.lastMoment.monotonic,
      clockWall: session.lastMoment.wall, clockWallTrusted: clock.wallTrusted)
  }
}
