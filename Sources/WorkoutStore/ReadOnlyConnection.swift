import GRDB
import GRDBSQLite

/// A read-only connection made with SQLite's C API, for the one-off reads the service makes
/// beside its long-lived connections: the schema inspection at start and the integrity check.
///
/// Not a GRDB `DatabaseQueue`, because freeing one frees a dispatch queue that carries
/// queue-specific data, and libdispatch runs those destructors on its global worker pool
/// (`_dispatch_queue_specific_head_dispose`). On Linux the first worker thread starts the
/// pool's monitor, a one-second timer that runs for the rest of the process's life
/// (`_dispatch_workq_init_once`, libdispatch `event/workqueue.c`): an idle board would wake
/// every second because of a check made at start. The service's long-lived GRDB connections
/// are never freed while it runs, so they do not start it.
final class ReadOnlyConnection {
  private let handle: OpaquePointer

  /// `cacheKiB` bounds SQLite's page cache for this connection (its default is 2,000 KiB).
  init(path: String, cacheKiB: Int? = nil) throws(DatabaseError) {
    var opened: OpaquePointer?
    let code = sqlite3_open_v2(path, &opened, SQLITE_OPEN_READONLY, nil)
    guard code == SQLITE_OK, let opened else {
      let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
      sqlite3_close_v2(opened)
      throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message)
    }
    handle = opened
    // The service writes beside it in WAL mode; a short wait covers checkpoints.
    sqlite3_busy_timeout(handle, 5000)
    if let cacheKiB { _ = try strings("PRAGMA cache_size = -\(cacheKiB)") }
  }

  deinit { sqlite3_close_v2(handle) }

  /// The first column of every row of `sql`, as text (NULL as "").
  func strings(_ sql: String) throws(DatabaseError) -> [String] {
    var statement: OpaquePointer?
    var code = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
    guard code == SQLITE_OK else { throw error(code) }
    defer { sqlite3_finalize(statement) }
    var rows: [String] = []
    while true {
      code = sqlite3_step(statement)
      if code == SQLITE_DONE { return rows }
      guard code == SQLITE_ROW else { throw error(code) }
      rows.append(sqlite3_column_text(statement, 0).map { String(cString: $0) } ?? "")
    }
  }

  /// Whether the schema has a table of that name.
  func tableExists(_ name: String) throws(DatabaseError) -> Bool {
    let escaped = name.replacingOccurrences(of: "'", with: "''")
    return try !strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '\(escaped)'").isEmpty
  }

  private func error(_ code: CInt) -> DatabaseError {
    DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(handle)))
  }
}
