import GRDB
import GRDBSQLite

/// A statement prepared once on the writing connection and kept, for the insert of every
/// recorded second: GRDB's `cachedStatement(sql:)` finds its statement by hashing the SQL
/// (SipHash over the insert's 300 bytes, then a compare: 2,000 instructions, a fortieth of a
/// recorded second's). Touched only inside the store's queue (its closures run one at a time)
/// and in `deinit`. It must be finalized before the connection is closed with
/// `DatabaseQueue.close()`, which fails while a statement of it lives; a queue freed without
/// that closes with `sqlite3_close_v2`, which waits for this statement's `deinit`.
/// `SQLITE_PREPARE_PERSISTENT`: kept for long, so SQLite does not take its memory from the
/// lookaside slots meant for short-lived allocations (https://sqlite.org/c3ref/prepare.html).
final class HeldStatement: @unchecked Sendable {
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
