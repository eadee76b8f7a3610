import GRDB

// The export ledger: which files were written of which session, and where.
extension WorkoutStore {
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
    try transaction { db in try record.insert(db, onConflict: .replace) }
  }
}
