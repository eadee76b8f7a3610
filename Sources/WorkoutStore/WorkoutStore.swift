import Foundation
import GRDB
import GRDBSQLite
import WorkoutCore

/// What went wrong in the store, named by what failed. Writes that fail with `diskFull` or
/// `ioFailure` are worth retrying later; the database is left as it was (SQLite rolls back).
public enum StoreError: Error, Sendable, Hashable, CustomStringConvertible {
  case diskFull(String)
  case ioFailure(String)
  case corrupt(String)
  case readOnly(String)
  case cannotOpen(String)
  case unreadableSnapshot(sessionID: Int64, String)
  case failed(String)

  public var description: String {
    switch self {
    case .diskFull(let detail): "disk full: \(detail)"
    case .ioFailure(let detail): "I/O error: \(detail)"
    case .corrupt(let detail): "database corrupt: \(detail)"
    case .readOnly(let detail): "database is read-only: \(detail)"
    case .cannotOpen(let detail): "cannot open database: \(detail)"
    case .unreadableSnapshot(let id, let detail): "session \(id) snapshot unreadable: \(detail)"
    case .failed(let detail): "database error: \(detail)"
    }
  }

  /// Whether a later retry of the same write can succeed (space or the device may come back).
  public var isTransient: Bool {
    switch self {
    case .diskFull, .ioFailure: true
    default: false
    }
  }

  init(_ error: any Error) {
    guard let error = error as? DatabaseError else {
      self = .failed("\(error)")
      return
    }
    let detail = error.message ?? "\(error.resultCode)"
    switch error.resultCode.primaryResultCode {
    case .SQLITE_FULL: self = .diskFull(detail)
    case .SQLITE_IOERR: self = .ioFailure(detail)
    case .SQLITE_CORRUPT, .SQLITE_NOTADB: self = .corrupt(detail)
    case .SQLITE_READONLY: self = .readOnly(detail)
    case .SQLITE_CANTOPEN: self = .cannotOpen(detail)
    default: self = .failed("\(error.resultCode): \(detail)")
    }
  }
}

/// Something the store did on opening that the operator should hear about.
public enum StoreNotice: Sendable, Hashable {
  case created(path: String)
  /// The database failed its integrity check and was moved aside (never deleted).
  case movedAside(path: String, to: [String], reason: String)
}

/// An unfinished session found on opening, ready to resume.
public struct ResumableSession: Sendable {
  public var session: ActiveSession
  /// The clock reading of its last committed second.
  public var lastCommit: ClockStamp
}

/// The workout database: SQLite in WAL mode with `synchronous=FULL`, so that each committed
/// second survives a power cut (NORMAL may lose the transactions since the last checkpoint
/// when power fails; it only protects against a process crash).
public final class WorkoutStore: Sendable {
  public let path: String
  private let queue: DatabaseQueue

  private init(path: String, queue: DatabaseQueue) {
    self.path = path
    self.queue = queue
  }

  // MARK: - Opening

  /// Opens (or creates) the database for the service: checks its integrity, moves a corrupt
  /// file aside under a timestamped name and starts afresh, then migrates.
  public static func open(at path: String, wallNow: Double) throws(StoreError) -> (WorkoutStore, [StoreNotice]) {
    var notices: [StoreNotice] = []
    let fileManager = FileManager.default
    let directory = (path as NSString).deletingLastPathComponent
    if !directory.isEmpty {
      do {
        try fileManager.createDirectory(atPath: directory, withIntermediateDirectories: true)
      } catch {
        throw .cannotOpen("cannot create \(directory): \(error.localizedDescription)")
      }
    }
    if fileManager.fileExists(atPath: path) {
      var problem: String?
      do {
        let queue = try makeQueue(path: path, readonly: false)
        let check = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
        if check == ["ok"] {
          let store = WorkoutStore(path: path, queue: queue)
          try store.migrate()
          return (store, notices)
        }
        problem = check.prefix(5).joined(separator: "; ")
      } catch let error as StoreError {
        guard case .corrupt(let detail) = error else { throw error }
        problem = detail
      } catch {
        let storeError = StoreError(error)
        guard case .corrupt(let detail) = storeError else { throw storeError }
        problem = detail
      }
      let moved = try moveAside(path: path, wallNow: wallNow)
      notices.append(.movedAside(path: path, to: moved, reason: problem ?? "integrity check failed"))
    }
    do {
      let store = WorkoutStore(path: path, queue: try makeQueue(path: path, readonly: false))
      try store.migrate()
      notices.append(.created(path: path))
      return (store, notices)
    } catch let error as StoreError {
      throw error
    } catch {
      throw StoreError(error)
    }
  }

  /// Opens the database for reading only (`workoutctl`), without creating or migrating it.
  public static func openForReading(at path: String) throws(StoreError) -> WorkoutStore {
    guard FileManager.default.fileExists(atPath: path) else {
      throw .cannotOpen("\(path) does not exist (has workoutd run yet?)")
    }
    do {
      return WorkoutStore(path: path, queue: try makeQueue(path: path, readonly: true))
    } catch {
      throw StoreError(error)
    }
  }

  private static func makeQueue(path: String, readonly: Bool) throws -> DatabaseQueue {
    var configuration = Configuration()
    configuration.readonly = readonly
    configuration.foreignKeysEnabled = true
    // workoutctl reads while the service writes; WAL lets them, a short wait covers checkpoints.
    configuration.busyMode = .timeout(5)
    configuration.label = "workoutd"
    if !readonly {
      // Durability is chosen here, explicitly, and asserted by a test: see the type's comment.
      // (GRDB's own `.wal` setup would set NORMAL.)
      configuration.prepareDatabase { db in
        let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
        guard mode == "wal" else {
          throw DatabaseError(message: "could not switch \(db.description) to WAL (got \(mode ?? "nothing"))")
        }
        try db.execute(sql: "PRAGMA synchronous = FULL")
        // Keep the -wal and -shm files when the service closes the database: a reader with
        // read-only access (`workoutctl` run by a member of the service's group) cannot create
        // them, and could not open the database while the service is stopped.
        var persist: CInt = 1
        let code = withUnsafeMutablePointer(to: &persist) {
          sqlite3_file_control(db.sqliteConnection, nil, SQLITE_FCNTL_PERSIST_WAL, $0)
        }
        guard code == SQLITE_OK else { throw DatabaseError(resultCode: ResultCode(rawValue: code)) }
        // ...but empty: truncated after each checkpoint and on close, so no stale frames outlive
        // the pages they were checkpointed into.
        try db.execute(sql: "PRAGMA journal_size_limit = 0")
      }
    }
    return try DatabaseQueue(path: path, configuration: configuration)
  }

  /// Renames the database and its WAL and shared-memory files to `<name>.corrupt-<UTC time>`.
  private static func moveAside(path: String, wallNow: Double) throws(StoreError) -> [String] {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
    let stamp = formatter.string(from: Date(timeIntervalSince1970: wallNow))
    // One name for the database and its WAL files, none of which may be taken yet.
    let suffixes = ["", "-wal", "-shm"]
    var stem = "\(path).corrupt-\(stamp)"
    var attempt = 1
    while suffixes.contains(where: { FileManager.default.fileExists(atPath: stem + $0) }) {
      attempt += 1
      stem = "\(path).corrupt-\(stamp)-\(attempt)"
    }
    var moved: [String] = []
    for suffix in suffixes {
      let source = path + suffix
      guard FileManager.default.fileExists(atPath: source) else { continue }
      do {
        try FileManager.default.moveItem(atPath: source, toPath: stem + suffix)
      } catch {
        throw .cannotOpen("cannot move corrupt \(source) aside: \(error.localizedDescription)")
      }
      moved.append(stem + suffix)
    }
    return moved
  }

  private func migrate() throws(StoreError) {
    do {
      try Schema.migrator.migrate(queue)
    } catch {
      throw StoreError(error)
    }
  }

  // MARK: - Writing

  /// Writes the store commands of one engine step in one transaction, stamping the session
  /// with `clock` (the reading the next start will measure its gap from). Commands that are
  /// not for the store are skipped.
  public func write(_ commands: [EngineCommand], clock: ClockStamp) throws(StoreError) {
    do {
      try queue.inTransaction { db in
        for command in commands {
          try apply(command, clock: clock, in: db)
        }
        return .commit
      }
    } catch let error as StoreError {
      throw error
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
      try PointRecord(sessionID: sessionID, point: point).insert(db, onConflict: .replace)
    case .recordLap(let sessionID, let lap):
      try LapRecord(sessionID: sessionID, lap: lap).insert(db, onConflict: .replace)
    case .saveSnapshot(let session):
      var record = try SessionRecord(session, clock: clock)
      if let existing = try SessionRecord.fetchOne(db, key: session.id) {
        record.summary = existing.summary
        record.endWall = existing.endWall
      }
      try record.update(db)
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
      // Events of this boot only: earlier boots' events were written with other clocks.
      try db.execute(
        sql: "UPDATE event SET wall = wall + ? WHERE session_id = ? AND clock_epoch = ?",
        arguments: [seconds, sessionID, clock.epoch])
    case .scheduleWakeup, .warmUpSensors, .indicate, .chirp, .log:
      break
    }
  }

  static func encode<T: Encodable>(_ value: T) throws -> String {
    let encoder = JSONEncoder()
    encoder.nonConformingFloatEncodingStrategy = .convertToString(
      positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    return String(decoding: try encoder.encode(value), as: UTF8.self)
  }

  static func decode<T: Decodable>(_ type: T.Type, from json: String) throws -> T {
    let decoder = JSONDecoder()
    decoder.nonConformingFloatDecodingStrategy = .convertFromString(
      positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    return try decoder.decode(type, from: Data(json.utf8))
  }

  // MARK: - Resuming

  /// The highest session id used so far (0 for an empty store).
  public func maxSessionID() throws(StoreError) -> Int64 {
    try read { db in try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM session") ?? 0 }
  }

  /// Sessions that were not ended, oldest first, in the state their event log says.
  public func unfinishedSessions() throws(StoreError) -> [ResumableSession] {
    let rows: [(SessionRecord, String?)] = try read { db in
      try SessionRecord.fetchAll(db, sql: "SELECT * FROM session WHERE state != 'ended' ORDER BY id")
        .map { record in
          let logged = try String.fetchOne(
            db,
            sql: "SELECT to_state FROM event WHERE session_id = ? AND kind = 'transition' ORDER BY id DESC LIMIT 1",
            arguments: [record.id])
          return (record, logged)
        }
    }
    return try rows.map { (record, logged) throws(StoreError) in
      var session: ActiveSession
      do {
        session = try Self.decode(ActiveSession.self, from: record.snapshot)
      } catch {
        throw .unreadableSnapshot(sessionID: record.id, "\(error)")
      }
      // The event log is the record of what happened; the snapshot follows it.
      if let logged, let state = SessionState(rawValue: logged), state != session.state {
        session.machine = SessionMachine(state: state, pausedBySystem: session.machine.pausedBySystem)
      }
      return ResumableSession(session: session, lastCommit: record.lastCommit)
    }
  }

  // MARK: - Reading

  public func sessions(limit: Int = 100) throws(StoreError) -> [SessionRecord] {
    try read { db in
      try SessionRecord.fetchAll(db, sql: "SELECT * FROM session ORDER BY id DESC LIMIT ?", arguments: [limit])
    }
  }

  public func session(id: Int64) throws(StoreError) -> SessionRecord? {
    try read { db in try SessionRecord.fetchOne(db, key: id) }
  }

  public func events(sessionID: Int64?) throws(StoreError) -> [EventRecord] {
    try read { db in
      if let sessionID {
        try EventRecord.fetchAll(
          db, sql: "SELECT * FROM event WHERE session_id = ? ORDER BY id", arguments: [sessionID])
      } else {
        try EventRecord.fetchAll(db, sql: "SELECT * FROM event WHERE session_id IS NULL ORDER BY id")
      }
    }
  }

  public func laps(sessionID: Int64) throws(StoreError) -> [LapRecord] {
    try read { db in
      try LapRecord.fetchAll(db, sql: "SELECT * FROM lap WHERE session_id = ? ORDER BY number", arguments: [sessionID])
    }
  }

  public func points(sessionID: Int64, from sequence: Int = 0, limit: Int = Int.max) throws(StoreError) -> [PointRecord]
  {
    try read { db in
      try PointRecord.fetchAll(
        db, sql: "SELECT * FROM point WHERE session_id = ? AND seq >= ? ORDER BY seq LIMIT ?",
        arguments: [sessionID, sequence, limit])
    }
  }

  public func pointCount(sessionID: Int64) throws(StoreError) -> Int {
    try read { db in
      try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM point WHERE session_id = ?", arguments: [sessionID]) ?? 0
    }
  }

  /// The summary of a finalised session.
  public func summary(of record: SessionRecord) throws(StoreError) -> SessionSummary? {
    guard let json = record.summary else { return nil }
    do {
      return try Self.decode(SessionSummary.self, from: json)
    } catch {
      throw .failed("session \(record.id) summary unreadable: \(error)")
    }
  }

  /// The live resume snapshot of a session.
  public func snapshot(of record: SessionRecord) throws(StoreError) -> ActiveSession {
    do {
      return try Self.decode(ActiveSession.self, from: record.snapshot)
    } catch {
      throw .unreadableSnapshot(sessionID: record.id, "\(error)")
    }
  }

  /// The durability settings in force: (journal mode, synchronous level 0–3).
  public func durability() throws(StoreError) -> (journalMode: String, synchronous: Int) {
    try read { db in
      (
        try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "",
        try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
      )
    }
  }

  /// `PRAGMA integrity_check`: `["ok"]` for a sound database.
  public func integrityCheck() throws(StoreError) -> [String] {
    try read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
  }

  private func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
    do {
      return try queue.inDatabase(body)
    } catch {
      throw StoreError(error)
    }
  }
}

extension SessionRecord {
  init(_ session: ActiveSession, clock: ClockStamp) throws {
    let totals = session.builder.totals
    self.init(
      id: session.id, activity: session.activity.rawValue, state: session.state.rawValue,
      openedWall: session.openedAt.wall, startWall: session.builder.startMoment?.wall, endWall: nil,
      elapsed: totals.elapsed, timer: totals.timer, distance: totals.distance, ascent: totals.ascent,
      descent: totals.descent, points: session.builder.pointCount,
      snapshot: try WorkoutStore.encode(session), summary: nil,
      clockEpoch: clock.epoch, clockMonotonic: session.lastMoment.monotonic,
      clockWall: session.lastMoment.wall, clockWallTrusted: clock.wallTrusted)
  }
}
