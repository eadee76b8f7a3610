import GRDB
import WorkoutCore

// Reading a session's record: its rows, what of them cannot be read, and its totals.
extension WorkoutStore {
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
  static func unreadableRows(
    of sessionID: Int64, in table: String, _ readable: String, _ db: Database
  ) throws -> Int {
    try Int.fetchOne(
      db, sql: "SELECT COUNT(*) FROM \(table) WHERE session_id = ? AND NOT (\(readable))", arguments: [sessionID]) ?? 0
  }

  /// How many of a session's points from number `first` on cannot be placed.
  static func unreadablePoints(of sessionID: Int64, from first: Int, _ db: Database) throws -> Int {
    try Int.fetchOne(
      db, sql: "SELECT COUNT(*) FROM point WHERE session_id = ? AND seq >= ? AND NOT (\(PointRecord.readableSQL))",
      arguments: [sessionID, first]) ?? 0
  }

  /// A session's RR intervals, in the order they were sent; `seqs` limits them to those points.
  /// The battery samples of a session, in time order.
  public func batterySamples(sessionID: Int64) throws(StoreError) -> [BatterySampleRecord] {
    try read { db in
      try BatterySampleRecord.fetchAll(
        db, sql: "SELECT * FROM battery_sample WHERE session_id = ? ORDER BY wall, monotonic", arguments: [sessionID])
    }
  }

  public func rrIntervals(sessionID: Int64, seqs: ClosedRange<Int>? = nil) throws(StoreError) -> [RRIntervalRecord] {
    let range = seqs ?? 0...Int.max
    return try read { db in
      try RRIntervalRecord.fetchAll(
        db, sql: "SELECT * FROM rr_interval WHERE session_id = ? AND seq BETWEEN ? AND ? ORDER BY seq, position",
        arguments: [sessionID, range.lowerBound, range.upperBound])
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

  /// How many events of `kind` a session has (`event_session` finds the session's rows).
  public func eventCount(sessionID: Int64, kind: SessionEvent.Kind) throws(StoreError) -> Int {
    try read { db in
      try Int.fetchOne(
        db, sql: "SELECT COUNT(*) FROM event WHERE session_id = ? AND kind = ?", arguments: [sessionID, kind.rawValue])
        ?? 0
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
}
