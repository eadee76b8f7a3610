import GRDB

// Phones paired with the web server.
extension WorkoutStore {
  /// Every paired phone, revoked ones included, oldest first.
  public func webClients() throws(StoreError) -> [WebClientRecord] {
    try read { db in try WebClientRecord.order(Column("id")).fetchAll(db) }
  }

  /// Keeps a newly paired phone; returns it with its id.
  public func addWebClient(_ client: WebClientRecord) throws(StoreError) -> WebClientRecord {
    try inserted(client)
  }

  /// Revokes phone `id`; false if there is none, or it was revoked already.
  public func revokeWebClient(id: Int64, wall: Double) throws(StoreError) -> Bool {
    try transaction { db in
      try db.execute(
        sql: "UPDATE web_client SET revoked_wall = ? WHERE id = ? AND revoked_wall IS NULL", arguments: [wall, id])
      return db.changesCount > 0
    }
  }

  /// Notes when phone `id` was last seen (at most once a minute, so a phone's requests do not
  /// each write).
  public func touchWebClient(id: Int64, wall: Double) throws(StoreError) {
    try transaction { db in
      try db.execute(
        sql: "UPDATE web_client SET last_seen_wall = ? WHERE id = ? AND (last_seen_wall IS NULL OR last_seen_wall < ?)",
        arguments: [wall, id, wall - 60])
    }
  }
}
