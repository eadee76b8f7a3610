import CSQLiteSetup
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
  /// The database has migrations this binary does not know: a newer release wrote it.
  case newerSchema(String)
  /// The database's directory does not let this process create the database or its WAL.
  case directoryNotWritable(String)
  case failed(String)

  public var description: String {
    switch self {
    case .diskFull(let detail): "disk full: \(detail)"
    case .ioFailure(let detail): "I/O error: \(detail)"
    case .corrupt(let detail): "database corrupt: \(detail)"
    case .readOnly(let detail): "database is read-only: \(detail)"
    case .cannotOpen(let detail): "cannot open database: \(detail)"
    case .unreadableSnapshot(let id, let detail): "session \(id) snapshot unreadable: \(detail)"
    case .newerSchema(let detail): "database from a newer workoutd: \(detail)"
    case .directoryNotWritable(let detail): "directory not writable: \(detail)"
    case .failed(let detail): "database error: \(detail)"
    }
  }

  /// The failure as the runtime core weighs it: its kind (one condition however the text
  /// varies) and its words.
  public var fault: StorageFault {
    switch self {
    case .diskFull: .diskFull(description)
    case .ioFailure: .ioError(description)
    case .readOnly: .readOnly(description)
    case .corrupt: .corrupt(description)
    default: .writeFailing(description)
    }
  }

  /// Whether a later retry of the same write can succeed (space or the device may come back).
  public var isTransient: Bool {
    switch self {
    case .diskFull, .ioFailure: true
    default: false
    }
  }

  /// Whether only the operator can fix it (ownership, permissions, a downgrade): at start-up
  /// the service stops with exit code 3 and says what to do, rather than record nowhere.
  public var needsOperator: Bool {
    switch self {
    case .readOnly, .newerSchema, .directoryNotWritable: true
    default: false
    }
  }

  init(_ error: any Error) {
    if let error = error as? StoreError {
      self = error
      return
    }
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
  /// The database failed its integrity check, or its WAL could not be matched to it, and it
  /// was moved aside with its WAL files (never deleted).
  case movedAside(path: String, to: [String], reason: String)
  /// The last stop was not clean (the WAL still held frames): SQLite replays them, and the
  /// database gets a full check in the background (`integrityCheckIsDue`).
  case uncleanStop(path: String, walBytes: Int)
  /// A background check had found damage; this start checked again before opening.
  case checkedAgain(path: String, result: String)
}

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

/// The workout database: SQLite in WAL mode with `synchronous=FULL`, so that each committed
/// second survives a power cut (NORMAL may lose the transactions since the last checkpoint
/// when power fails; it only protects against a process crash).
///
/// The WAL: checkpointed automatically every 1000 pages (SQLite's default, a few minutes of a
/// ride at about one page per recorded second), kept on disk between checkpoints (persistent
/// WAL, at most `walSizeLimit` long) so that it is not truncated and grown again each time,
/// and truncated to nothing when the service closes the database. So a WAL that holds frames
/// at the next start means the last stop was not clean.
public final class WorkoutStore: Sendable {
  public let path: String
  private let queue: DatabaseQueue
  /// The point insert of every recorded second, prepared once (see `insert`).
  private let pointInsert = HeldStatement(sql: PointRecord.insertSQL)
  /// Whether a full integrity check is warranted (an unclean stop, or none for a week): run
  /// it off the engine thread with `backgroundIntegrityCheck()`.
  public let integrityCheckIsDue: Bool

  /// The WAL is truncated back to this after a checkpoint if it grew beyond (a long write
  /// transaction); 1000 pages of 4 KiB fit.
  static let walSizeLimit = 8 << 20
  /// The page size of databases this version creates.
  static let newDatabasePageSize = 2048
  /// SQLite's page cache for the service's connection, KiB (SQLite's default is 2000 KiB a
  /// connection, filled over a long ride and kept: anonymous memory the board pays for). A
  /// recorded second touches a handful of pages (the point B-tree's right edge, the session
  /// row); 128 pages of 2 KiB (64 of an older database's 4 KiB) hold them and the interior
  /// pages of every table. At 1024 KiB the cache filled over a 12 h ride and held 0.9 MiB more
  /// at its end (peak RSS on the 16 MiB line) to save 16 of a 12 h ride's 3,316 page reads
  /// (pread) at 256 KiB (`git show bc8057a:BENCHMARKS.md`, session 29).
  static let serviceCacheKiB = 256
  /// The background integrity check's connection, KiB: `quick_check` reads each page about once,
  /// so a cache barely helps it, and with the default it added 2 MiB to the service's peak
  /// memory on a large database.
  static let checkCacheKiB = 128
  /// How long a clean database goes without a full check.
  static let integrityCheckInterval = 7.0 * 86_400

  private init(path: String, queue: DatabaseQueue, integrityCheckIsDue: Bool = false) {
    self.path = path
    self.queue = queue
    self.integrityCheckIsDue = integrityCheckIsDue
  }

  // MARK: - Opening

  /// Opens (or creates) the database for the service, in time that does not grow with its
  /// size: no full integrity check here (see `integrityCheckIsDue`). Refuses, writing nothing,
  /// a database this process may not write or a newer release wrote (`needsOperator`); moves
  /// aside, never deletes, a file that is not a database, a WAL that cannot belong to it, or
  /// a database a background check found damaged; then migrates.
  public static func open(at path: String, wallNow: Double) throws(StoreError) -> (WorkoutStore, [StoreNotice]) {
    var notices: [StoreNotice] = []
    let fileManager = FileManager.default
    let files = DatabaseFiles(path: path)
    let directory = (path as NSString).deletingLastPathComponent
    if !directory.isEmpty {
      do {
        try fileManager.createDirectory(atPath: directory, withIntermediateDirectories: true)
      } catch {
        throw .directoryNotWritable(
          "cannot create \(directory): \(error.localizedDescription); fix: create it for \(DatabaseFiles.processOwner), or point the state directory elsewhere"
        )
      }
    }
    let directoryProblem = DatabaseFiles.notWritable(directory.isEmpty ? "." : directory)
    if let directoryProblem {
      throw .directoryNotWritable(
        "\(directory) is not writable (\(directoryProblem)): the database and its WAL cannot be created there; fix: chown \(DatabaseFiles.processOwner) \(directory), or point the state directory elsewhere"
      )
    }
    var uncleanStop = false
    if fileManager.fileExists(atPath: path) {
      for file in [path, files.wal, files.shm] where fileManager.fileExists(atPath: file) {
        if let problem = DatabaseFiles.notWritable(file) {
          throw .readOnly(
            "\(file) cannot be written by this process (\(problem)); fix: chown \(DatabaseFiles.processOwner) \(path) \(path)-wal \(path)-shm"
          )
        }
      }
      var problem: String?
      switch files.walCondition() {
      case .empty:
        break
      case .uncleanStop(let bytes):
        uncleanStop = true
        notices.append(.uncleanStop(path: path, walBytes: bytes))
      case .unmatched(let reason):
        problem = "the WAL cannot be matched to the database: \(reason)"
      }
      if problem == nil {
        do {
          try inspect(path: path)
          if fileManager.fileExists(atPath: checkFailedMarker(path)) {
            let check = try quickCheck(path: path)
            notices.append(.checkedAgain(path: path, result: check.prefix(3).joined(separator: "; ")))
            if check == ["ok"] {
              try? fileManager.removeItem(atPath: checkFailedMarker(path))
            } else {
              problem = check.prefix(5).joined(separator: "; ")
            }
          }
        } catch {
          guard case .corrupt(let detail) = error else { throw error }
          problem = detail
        }
      }
      if let problem {
        let moved = try moveAside(path: path, wallNow: wallNow)
        try? fileManager.removeItem(atPath: checkFailedMarker(path))
        notices.removeAll { if case .uncleanStop = $0 { true } else { false } }
        notices.append(.movedAside(path: path, to: moved, reason: problem))
        uncleanStop = false
      } else {
        let store = try openForWriting(path: path, integrityCheckIsDue: uncleanStop || checkIsOverdue(path))
        return (store, notices)
      }
    }
    let store = try openForWriting(path: path, integrityCheckIsDue: false)
    notices.append(.created(path: path))
    return (store, notices)
  }

  /// Looks at an existing database through a read-only connection, writing nothing: that it is
  /// a database (its schema reads), and that every migration it has is one this binary knows.
  private static func inspect(path: String) throws(StoreError) {
    let applied: [String]
    do {
      let connection = try ReadOnlyConnection(path: path)
      // Reading the schema is what tells a file that is not a database (SQLITE_NOTADB).
      applied =
        try connection.tableExists("grdb_migrations")
        ? connection.strings("SELECT identifier FROM grdb_migrations") : []
    } catch {
      throw StoreError(error)
    }
    let known = Set(Schema.migrator.migrations)
    if let unknown = applied.first(where: { !known.contains($0) }) {
      throw .newerSchema(
        "\(path) was written by a newer workoutd (it has migration \"\(unknown)\", which this version does not know), so this version will not write to it; fix: install the newer workoutd again, or move \(path) and its -wal and -shm files away to start a new database"
      )
    }
  }

  private static func openForWriting(path: String, integrityCheckIsDue: Bool) throws(StoreError) -> WorkoutStore {
    do {
      let queue = try makeQueue(path: path, readonly: false, pageCacheKiB: serviceCacheKiB)
      // SQLite opens a file it may not write read-only, silently (a read-only mount, say).
      let readonly = queue.inDatabase { db in sqlite3_db_readonly(db.sqliteConnection, "main") == 1 }
      if readonly {
        throw StoreError.readOnly(
          "SQLite could open \(path) only for reading (a read-only file system, or files this process may not write); fix: remount it read-write, or chown \(DatabaseFiles.processOwner) \(path) \(path)-wal \(path)-shm"
        )
      }
      let store = WorkoutStore(path: path, queue: queue, integrityCheckIsDue: integrityCheckIsDue)
      try store.migrate()
      return store
    } catch {
      throw StoreError(error)
    }
  }

  /// Opens the database to record exports in its `export` table (`workoutctl export`), as a
  /// second writer beside the service, without creating or migrating it: the process must be
  /// allowed to write it (root, or the service's user), and the service of this release must
  /// have migrated it.
  public static func openForExportLedger(at path: String) throws(StoreError) -> WorkoutStore {
    guard FileManager.default.fileExists(atPath: path) else {
      throw .cannotOpen("\(path) does not exist (has workoutd run yet?)")
    }
    do {
      let queue = try makeQueue(path: path, readonly: false)
      let readonly = queue.inDatabase { db in sqlite3_db_readonly(db.sqliteConnection, "main") == 1 }
      if readonly {
        throw StoreError.readOnly(
          "\(path) may only be read by this user, so what is exported cannot be recorded; run it as the service's user (sudo -u workoutd workoutctl export ...) or root"
        )
      }
      let hasLedger = try queue.read { db in try db.tableExists("export") }
      guard hasLedger else {
        throw StoreError.cannotOpen(
          "\(path) has no export table yet (an earlier release's database): start this release's workoutd once to migrate it"
        )
      }
      return WorkoutStore(path: path, queue: queue)
    } catch {
      throw StoreError(error)
    }
  }

  /// Opens the database for reading only (`workoutctl`), without creating or migrating it.
  public static func openForReading(at path: String, cacheKiB: Int? = nil) throws(StoreError) -> WorkoutStore {
    guard FileManager.default.fileExists(atPath: path) else {
      throw .cannotOpen("\(path) does not exist (has workoutd run yet?)")
    }
    do {
      return WorkoutStore(path: path, queue: try makeQueue(path: path, readonly: true, pageCacheKiB: cacheKiB))
    } catch {
      throw StoreError(error)
    }
  }

  private static func makeQueue(path: String, readonly: Bool, pageCacheKiB: Int? = nil) throws -> DatabaseQueue {
    var configuration = Configuration()
    configuration.readonly = readonly
    if let pageCacheKiB {
      configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA cache_size = -\(pageCacheKiB)") }
    }
    configuration.foreignKeysEnabled = true
    // workoutctl reads while the service writes; WAL lets them, a short wait covers checkpoints.
    configuration.busyMode = .timeout(5)
    configuration.label = "workoutd"
    if !readonly {
      // Durability is chosen here, explicitly, and asserted by a test: see the type's comment.
      // (GRDB's own `.wal` setup would set NORMAL.)
      configuration.prepareDatabase { db in
        // A new database gets 2 KiB pages (an existing one keeps its own: the size is fixed by
        // the first write). A recorded second is one WAL frame of a page plus 24 bytes, and the
        // kernel writes whole 4 KiB blocks: a 4 KiB page's frame always spans two blocks, a
        // 2 KiB one about half the time, so the committed second costs 1.5 blocks, not 2
        // (measured by `make bench`: BENCHMARKS.md). Point rows (~150 bytes) still fit a page
        // many times over, as a WITHOUT ROWID table wants.
        try db.execute(sql: "PRAGMA page_size = \(Self.newDatabasePageSize)")
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
        // Between checkpoints the WAL keeps its size (SQLite writes it again from the start),
        // rather than being cut to nothing and grown again after each one; on close SQLite
        // truncates a persistent WAL to zero bytes whatever this limit.
        try db.execute(sql: "PRAGMA journal_size_limit = \(Self.walSizeLimit)")
        try db.execute(sql: "PRAGMA wal_autocheckpoint = 1000")
      }
    }
    return try DatabaseQueue(path: path, configuration: configuration)
  }

  /// Gives back the connection's page cache and what else SQLite can free
  /// (`sqlite3_db_release_memory`): for a connection kept open between rare passes.
  public func releaseMemory() {
    queue.releaseMemory()
  }

  // MARK: - Integrity

  private static func checkFailedMarker(_ path: String) -> String { path + ".check-failed" }
  private static func checkedMarker(_ path: String) -> String { path + ".checked" }

  private static func checkIsOverdue(_ path: String) -> Bool {
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: checkedMarker(path)),
      let date = attributes[.modificationDate] as? Date
    else { return true }
    return Date().timeIntervalSince(date) > integrityCheckInterval
  }

  private static func quickCheck(path: String) throws(StoreError) -> [String] {
    do {
      return try ReadOnlyConnection(path: path, cacheKiB: checkCacheKiB).strings("PRAGMA quick_check")
    } catch {
      throw StoreError(error)
    }
  }

  /// `PRAGMA quick_check` on a connection of its own (read-only, so recording goes on beside
  /// it in WAL mode). Its result is kept beside the database: `<db>.checked` when sound, for
  /// the weekly schedule; `<db>.check-failed` with the findings when not, so that the next
  /// start checks again and moves a damaged database aside. Returns `["ok"]` or the findings.
  public func backgroundIntegrityCheck() -> [String] {
    let result: [String]
    do {
      result = try Self.quickCheck(path: path)
    } catch {
      result = [error.description]
    }
    if result == ["ok"] {
      _ = FileManager.default.createFile(atPath: Self.checkedMarker(path), contents: Data())
      try? FileManager.default.removeItem(atPath: Self.checkFailedMarker(path))
    } else {
      _ = FileManager.default.createFile(
        atPath: Self.checkFailedMarker(path), contents: Data(result.joined(separator: "\n").utf8))
    }
    return result
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

  /// Frames the WAL is made room for: SQLite's automatic checkpoint runs once it holds
  /// `wal_autocheckpoint` (1000) frames, and the writer then starts it again from the front;
  /// a few more for the commit that crosses the line.
  static let walPreallocatedFrames = 1024

  /// Makes the WAL `walPreallocatedFrames` frames long with written zeros, if it is shorter
  /// (SQLite truncates it to nothing when the service closes the database), and syncs it.
  ///
  /// Why: a commit that appends to the WAL changes its size and allocates blocks, so each
  /// durable commit also writes the file's metadata (`fdatasync` writes the inode; with ext4's
  /// journal, a journal commit every second) until the WAL has reached its length for the
  /// first time, about 17 minutes of a ride at a frame a second. Over blocks written before,
  /// a commit changes no metadata that `fdatasync` must write. Zeros past the last frame are
  /// not frames (their salt is not the header's), and a WAL whose header is still zero holds
  /// none (SQLite ignores it; `DatabaseFiles.walCondition` reads it as empty). Done inside a
  /// write transaction, so that no frame is written meanwhile; only past the file's end.
  ///
  /// The service calls it after READY (about 2 MB written and synced: on an SD card a tenth
  /// of a second or more, which READY does not wait for); it is never needed for
  /// correctness, so a failure is the caller's to log, and the WAL then grows as it fills.
  public func preallocateWAL() throws(StoreError) {
    do {
      try queue.writeWithoutTransaction { db in
        try db.execute(sql: "BEGIN IMMEDIATE TRANSACTION")
        defer { try? db.execute(sql: "ROLLBACK TRANSACTION") }
        let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
        let target = 32 + Self.walPreallocatedFrames * (pageSize + 24)
        let wal = path + "-wal"
        let descriptor = Glibc.open(wal, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { throw DatabaseFiles.SystemCallError(call: "open", path: wal) }
        defer { Glibc.close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw DatabaseFiles.SystemCallError(call: "fstat", path: wal) }
        var offset = Int(info.st_size)
        guard offset < target else { return }
        if offset < 32 {
          // No WAL yet (SQLite writes its header with the first frame): a header of no frame,
          // so that the room reads as an empty WAL to anyone, before the first commit too.
          let header = DatabaseFiles.emptyWALHeader(pageSize: pageSize, checkpointSequence: 0, avoidingSalt: [])
          guard header.withUnsafeBytes({ pwrite(descriptor, $0.baseAddress, $0.count, 0) }) == header.count else {
            throw DatabaseFiles.SystemCallError(call: "pwrite", path: wal)
          }
          offset = header.count
        }
        // A page at a time: the kernel's page cache sizes a folio by the write that makes it
        // (Linux 6.x, ext4's large folios), and a commit that dirties 2 KB of a 64 KB folio
        // then writes all of it back (measured: 26 KB written a recorded second, not 8.4).
        let page = 4096
        let zeros = [UInt8](repeating: 0, count: page)
        while offset < target {
          let length = min(page - offset % page, target - offset)
          let written = zeros.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, length, off_t(offset)) }
          if written < 0 {
            if errno == EINTR { continue }
            throw DatabaseFiles.SystemCallError(call: "pwrite", path: wal)
          }
          offset += written
        }
        guard fdatasync(descriptor) == 0 else { throw DatabaseFiles.SystemCallError(call: "fdatasync", path: wal) }
      }
    } catch {
      throw StoreError(error)
    }
  }

  /// Closes the database at a clean stop and keeps its WAL at its size for the next start, so
  /// that the room `preallocateWAL` made is made once, not at every start: every frame is
  /// checkpointed into the database first (`wal_checkpoint(RESTART)`, synced), then the WAL
  /// gets a new header with new salts (`DatabaseFiles.emptyWALHeader`: what SQLite's next
  /// writer would write; the frames after it are then frames of nothing, so SQLite, this
  /// release and earlier ones read an empty WAL: this release a clean stop, earlier ones an
  /// unclean one, which costs them a background check, not the data), and SQLite is told not to
  /// truncate it on closing (`journal_size_limit` -1). The header goes in under the write lock,
  /// and only if no frame was written since the checkpoint (the header is as it was): nothing
  /// committed can be lost, even to another process writing beside the service.
  ///
  /// When it cannot (a reader still in the WAL, another process's frames), the database is
  /// closed as SQLite closes it (the last connection to close truncates the WAL to nothing),
  /// and the next start makes the room again. Returns what happened, for a log line. The store
  /// cannot be used afterwards.
  public func closeKeepingWAL() -> String {
    let wal = path + "-wal"
    func header() -> [UInt8]? {
      guard let handle = FileHandle(forReadingAtPath: wal) else { return nil }
      defer { try? handle.close() }
      return (try? handle.read(upToCount: 56)).map { [UInt8]($0) }
    }
    var outcome = "closed the database"
    do {
      try queue.writeWithoutTransaction { db in
        let checkpoint = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(RESTART)")
        let busy: Int = checkpoint?[0] ?? 1
        let frames: Int = checkpoint?[1] ?? -1
        let copied: Int = checkpoint?[2] ?? -2
        guard busy == 0, frames == copied, let before = header(), before.count == 56 else {
          outcome = "closed the database (its WAL left to SQLite: a reader held it at the last checkpoint)"
          return
        }
        try db.execute(sql: "BEGIN IMMEDIATE TRANSACTION")
        defer { try? db.execute(sql: "ROLLBACK TRANSACTION") }
        guard header() == before else {
          outcome = "closed the database (its WAL left to SQLite: another writer used it)"
          return
        }
        let descriptor = Glibc.open(wal, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { throw DatabaseFiles.SystemCallError(call: "open", path: wal) }
        defer { Glibc.close(descriptor) }
        // A new header, as SQLite's next writer would write: the frames after it keep the
        // old salts, so they are frames of nothing.
        let pageSize = Int(DatabaseFiles.bigEndian32(before, at: 8))
        let header = DatabaseFiles.emptyWALHeader(
          pageSize: pageSize, checkpointSequence: DatabaseFiles.bigEndian32(before, at: 12) &+ 1,
          avoidingSalt: Array(before[40..<48]))
        guard header.withUnsafeBytes({ pwrite(descriptor, $0.baseAddress, $0.count, 0) }) == header.count,
          fdatasync(descriptor) == 0
        else { throw DatabaseFiles.SystemCallError(call: "pwrite", path: wal) }
        try db.execute(sql: "PRAGMA journal_size_limit = -1")
        outcome = "closed the database; its WAL kept at \(DatabaseFiles.size(of: wal) ?? 0) bytes for the next start"
      }
    } catch {
      outcome = "closed the database (its WAL left to SQLite: \(error))"
    }
    do {
      // GRDB's close fails (SQLITE_BUSY) while a statement of the connection is alive.
      queue.writeWithoutTransaction { _ in pointInsert.finalize() }
      try queue.close()
    } catch {
      outcome += "; could not close it: \(error)"
    }
    return outcome
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
      // Events of this boot only: earlier boots' events were written with other clocks.
      try db.execute(
        sql: "UPDATE event SET wall = wall + ? WHERE session_id = ? AND clock_epoch = ?",
        arguments: [seconds, sessionID, clock.epoch])
    case .correctBoardClock, .warmUpSensors, .indicate, .chirp, .log:
      break
    }
  }

  /// The point, when it is the only command of `commands` for the store.
  static func lonePoint(in commands: [EngineCommand]) -> (Int64, TrackPoint)? {
    var found: (Int64, TrackPoint)?
    for command in commands {
      switch command {
      case .correctBoardClock, .warmUpSensors, .indicate, .chirp, .log:
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
    do {
      try queue.write { db in try Self.markEnded(sessionID, db) }
    } catch {
      throw StoreError(error)
    }
  }

  /// A session's row says `ended`, with an end: its own, or its last committed second's.
  private static func markEnded(_ sessionID: Int64, _ db: Database) throws {
    try db.execute(
      sql: "UPDATE session SET state = 'ended', end_wall = COALESCE(end_wall, clock_wall) WHERE id = ?",
      arguments: [sessionID])
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
          db, sql: "SELECT * FROM event WHERE session_id = ? AND \(EventRecord.readableSQL) ORDER BY id",
          arguments: [sessionID])
      } else {
        try EventRecord.fetchAll(
          db, sql: "SELECT * FROM event WHERE session_id IS NULL AND \(EventRecord.readableSQL) ORDER BY id")
      }
    }
  }

  public func laps(sessionID: Int64) throws(StoreError) -> [LapRecord] {
    try read { db in
      try LapRecord.fetchAll(
        db, sql: "SELECT * FROM lap WHERE session_id = ? AND \(LapRecord.readableSQL) ORDER BY number",
        arguments: [sessionID])
    }
  }

  public func points(sessionID: Int64, from sequence: Int = 0, limit: Int = Int.max) throws(StoreError) -> [PointRecord]
  {
    try read { db in
      try PointRecord.fetchAll(
        db,
        sql:
          "SELECT * FROM point WHERE session_id = ? AND seq >= ? AND \(PointRecord.readableSQL) ORDER BY seq LIMIT ?",
        arguments: [sessionID, sequence, limit])
    }
  }

  /// A session's last recorded point.
  public func lastPoint(sessionID: Int64) throws(StoreError) -> PointRecord? {
    try read { db in
      try PointRecord.fetchOne(
        db, sql: "SELECT * FROM point WHERE session_id = ? AND \(PointRecord.readableSQL) ORDER BY seq DESC LIMIT 1",
        arguments: [sessionID])
    }
  }

  /// How many of a session's points, events and laps cannot be read (a damaged record: see
  /// `PointRecord.readableSQL`), and so are left out of what is read of it.
  public func unreadableRows(sessionID: Int64) throws(StoreError) -> UnreadableRows {
    try read { db in
      UnreadableRows(
        points: try Self.unreadablePoints(of: sessionID, from: .min, db),
        events: try Self.unreadableRows(of: sessionID, in: "event", EventRecord.readableSQL, db),
        laps: try Self.unreadableRows(of: sessionID, in: "lap", LapRecord.readableSQL, db))
    }
  }

  /// How many of a session's rows in `table` do not meet `readable`.
  private static func unreadableRows(
    of sessionID: Int64, in table: String, _ readable: String, _ db: Database
  ) throws -> Int {
    try Int.fetchOne(
      db, sql: "SELECT COUNT(*) FROM \(table) WHERE session_id = ? AND NOT (\(readable))", arguments: [sessionID]) ?? 0
  }

  /// How many of a session's points from number `first` on cannot be placed.
  private static func unreadablePoints(of sessionID: Int64, from first: Int, _ db: Database) throws -> Int {
    try Int.fetchOne(
      db, sql: "SELECT COUNT(*) FROM point WHERE session_id = ? AND seq >= ? AND NOT (\(PointRecord.readableSQL))",
      arguments: [sessionID, first]) ?? 0
  }

  /// A session's RR intervals, in the order they were sent; `seqs` limits them to those points.
  public func rrIntervals(sessionID: Int64, seqs: ClosedRange<Int>? = nil) throws(StoreError) -> [RRIntervalRecord] {
    let range = seqs ?? 0...Int.max
    return try read { db in
      try RRIntervalRecord.fetchAll(
        db, sql: "SELECT * FROM rr_interval WHERE session_id = ? AND seq BETWEEN ? AND ? ORDER BY seq, position",
        arguments: [sessionID, range.lowerBound, range.upperBound])
    }
  }

  // MARK: - Exports

  /// What has been written of a session, oldest first.
  public func exports(sessionID: Int64) throws(StoreError) -> [ExportRecord] {
    try read { db in
      try ExportRecord.fetchAll(
        db, sql: "SELECT * FROM export WHERE session_id = ? ORDER BY written_wall, format, destination",
        arguments: [sessionID])
    }
  }

  /// The ids of ended sessions with no current `format` file in `destination`, oldest first:
  /// none yet, or one made before the session's newest event (`ExportRecord.sourceEventID`).
  /// Ids, not records: a session row carries its checkpoint and summary (~8 KB), and a catch-up
  /// after an upgrade lists hundreds of them; each is read when its turn comes (`session(id:)`).
  public func sessionIDsNotExported(format: String, destination: String) throws(StoreError) -> [Int64] {
    try read { db in
      try Int64.fetchAll(
        db,
        sql: """
          SELECT id FROM session WHERE state = 'ended' AND NOT EXISTS (
            SELECT 1 FROM export WHERE export.session_id = session.id AND format = ? AND destination = ?
              AND (source_event_id IS NULL
                OR source_event_id >= (SELECT COALESCE(MAX(id), 0) FROM event WHERE event.session_id = session.id)))
          ORDER BY id
          """, arguments: [format, destination])
    }
  }

  /// The id of the session's newest event (0 with none): what its files are made from is
  /// current as long as no event comes after it.
  public func latestEventID(sessionID: Int64) throws(StoreError) -> Int64 {
    try read { db in
      try Int64.fetchOne(
        db, sql: "SELECT COALESCE(MAX(id), 0) FROM event WHERE session_id = ?", arguments: [sessionID]) ?? 0
    }
  }

  /// The ids of ended sessions, oldest first.
  public func endedSessionIDs() throws(StoreError) -> [Int64] {
    try read { db in try Int64.fetchAll(db, sql: "SELECT id FROM session WHERE state = 'ended' ORDER BY id") }
  }

  /// The files recorded under `destination` (the service's exports directory), oldest session
  /// first.
  public func exports(destination: String) throws(StoreError) -> [ExportRecord] {
    try read { db in
      try ExportRecord.fetchAll(
        db, sql: "SELECT * FROM export WHERE destination = ? ORDER BY session_id, format", arguments: [destination])
    }
  }

  /// Files recorded under `source` (the service's exports directory) that `destination` (a
  /// stick, say) has not had yet in that format, or had as it was before `source`'s was made
  /// again, oldest session first.
  public func exportsNotCopied(from source: String, to destination: String) throws(StoreError) -> [ExportRecord] {
    try read { db in
      try ExportRecord.fetchAll(
        db,
        sql: """
          SELECT * FROM export AS source WHERE source.destination = ? AND NOT EXISTS (
            SELECT 1 FROM export AS copied WHERE copied.session_id = source.session_id
              AND copied.format = source.format AND copied.destination = ?
              AND (source.source_event_id IS NULL OR copied.source_event_id >= source.source_event_id))
          ORDER BY source.session_id, source.format
          """, arguments: [source, destination])
    }
  }

  /// Remembers a written file (replacing what was remembered for that session, format and
  /// destination).
  public func recordExport(_ record: ExportRecord) throws(StoreError) {
    do {
      try queue.write { db in try record.insert(db, onConflict: .replace) }
    } catch {
      throw StoreError(error)
    }
  }

  /// Adds an event to a session beside the engine's (an annotation from the phone page);
  /// returns it with its id.
  public func addEvent(_ event: EventRecord) throws(StoreError) -> EventRecord {
    do {
      return try queue.write { db in
        var event = event
        try event.insert(db)
        return event
      }
    } catch {
      throw StoreError(error)
    }
  }

  // MARK: - Phones paired with the web server

  /// Every paired phone, revoked ones included, oldest first.
  public func webClients() throws(StoreError) -> [WebClientRecord] {
    try read { db in try WebClientRecord.order(Column("id")).fetchAll(db) }
  }

  /// Keeps a newly paired phone; returns it with its id.
  public func addWebClient(_ client: WebClientRecord) throws(StoreError) -> WebClientRecord {
    do {
      return try queue.write { db in
        var client = client
        try client.insert(db)
        return client
      }
    } catch {
      throw StoreError(error)
    }
  }

  /// Revokes phone `id`; false if there is none, or it was revoked already.
  public func revokeWebClient(id: Int64, wall: Double) throws(StoreError) -> Bool {
    do {
      return try queue.write { db in
        try db.execute(
          sql: "UPDATE web_client SET revoked_wall = ? WHERE id = ? AND revoked_wall IS NULL", arguments: [wall, id])
        return db.changesCount > 0
      }
    } catch {
      throw StoreError(error)
    }
  }

  /// Notes when phone `id` was last seen (at most once a minute, so a phone's requests do not
  /// each write).
  public func touchWebClient(id: Int64, wall: Double) throws(StoreError) {
    do {
      try queue.write { db in
        try db.execute(
          sql:
            "UPDATE web_client SET last_seen_wall = ? WHERE id = ? AND (last_seen_wall IS NULL OR last_seen_wall < ?)",
          arguments: [wall, id, wall - 60])
      }
    } catch {
      throw StoreError(error)
    }
  }

  /// What each sensor channel gave over a session's points (per-sensor totals for `show`):
  /// seconds with a value, their mean and maximum. Channels with no value are left out.
  public func channelTotals(sessionID: Int64) throws(StoreError) -> [ChannelTotals] {
    try read { db in
      let columns = ChannelTotals.Channel.allCases
      let select = columns.map { "count(\($0.rawValue)), avg(\($0.rawValue)), max(\($0.rawValue))" }
        .joined(separator: ", ")
      guard
        let row = try Row.fetchOne(
          db, sql: "SELECT \(select) FROM point WHERE session_id = ?", arguments: [sessionID])
      else { return [] }
      return columns.enumerated().compactMap { index, channel in
        let seconds: Int = row[3 * index]
        guard seconds > 0 else { return nil }
        // A damaged record's text would make max() text: read as no value, not a trap.
        return ChannelTotals(
          channel: channel, seconds: seconds, average: Double.fromDatabaseValue(row[3 * index + 1]),
          maximum: Double.fromDatabaseValue(row[3 * index + 2]))
      }
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

  /// The durability settings in force: (journal mode, synchronous level 0–3).
  public func durability() throws(StoreError) -> (journalMode: String, synchronous: Int) {
    try read { db in
      (
        try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "",
        try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
      )
    }
  }

  /// Whether SQLite was told at start not to count its allocations (`CSQLiteSetup`), and the
  /// bytes it has counted since (0 when it does not count): tests assert the setting.
  static func sqliteMemoryCount() -> (off: Bool, bytesCounted: Int64) {
    (shim_sqlite_memory_count_off() == SQLITE_OK, sqlite3_memory_used())
  }

  /// An integer pragma's value on the writing connection (tests assert the settings).
  func pragma(_ name: String) throws(StoreError) -> Int {
    try read { db in try Int.fetchOne(db, sql: "PRAGMA \(name)") ?? -1 }
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

/// A statement prepared once on the writing connection and kept, for the insert of every
/// recorded second: GRDB's `cachedStatement(sql:)` finds its statement by hashing the SQL
/// (SipHash over the insert's 300 bytes, then a compare: 2,000 instructions, a fortieth of a
/// recorded second's). Touched only inside the store's queue (its closures run one at a time)
/// and in `deinit`. It must be finalized before the connection is closed with
/// `DatabaseQueue.close()`, which fails while a statement of it lives; a queue freed without
/// that closes with `sqlite3_close_v2`, which waits for this statement's `deinit`.
/// `SQLITE_PREPARE_PERSISTENT`: kept for long, so SQLite does not take its memory from the
/// lookaside slots meant for short-lived allocations (https://sqlite.org/c3ref/prepare.html).
private final class HeldStatement: @unchecked Sendable {
  private let sql: String
  private var prepared: SQLiteStatement?

  init(sql: String) { self.sql = sql }

  deinit { sqlite3_finalize(prepared) }

  /// The statement, prepared on `db`'s connection the first time.
  func statement(in db: Database) throws -> SQLiteStatement {
    if let prepared { return prepared }
    var statement: SQLiteStatement?
    let code = sqlite3_prepare_v3(
      db.sqliteConnection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
    guard code == SQLITE_OK, let statement else {
      sqlite3_finalize(statement)
      throw DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: sql)
    }
    prepared = statement
    return statement
  }

  func finalize() {
    sqlite3_finalize(prepared)
    prepared = nil
  }
}

extension Row {
  /// The column's value as `T`, or nil when it is NULL or of a type that does not convert (a
  /// damaged record's text in a REAL column): GRDB's subscript stops the process on the latter,
  /// and the resume path must never, whatever the record holds.
  func readable<T: DatabaseValueConvertible>(_ type: T.Type, _ column: String) -> T? {
    T.fromDatabaseValue(self[column] as DatabaseValue)
  }

  /// A measurement column: its number, or nil for NULL and for anything else (text, a blob).
  func measurement(_ column: String) -> Double? { readable(Double.self, column) }

  /// A whole-number column within `range`; nil for NULL and for anything else (text, a
  /// fraction, a number beyond what it counts), where `Int` arithmetic on it could trap.
  func count(_ column: String, in range: ClosedRange<Int>) -> Int? {
    guard let value = readable(Double.self, column), value.rounded() == value,
      value >= Double(range.lowerBound), value <= Double(range.upperBound)
    else { return nil }
    return Int(value)
  }

  /// The `monotonic` and `wall` columns as a moment, when both read as numbers.
  var moment: Moment? {
    guard let monotonic = readable(Double.self, "monotonic"), let wall = readable(Double.self, "wall") else {
      return nil
    }
    return Moment(monotonic: monotonic, wall: wall)
  }
}
