import GRDB
import Testing

@testable import WorkoutStore

/// A migration that has shipped is never edited: a database it already ran on would never see
/// the change. Each migration's schema is pinned here by a hash; appending a migration appends
/// its line, and a changed line means a shipped migration was edited (add a new one instead).
struct FrozenMigrationsTests {
  static let pinned: [(identifier: String, schema: String)] = [
    ("v1: sessions, events, points, laps", "d8a4161b40d7a613"),
    ("v2: ascent and descent of sessions and laps", "3b0b460e67ff95e3"),
    ("v3: barometric pressure and humidity of points", "8b43ff939015815b"),
    ("v4: format of the resume checkpoint", "ccd07310b00bc24"),
    ("v5: RR intervals of heart-rate straps", "442b46bb1269dc79"),
    ("v6: wheel speed of points", "e49ec6023ccb81e8"),
    ("v7: session UUIDs and the export ledger", "5af5d0c51e19b745"),
    ("v8: phones paired with the web server", "3d80016348e00806"),
    ("v9: what an export was made from", "1bbd77ed251580bc"),
    ("v10: battery samples of sessions", "64e871fd251832dd"),
    ("v11: the upload queue", "87b3c428b87ee5b8"),
    ("v12: a target's first session, a platform's retry time", "5ec9e5921367bece"),
    ("v13: the road's feel of points", "78406082699cd70c"),
  ]

  /// The schema after `identifier`, as SQLite keeps it: every table, index and trigger's SQL.
  func schema(after identifier: String) throws -> String {
    let queue = try DatabaseQueue()
    try Schema.migrator.migrate(queue, upTo: identifier)
    return try queue.read { db in
      try String.fetchAll(
        db,
        sql: """
          SELECT type || ' ' || name || ': ' || sql FROM sqlite_master
          WHERE sql IS NOT NULL AND name NOT LIKE 'grdb_%' ORDER BY type, name
          """
      ).joined(separator: "\n")
    }
  }

  /// FNV-1a, 64 bits, in hex: stable across runs and platforms, unlike `Hasher`.
  func fingerprint(_ text: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 {
      hash ^= UInt64(byte)
      hash = hash &* 0x0000_0100_0000_01b3
    }
    return String(hash, radix: 16)
  }

  @Test func everyMigrationIsPinnedInOrder() {
    #expect(Schema.migrator.migrations == Self.pinned.map(\.identifier))
  }

  @Test(arguments: pinned.map(\.identifier))
  func aShippedMigrationIsNotEdited(identifier: String) throws {
    let pinned = try #require(Self.pinned.first { $0.identifier == identifier })
    // GRDB traps on migrating up to an identifier it does not have.
    try #require(Schema.migrator.migrations.contains(identifier), "not registered")
    let schema = try schema(after: identifier)
    #expect(fingerprint(schema) == pinned.schema, "the schema after \(identifier):\n\(schema)")
  }
}
