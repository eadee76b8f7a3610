import Foundation
import GRDB
import LinuxSupport

// Room for the WAL: made once with zeros, and kept at a clean stop.
extension WorkoutStore {
  /// Frames the WAL is made room for: SQLite's automatic checkpoint runs once it holds
  /// `wal_autocheckpoint` (1000) frames, and the writer then starts it again from the front;
  /// a few more for the commit that crosses the line.
  static let walPreallocatedFrames = 1024

  /// Makes the WAL `walPreallocatedFrames` frames long with written zeros, if it is shorter
  /// (SQLite truncates it to nothing when the service closes the database), and syncs it.
  ///
  /// Why: a commit that appends to the WAL changes its size and allocates blocks, so each
  /// durable commit also writes the file's metadata (`fdatasync` writes the inode; with ext4's
  /// journal, a journal commit every second) until the WAL has reached its length for the
  /// first time, about 17 minutes of a ride at a frame a second. Over blocks written before,
  /// a commit changes no metadata that `fdatasync` must write. Zeros past the last frame are
  /// not frames (their salt is not the header's), and a WAL whose header is still zero holds
  /// none (SQLite ignores it; `DatabaseFiles.walCondition` reads it as empty). Done inside a
  /// write transaction, so that no frame is written meanwhile; only past the file's end.
  ///
  /// The service calls it after READY (about 2 MB written and synced: on an SD card a tenth
  /// of a second or more, which READY does not wait for); it is never needed for
  /// correctness, so a failure is the caller's to log, and the WAL then grows as it fills.
  public func preallocateWAL() throws(StoreError) {
    do {
      try queue.writeWithoutTransaction { db in
        try db.execute(sql: "BEGIN IMMEDIATE TRANSACTION")
        defer { try? db.execute(sql: "ROLLBACK TRANSACTION") }
        let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
        let target = 32 + Self.walPreallocatedFrames * (pageSize + 24)
        let wal = path + "-wal"
        try Self.onWAL(wal) { () throws(SystemError) in
          let file = try FileDescriptor.open(wal, O_WRONLY | O_NOFOLLOW)
          var offset = Int(try file.status().st_size)
          guard offset < target else { return }
          if offset < 32 {
            // No WAL yet (SQLite writes its header with the first frame): a header of no
            // frame, so that the room reads as an empty WAL to anyone, before the first
            // commit too.
            let header = DatabaseFiles.emptyWALHeader(pageSize: pageSize, checkpointSequence: 0, avoidingSalt: [])
            try file.write(header[...], at: 0)
            offset = header.count
          }
          // A page at a time: the kernel's page cache sizes a folio by the write that makes
          // it (Linux 6.x, ext4's large folios), and a commit that dirties 2 KB of a 64 KB
          // folio then writes all of it back (measured: 26 KB written a recorded second, not
          // 8.4).
          let page = 4096
          let zeros = [UInt8](repeating: 0, count: page)
          while offset < target {
            let length = min(page - offset % page, target - offset)
            try file.write(zeros[..<length], at: Int64(offset))
            offset += length
          }
          try file.syncData()
        }
      }
    } catch {
      throw StoreError(error)
    }
  }

  /// Closes the database at a clean stop and keeps its WAL at its size for the next start, so
  /// that the room `preallocateWAL` made is made once, not at every start: every frame is
  /// checkpointed into the database first (`wal_checkpoint(RESTART)`, synced), then the WAL
  /// gets a new header with new salts (`DatabaseFiles.emptyWALHeader`: what SQLite's next
  /// writer would write; the frames after it are then frames of nothing, so SQLite, this
  /// release and earlier ones read an empty WAL: this release a clean stop, earlier ones an
  /// unclean one, which costs them a background check, not the data), and SQLite is told not to
  /// truncate it on closing (`journal_size_limit` -1). The header goes in under the write lock,
  /// and only if no frame was written since the checkpoint (the header is as it was): nothing
  /// committed can be lost, even to another process writing beside the service.
  ///
  /// When it cannot (a reader still in the WAL, another process's frames), the database is
  /// closed as SQLite closes it (the last connection to close truncates the WAL to nothing),
  /// and the next start makes the room again. Returns what happened, for a log line. The store
  /// cannot be used afterwards.
  public func closeKeepingWAL() -> String {
    let wal = path + "-wal"
    func header() -> [UInt8]? { DatabaseFiles.read(wal, bytes: 56) }
    var outcome = "closed the database"
    do {
      try queue.writeWithoutTransaction { db in
        let checkpoint = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(RESTART)")
        let busy: Int = checkpoint?[0] ?? 1
        let frames: Int = checkpoint?[1] ?? -1
        let copied: Int = checkpoint?[2] ?? -2
        guard busy == 0, frames == copied, let before = header(), before.count == 56 else {
          outcome = "closed the database (its WAL left to SQLite: a reader held it at the last checkpoint)"
          return
        }
        try db.execute(sql: "BEGIN IMMEDIATE TRANSACTION")
        defer { try? db.execute(sql: "ROLLBACK TRANSACTION") }
        guard header() == before else {
          outcome = "closed the database (its WAL left to SQLite: another writer used it)"
          return
        }
        // A new header, as SQLite's next writer would write: the frames after it keep the
        // old salts, so they are frames of nothing.
        let pageSize = Int(DatabaseFiles.bigEndian32(before, at: 8))
        let header = DatabaseFiles.emptyWALHeader(
          pageSize: pageSize, checkpointSequence: DatabaseFiles.bigEndian32(before, at: 12) &+ 1,
          avoidingSalt: Array(before[40..<48]))
        try Self.onWAL(wal) { () throws(SystemError) in
          let file = try FileDescriptor.open(wal, O_WRONLY | O_NOFOLLOW)
          try file.write(header[...], at: 0)
          try file.syncData()
        }
        try db.execute(sql: "PRAGMA journal_size_limit = -1")
        outcome = "closed the database; its WAL kept at \(DatabaseFiles.size(of: wal) ?? 0) bytes for the next start"
      }
    } catch {
      outcome = "closed the database (its WAL left to SQLite: \(error))"
    }
    do {
      // GRDB's close fails (SQLITE_BUSY) while a statement of the connection is alive.
      queue.writeWithoutTransaction { _ in pointInsert.finalize() }
      try queue.close()
    } catch {
      outcome += "; could not close it: \(error)"
    }
    return outcome
  }

  /// Runs a call on the WAL's file, its error naming the file ("pwrite /x/workoutd.db-wal: ...").
  static func onWAL<Value>(_ wal: String, _ call: () throws(SystemError) -> Value) throws(SystemError) -> Value {
    do {
      return try call()
    } catch {
      throw SystemError(error.call, errno: error.errno, context: wal)
    }
  }
}
