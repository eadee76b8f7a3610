import Foundation
import GRDB
import GRDBSQLite
import WorkoutCore

// Opening the database: for the service (moving aside a damaged one), for the export ledger,
// and for reading; the connection's settings.
extension WorkoutStore {
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

  /// The file SQLite opened, by the name its unix VFS gave it: symlinks resolved (it puts the
  /// -wal beside the real file), so a name other than ours means one was followed.
  public var openedFile: String? {
    queue.inDatabase { db in sqlite3_db_filename(db.sqliteConnection, "main").map { String(cString: $0) } }
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
}
