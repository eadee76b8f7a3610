import Foundation
import GRDB

struct DamagedRecordSetupFailure: Error, CustomStringConvertible {
  var description: String
}

private func required<T>(_ value: T?, _ what: @autoclosure () -> String = "a value") throws -> T {
  guard let value else { throw DamagedRecordSetupFailure(description: "no \(what())") }
  return value
}

/// Lets a damaged record's NULL into `columns` of `table`, where the schema says NOT NULL: a
/// flipped type byte in a record does this (SQLite checks a page's structure, not its values),
/// and an UPDATE cannot. The table's schema text is edited in place (`writable_schema`); a
/// connection opened after it sees the change.
public func allowNull(in table: String, _ columns: [String], _ db: Database) throws {
  var sql = try required(
    try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = ?", arguments: [table]))
  for column in columns {
    let range = try required(
      sql.range(of: "\\b\(column) [A-Z]+ NOT NULL", options: .regularExpression), "\(table).\(column) NOT NULL")
    sql.replaceSubrange(range, with: sql[range].replacingOccurrences(of: " NOT NULL", with: ""))
  }
  try db.execute(sql: "PRAGMA writable_schema = ON")
  try db.execute(sql: "UPDATE sqlite_master SET sql = ? WHERE name = ?", arguments: [sql, table])
  try db.execute(sql: "PRAGMA writable_schema = OFF")
}
