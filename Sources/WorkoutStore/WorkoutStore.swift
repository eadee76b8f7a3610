import CSQLiteSetup
import Foundation
import GRDB
import GRDBSQLite
import WorkoutCore

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
  let queue: DatabaseQueue
  /// The point insert of every recorded second, prepared once (see `insert`).
  let pointInsert = HeldStatement(sql: PointRecord.insertSQL)
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
  /// (pread) at 256 KiB.
  static let serviceCacheKiB = 256
  /// The background integrity check's connection, KiB: `quick_check` reads each page about once,
  /// so a cache barely helps it, and with the default it added 2 MiB to the service's peak
  /// memory on a large database.
  static let checkCacheKiB = 128
  /// How long a clean database goes without a full check.
  static let integrityCheckInterval = 7.0 * 86_400

  init(path: String, queue: DatabaseQueue, integrityCheckIsDue: Bool = false) {
    self.path = path
    self.queue = queue
    self.integrityCheckIsDue = integrityCheckIsDue
  }

  /// Gives back the connection's page cache and what else SQLite can free
  /// (`sqlite3_db_release_memory`): for a connection kept open between rare passes.
  public func releaseMemory() {
    queue.releaseMemory()
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

  func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
    do {
      return try queue.inDatabase(body)
    } catch {
      throw StoreError(error)
    }
  }

  /// `body` in a transaction of its own, committed when it returns.
  func transaction<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
    do {
      return try queue.write(body)
    } catch {
      throw StoreError(error)
    }
  }

  /// Inserts a record in a transaction of its own; returns it with its new id.
  func inserted<Record: MutablePersistableRecord>(_ record: Record) throws(StoreError) -> Record {
    try transaction { db in
      var record = record
      try record.insert(db)
      return record
    }
  }
}
