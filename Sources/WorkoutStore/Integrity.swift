import Foundation
import GRDB

// The integrity check: in the background, its markers beside the database, and in full.
extension WorkoutStore {
  static func checkFailedMarker(_ path: String) -> String { path + ".check-failed" }
  private static func checkedMarker(_ path: String) -> String { path + ".checked" }

  static func checkIsOverdue(_ path: String) -> Bool {
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: checkedMarker(path)),
      let date = attributes[.modificationDate] as? Date
    else { return true }
    return Date().timeIntervalSince(date) > integrityCheckInterval
  }

  static func quickCheck(path: String) throws(StoreError) -> [String] {
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

  /// `PRAGMA integrity_check`: `["ok"]` for a sound database.
  public func integrityCheck() throws(StoreError) -> [String] {
    try read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
  }
}
