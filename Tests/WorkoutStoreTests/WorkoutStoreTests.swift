import Foundation
import GRDB
import Testing
import WorkoutCore
import WorkoutTestSupport

@testable import WorkoutStore

/// A fresh directory per test, removed afterwards.
final class TemporaryDirectory {
  let path: String

  init() {
    path = NSTemporaryDirectory() + "workoutd-store-" + UUID().uuidString
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(atPath: path) }

  var database: String { path + "/workoutd.db" }
}

let testClock = ClockStamp(epoch: "test-boot", moment: Moment(monotonic: 0, wall: 1_700_000_000), wallTrusted: true)

/// Records a short ride into `store`, one transaction per engine step, as the service does.
@discardableResult
func recordRide(
  into store: WorkoutStore, seconds: Int, pauseAtEnd: Bool = false, stop: Bool = false
) throws -> EngineHarness {
  var h = EngineHarness()
  var written = 0
  func flush() throws {
    let fresh = Array(h.commands[written...])
    written = h.commands.count
    try store.write(fresh, clock: testClock)
  }
  _ = h.press(.start)
  try flush()
  h.finishCountdown()
  try flush()
  var position = GeoPoint(latitude: 46.05, longitude: 14.5)
  for _ in 0..<seconds {
    h.ride(seconds: 1, speed: 6, heartRate: 150, from: &position)
    try flush()
  }
  if pauseAtEnd {
    _ = h.press(.pause)
    try flush()
  }
  if stop {
    _ = h.press(.stop)
    try flush()
  }
  return h
}

struct WorkoutStoreTests {
  /// The records name no column by hand (GRDB's column coding strategies): every record's
  /// columns are its table's, and each row read back and written again gives the same values
  /// (an optional property whose column were misnamed would silently read as NULL).
  /// What a damaged record holds in a point's measurements (text where a number goes, a heart
  /// rate or power no 16-bit field carries) reads as no value: never an error that loses the
  /// ride's export, nor a trap in the sums `show` and the resume make over them.
  @Test func aPointsDamagedMeasurementsReadAsNone() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    _ = try recordRide(into: store, seconds: 5)
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { db in
      try db.execute(sql: "UPDATE point SET hr = 9e999, power = -1e300, fix_dim = 2.5 WHERE seq = 1")
      try db.execute(sql: "UPDATE point SET hr = 'zz', speed = 'zz', lat = x'00', cadence = 'zz' WHERE seq = 2")
      try db.execute(sql: "UPDATE point SET power = 65536, hr = 65535 WHERE seq = 3")
    }
    try queue.close()
    let points = try store.points(sessionID: 1)
    #expect(points.count == 5)
    #expect(points[1].hr == nil && points[1].power == nil && points[1].fixDim == nil)
    #expect(points[2].hr == nil && points[2].speed == nil && points[2].lat == nil && points[2].cadence == nil)
    #expect(points[2].lon != nil, "the rest of the row is read")
    #expect(points[3].power == nil && points[3].hr == 65_535)
    #expect(points[0].hr == 150 && points[4].hr == 150)
    let totals = try store.channelTotals(sessionID: 1)
    #expect(totals.first { $0.channel == .heartRate }?.seconds == 5)
  }

  @Test func everyRecordReadsAndWritesExactlyItsTablesColumns() throws {
    let dir = TemporaryDirectory()
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      let h = try recordRide(into: store, seconds: 5)
      var engine = h.engine
      try store.write(engine.handle(.request(.lap, .gpio), at: h.now.advanced(by: 1)).commands, clock: testClock)
      try store.write(engine.handle(.request(.stop, .gpio), at: h.now.advanced(by: 2)).commands, clock: testClock)
    }
    let queue = try DatabaseQueue(path: dir.database)
    try queue.read { db in
      func check<Record: FetchableRecord & EncodableRecord & TableRecord>(_ type: Record.Type) throws {
        let table = Record.databaseTableName
        let columns = try db.columns(in: table).map(\.name)
        let rows = try Row.fetchAll(db, sql: "SELECT * FROM \(table)")
        #expect(!rows.isEmpty, "table \(table) has rows to check")
        for row in rows {
          let written = try Record(row: row).databaseDictionary
          #expect(Set(written.keys) == Set(columns), "columns of \(table)")
          for column in columns {
            #expect(written[column] == row[column] as DatabaseValue, "\(table).\(column) reads back as written")
          }
        }
      }
      try check(SessionRecord.self)
      try check(EventRecord.self)
      try check(PointRecord.self)
      try check(LapRecord.self)
    }
    #expect(ColumnKey(propertyFor: "session_id").stringValue == "sessionID")
    #expect(ColumnKey(propertyFor: "alt_gps").stringValue == "altGPS")
    #expect(ColumnKey(propertyFor: "clock_wall_trusted").stringValue == "clockWallTrusted")
  }

  @Test func durabilityIsWALWithSynchronousFull() throws {
    let dir = TemporaryDirectory()
    do {
      let (store, notices) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      #expect(notices == [.created(path: dir.database)])
      let durability = try store.durability()
      #expect(durability.journalMode == "wal")
      #expect(
        durability.synchronous == 2,
        "PRAGMA synchronous must be FULL (2): a power cut loses at most the uncommitted second")
      _ = store.backgroundIntegrityCheck()
    }
    // And again on reopening an existing file (closed cleanly, so with nothing to say).
    let (reopened, again) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    #expect(again.isEmpty)
    #expect(try reopened.durability().synchronous == 2)
  }

  /// SQLite's allocation count is off in every process that links the store (a constructor
  /// turns it off before main): counting takes a global mutex on each of SQLite's mallocs and
  /// frees, 18 % of SQLite's instructions in a recorded second, for figures nothing reads.
  @Test func sqliteDoesNotCountItsAllocations() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    try recordRide(into: store, seconds: 5)
    let count = WorkoutStore.sqliteMemoryCount()
    #expect(count.off)
    #expect(count.bytesCounted == 0, "SQLite counted \(count.bytesCounted) bytes: its count is on")
  }

  @Test func theWALFilesOutliveTheServiceSoReadOnlyReadersCanOpen() throws {
    let dir = TemporaryDirectory()
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try recordRide(into: store, seconds: 5)
    }
    // The service has closed the database: a reader that may not create files (a member of the
    // service's group) needs -wal and -shm to be there already.
    #expect(FileManager.default.fileExists(atPath: dir.database + "-wal"))
    #expect(FileManager.default.fileExists(atPath: dir.database + "-shm"))
    let reader = try WorkoutStore.openForReading(at: dir.database)
    #expect(try reader.pointCount(sessionID: 1) == 5)
  }

  @Test func aRideIsStoredAndResumesInTheStateItWasIn() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let h = try recordRide(into: store, seconds: 30, pauseAtEnd: true)

    let (reopened, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    #expect(try reopened.maxSessionID() == 1)
    let resumed = try resumable(reopened)
    #expect(resumed.session.state == .paused)
    #expect(resumed.session == h.engine.session!, "the checkpoint is exactly the engine's session")
    #expect(resumed.lastCommit.epoch == "test-boot")
    #expect(try reopened.pointCount(sessionID: 1) == 30)
    let points = try reopened.points(sessionID: 1)
    #expect(points.map(\.seq) == Array(0..<30))
    #expect(points.allSatisfy { $0.hr == 150 && $0.lat != nil })
    let events = try reopened.events(sessionID: 1)
    #expect(events.filter { $0.kind == "transition" }.map { $0.toState } == ["prepared", "running", "paused"])
    let session = try #require(try reopened.session(id: 1))
    #expect(session.state == "paused")
    #expect(session.points == 30)
    #expect(abs(session.distance - h.engine.session!.builder.totals.distance) < 1e-9)
  }

  @Test func aStoppedSessionIsFinalisedWithLapsAndSummary() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    try recordRide(into: store, seconds: 20, stop: true)
    #expect(try store.unfinishedSessions().isEmpty)
    let record = try #require(try store.session(id: 1))
    #expect(record.state == "ended")
    let summary = try #require(try store.summary(of: record))
    #expect(summary.laps == 1)
    #expect(abs(summary.totals.timer - 20) < 1e-9)
    #expect(try store.laps(sessionID: 1).map(\.trigger) == ["sessionEnd"])
    #expect(record.endWall != nil)
  }

  @Test func theEventLogDecidesTheResumedState() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    var h = try recordRide(into: store, seconds: 5)
    // A pause whose transition event was committed but whose snapshot write was not.
    _ = h.press(.pause)
    let eventsOnly = h.commands.filter { if case .recordEvent = $0 { true } else { false } }.suffix(1)
    try store.write(Array(eventsOnly), clock: testClock)
    let resumed = try resumable(store)
    #expect(resumed.session.state == .paused)
  }

  @Test func aFileThatIsNotADatabaseIsMovedAsideAndAFreshOneStarted() throws {
    let dir = TemporaryDirectory()
    let garbage = Data("this is not an SQLite database, but somebody's precious bytes\n".utf8)
    try garbage.write(to: URL(fileURLWithPath: dir.database))
    // 2026-11-22T05:00:00Z
    let (store, notices) = try WorkoutStore.open(at: dir.database, wallNow: 1_795_323_600)
    guard case .movedAside(let path, let movedTo, let reason)? = notices.first else {
      Issue.record("expected the file to be moved aside, got \(notices)")
      return
    }
    #expect(path == dir.database)
    #expect(movedTo == [dir.database + ".corrupt-20261122T050000Z"])
    #expect(!reason.isEmpty)
    #expect(try Data(contentsOf: URL(fileURLWithPath: movedTo[0])) == garbage, "never deleted")
    #expect(notices.last == .created(path: dir.database))
    try recordRide(into: store, seconds: 3)
    #expect(try store.integrityCheck() == ["ok"])
  }

  @Test func aNameAlreadyTakenGetsASuffix() throws {
    let dir = TemporaryDirectory()
    for _ in 0..<2 {
      try Data("garbage".utf8).write(to: URL(fileURLWithPath: dir.database))
      _ = try WorkoutStore.open(at: dir.database, wallNow: 1_795_323_600)
    }
    let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("corrupt") }.sorted()
    // The second time the fresh database's (kept, empty) WAL files go with it, under one name.
    #expect(
      names == [
        "workoutd.db.corrupt-20261122T050000Z", "workoutd.db.corrupt-20261122T050000Z-2",
        "workoutd.db.corrupt-20261122T050000Z-2-shm", "workoutd.db.corrupt-20261122T050000Z-2-wal",
      ])
  }

  @Test func readingANonexistentDatabaseIsAClearError() {
    #expect(throws: StoreError.self) { try WorkoutStore.openForReading(at: "/nonexistent/workoutd.db") }
  }

  /// A real full disk: a small tmpfs. SQLite must report it as such, leave the database intact,
  /// and take the same write once space returns.
  @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root (CI runs as root)"))
  func aFullDiskIsATransientErrorAndLosesNothing() throws {
    let dir = TemporaryDirectory()
    let mountPoint = dir.path + "/small"
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
    #expect(run("/bin/mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint) == 0)
    defer { _ = run("/bin/umount", "-l", mountPoint) }
    let path = mountPoint + "/workoutd.db"
    let (store, _) = try WorkoutStore.open(at: path, wallNow: 0)
    try recordRide(into: store, seconds: 10)
    // Fill the rest of the file system.
    let ballast = mountPoint + "/ballast"
    FileManager.default.createFile(atPath: ballast, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: ballast))
    while (try? handle.write(contentsOf: Data(count: 4096))) != nil {}
    try handle.close()

    var h = EngineHarness(nextSessionID: 2)
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    var failure: StoreError?
    var failedBatch: [EngineCommand] = []
    for _ in 0..<2000 {
      h.ride(seconds: 1, speed: 6, heartRate: 150, from: &position)
      do {
        try store.write(h.commands, clock: testClock)
        h.commands.removeAll()
      } catch {
        failure = error
        failedBatch = h.commands
        break
      }
    }
    let error = try #require(failure, "writing to a full disk must fail")
    #expect(error.isTransient, "\(error)")
    #expect(try store.integrityCheck() == ["ok"], "a failed write leaves the database sound")
    let committed = try store.pointCount(sessionID: 2)
    try FileManager.default.removeItem(atPath: ballast)
    try store.write(failedBatch, clock: testClock)
    #expect(try store.integrityCheck() == ["ok"])
    #expect(try store.pointCount(sessionID: 1) == 10)
    #expect(try store.pointCount(sessionID: 2) == committed + 1, "the retried second is stored")
  }
}

@discardableResult
func run(_ arguments: String...) -> Int32 {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: arguments[0])
  process.arguments = Array(arguments.dropFirst())
  do { try process.run() } catch { return -1 }
  process.waitUntilExit()
  return process.terminationStatus
}

struct MigrationTests {
  /// Records `seconds` of barometer readings, one a second, in a started session of a fresh store.
  func recordBarometer(
    into dir: TemporaryDirectory, seconds: Int, stop: Bool = false, reading: (Int) -> SensorReading
  ) throws -> WorkoutStore {
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    for second in 0..<seconds {
      h.advance(by: 1)
      h.send(.reading(reading(second)))
      h.send(.tick)
    }
    if stop { _ = h.press(.stop) }
    try store.write(h.commands, clock: testClock)
    return store
  }

  @Test func ascentAndDescentAreStoredWithSessionsAndLaps() throws {
    let dir = TemporaryDirectory()
    let store = try recordBarometer(into: dir, seconds: 60, stop: true) { second in
      .barometer(pressure: BarometricAltitude.pressure(altitude: Double(second))!, temperature: nil)
    }
    let session = try #require(try store.session(id: 1))
    #expect(session.ascent > 50)
    #expect(try store.laps(sessionID: 1).first?.ascent == session.ascent)
    #expect(try store.points(sessionID: 1).last?.altBaro != nil)
  }

  /// A point written the service's way (`PointRecord.bind`, SQLite's own bind calls) and one
  /// written through GRDB's arguments are the same rows, and `PointRecord(row:)` reads each
  /// column by its name: every column comes back as written, a NULL as nil, and a NULL where a
  /// value must be is an error, not a trap.
  @Test func everyColumnOfAPointIsReadBackAsWritten() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    _ = try recordRide(into: store, seconds: 1)
    let full = PointRecord(
      sessionID: 1, seq: 100, wall: 1_700_000_000.25, monotonic: 12.5, elapsed: 99.75, timer: 98.5,
      distance: 1234.5, lat: 46.05, lon: 14.5, altGPS: 301.5, altBaro: 299.25, speed: 7.75, hr: 151,
      cadence: 88.5, power: 245, temperature: 21.5, fixDim: 3, hError: 4.25, pressure: 97_654.5,
      humidity: 45.5, wheelSpeed: 7.5, vibration: 3.125, peakAcceleration: 24.5)
    let empty = PointRecord(
      sessionID: 1, seq: 101, wall: 1_700_000_001, monotonic: 13.5, elapsed: 100.75, timer: 99.5, distance: 1240,
      lat: nil, lon: nil, altGPS: nil, altBaro: nil, speed: nil, hr: nil, cadence: nil, power: nil,
      temperature: nil, fixDim: nil, hError: nil, pressure: nil, humidity: nil, wheelSpeed: nil, vibration: nil,
      peakAcceleration: nil)
    try store.write(
      [.recordPoint(sessionID: 1, full.trackPoint), .recordPoint(sessionID: 1, empty.trackPoint)], clock: testClock)
    var copies = [full, empty]
    copies[0].seq = 200
    copies[1].seq = 201
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { db in
      for point in copies { try db.execute(sql: PointRecord.insertSQL, arguments: point.insertArguments) }
    }
    #expect(try store.points(sessionID: 1, from: 100) == [full, empty] + copies)
    try queue.read { db in
      let row = try #require(try Row.fetchOne(db, sql: "SELECT NULL AS session_id, 1 AS seq"))
      #expect(throws: (any Error).self) { try PointRecord(row: row) }
    }
  }

  @Test func wheelSpeedIsStoredWithPointsAndGivesTheDistanceIndoors() throws {
    let dir = TemporaryDirectory()
    let store = try recordBarometer(into: dir, seconds: 10, stop: true) { _ in
      .wheelSpeed(metersPerSecond: 6.25, distance: 6.25)
    }
    let points = try store.points(sessionID: 1)
    #expect(points.count == 10)
    #expect(points.allSatisfy { $0.wheelSpeed == 6.25 && $0.speed == nil && $0.lat == nil })
    #expect(points.last?.trackPoint.wheelSpeed == 6.25)
    let session = try #require(try store.session(id: 1))
    #expect(abs(session.distance - 62.5) < 1e-9)
    #expect(try store.laps(sessionID: 1).first?.maxSpeed == 6.25)
  }

  @Test func pressureAndHumidityAreStoredWithPoints() throws {
    let dir = TemporaryDirectory()
    let store = try recordBarometer(into: dir, seconds: 5) { second in
      .barometer(pressure: 100_653.27 - Double(second), temperature: 25.08, humidity: 46.33)
    }
    let last = try #require(try store.points(sessionID: 1).last)
    #expect(last.pressure == 100_653.27 - 4)
    #expect(last.humidity == 46.33)
    #expect(last.temperature == 25.08)
  }

  /// Every RR interval a strap sends is kept, in order, with the point of the second it came
  /// in, in the same transaction as that point; none while paused, and none invented.
  @Test func rrIntervalsAreStoredEachWithItsSecond() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    // Second 0: two intervals in one notification; second 1: one; second 2: none.
    let seconds: [[[UInt16]]] = [[[1024, 1000]], [[980]], []]
    for notifications in seconds {
      h.advance(by: 1)
      for intervals in notifications { h.send(.reading(.rrIntervals(intervals))) }
      h.send(.tick)
    }
    _ = h.press(.pause)
    h.advance(by: 1)
    h.send(.reading(.rrIntervals([900])))  // while paused: not part of the ride
    _ = h.press(.resume)
    h.advance(by: 1)
    h.send(.reading(.rrIntervals([950])))
    h.send(.tick)
    try store.write(h.commands, clock: testClock)

    let rows = try store.rrIntervals(sessionID: 1)
    #expect(rows.map(\.interval) == [1024, 1000, 980, 950])
    #expect(rows.map(\.seq) == [0, 0, 1, 3])
    #expect(rows.map(\.position) == [0, 1, 0, 0])
    #expect(rows.first?.milliseconds == 1000)
    #expect(try store.points(sessionID: 1).count == 4)

    let queue = try DatabaseQueue(path: dir.database)
    try queue.read { db in
      let columns = try db.columns(in: "rr_interval").map(\.name)
      #expect(columns == ["session_id", "seq", "position", "interval"])
      for row in try Row.fetchAll(db, sql: "SELECT * FROM rr_interval") {
        #expect(try RRIntervalRecord(row: row).databaseDictionary.count == columns.count)
      }
    }
  }

  @Test func aBMP280LeavesHumidityEmpty() throws {
    let dir = TemporaryDirectory()
    let store = try recordBarometer(into: dir, seconds: 1) { _ in .barometer(pressure: 100_000, temperature: 20) }
    let last = try #require(try store.points(sessionID: 1).last)
    #expect(last.pressure == 100_000)
    #expect(last.humidity == nil)
  }

  /// A database written by a release before v3 (points without pressure and humidity) is
  /// upgraded in place on start: its points kept, the new columns empty, its session resumed.
  @Test func aVersion2DatabaseIsUpgradedWithItsPointsKept() throws {
    let dir = TemporaryDirectory()
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try recordRide(into: store, seconds: 20)
    }
    // Take the file back to what v2 left: no pressure or humidity columns, v3 not applied.
    do {
      let queue = try DatabaseQueue(path: dir.database)
      try queue.write { db in
        try db.execute(sql: "ALTER TABLE point DROP COLUMN pressure")
        try db.execute(sql: "ALTER TABLE point DROP COLUMN humidity")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v3:%'")
        try db.execute(sql: "ALTER TABLE session DROP COLUMN snapshot_version")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v4:%'")
        try db.execute(sql: "DROP TABLE rr_interval")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v5:%'")
        try db.execute(sql: "ALTER TABLE point DROP COLUMN wheel_speed")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v6:%'")
        try db.execute(sql: "DROP INDEX session_uuid")
        try db.execute(sql: "ALTER TABLE session DROP COLUMN uuid")
        try db.execute(sql: "DROP TABLE export")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v7:%'")
        try db.execute(sql: "DROP TABLE web_client")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v8:%'")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v9:%'")
        try db.execute(sql: "DROP TABLE battery_sample")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v10:%'")
        try db.execute(sql: "DROP TABLE upload_job")
        try db.execute(sql: "DROP TABLE upload_target")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v11:%'")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v12:%'")
        try db.execute(sql: "ALTER TABLE point DROP COLUMN vibration")
        try db.execute(sql: "ALTER TABLE point DROP COLUMN peak_acceleration")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v13:%'")
      }
      let applied = try queue.read { db in try Schema.migrator.appliedIdentifiers(db) }
      #expect(applied.count == 2)
    }
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let points = try store.points(sessionID: 1)
    #expect(points.count == 20)
    #expect(points.allSatisfy { $0.pressure == nil && $0.humidity == nil && $0.wheelSpeed == nil && $0.lat != nil })
    #expect(try resumable(store).session.id == 1)
    let columns = try DatabaseQueue(path: dir.database).read { db in try db.columns(in: "point").map(\.name) }
    #expect(columns.contains("pressure") && columns.contains("humidity"), "v3 applied on start")
    #expect(try store.rrIntervals(sessionID: 1).isEmpty, "v5 applied on start")
    #expect(columns.contains("wheel_speed"), "v6 applied on start")
    #expect(try store.session(id: 1)?.uuid.count == 36, "v7 applied on start")
    #expect(try store.webClients().isEmpty, "v8 applied on start")
    let exportColumns = try DatabaseQueue(path: dir.database).read { db in try db.columns(in: "export").map(\.name) }
    #expect(exportColumns.contains("source_event_id"), "v9 applied on start")
    #expect(try store.batterySamples(sessionID: 1).isEmpty, "v10 applied on start")
    #expect(try store.uploadJobs().isEmpty && store.uploadTargets().isEmpty, "v11 applied on start")
    let targetColumns = try DatabaseQueue(path: dir.database).read { db in
      try db.columns(in: "upload_target").map(\.name)
    }
    #expect(targetColumns.contains("first_session"), "v12 applied on start")
    #expect(columns.contains("vibration") && columns.contains("peak_acceleration"), "v13 applied on start")
  }

  /// v8 keeps the phones paired with the web server: a token's hash, revocable, never removed.
  @Test func pairedPhonesAreKeptRevokedAndTouched() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let first = try store.addWebClient(WebClientRecord(name: "phone", tokenHash: "aa", pairedWall: 100))
    let second = try store.addWebClient(WebClientRecord(name: "tablet", tokenHash: "bb", pairedWall: 200))
    #expect(first.id == 1 && second.id == 2)
    #expect(throws: StoreError.self, "a token hash is unique") {
      _ = try store.addWebClient(WebClientRecord(name: "again", tokenHash: "aa", pairedWall: 300))
    }
    try store.touchWebClient(id: 1, wall: 1000)
    try store.touchWebClient(id: 1, wall: 1030)  // within the minute: not written
    #expect(try store.webClients().first?.lastSeenWall == 1000)
    #expect(try store.revokeWebClient(id: 2, wall: 2000))
    #expect(try !store.revokeWebClient(id: 2, wall: 2001), "revoked once")
    #expect(try !store.revokeWebClient(id: 9, wall: 2001), "no such phone")
    let clients = try store.webClients()
    #expect(clients.map(\.revokedWall) == [nil, 2000])
  }

  /// v7 gives each session of an earlier release its own random UUID (version 4, RFC 9562's
  /// layout), and every new session one; the export ledger starts empty.
  @Test func sessionsOfEarlierReleasesGetTheirOwnUUIDs() throws {
    let dir = TemporaryDirectory()
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try recordRide(into: store, seconds: 3)
    }
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { db in
      // Four sessions as a v6 database holds them: copies of the first, no uuid column.
      for id in 2...4 {
        try db.execute(
          sql: "INSERT INTO session SELECT \(id), activity, state, opened_wall, start_wall, end_wall, elapsed, "
            + "timer, distance, points, snapshot, summary, clock_epoch, clock_monotonic, clock_wall, "
            + "clock_wall_trusted, ascent, descent, snapshot_version, 'copy \(id)' FROM session WHERE id = 1")
      }
      try db.execute(sql: "DROP INDEX session_uuid")
      try db.execute(sql: "ALTER TABLE session DROP COLUMN uuid")
      try db.execute(sql: "DROP TABLE export")
      try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v7:%'")
      try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v9:%'")
    }
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let uuids = try store.sessions(limit: 10).map(\.uuid)
    #expect(uuids.count == 4 && Set(uuids).count == 4, "\(uuids)")
    for uuid in uuids {
      let parsed = try #require(UUID(uuidString: uuid), "\(uuid)")
      #expect(parsed.uuidString.lowercased() == uuid)
      let bytes = withUnsafeBytes(of: parsed.uuid) { Array($0) }
      #expect(bytes[6] >> 4 == 4, "version 4: \(uuid)")
      #expect(bytes[8] >> 6 == 0b10, "RFC 9562 variant: \(uuid)")
    }
    #expect(try store.exports(sessionID: 1).isEmpty)
    #expect(try store.sessionIDsNotExported(format: "fit", destination: "/x").isEmpty, "no session has ended")
  }
}

struct ClockCorrectionStoreTests {
  @Test func wallTimesOfThisBootAreMovedAndEarlierOnesKept() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    var h = try recordRide(into: store, seconds: 10)
    let before = try store.points(sessionID: 1)
    let eventsBefore = try store.events(sessionID: 1)
    // Later points, in another boot (epoch) of the service.
    let otherBoot = ClockStamp(epoch: "second-boot", moment: h.now, wallTrusted: false)
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    func battery(_ level: Double, at moment: Moment) -> EngineCommand {
      .recordBatterySample(
        sessionID: 1, BatterySample(BatteryReading(supply: "BAT0", level: level, status: .discharging), at: moment))
    }
    try store.write([battery(80, at: Moment(monotonic: 5, wall: 1005))], clock: testClock)
    h.commands.removeAll()
    h.ride(seconds: 5, speed: 6, from: &position)
    try store.write(
      h.commands + [
        battery(79, at: Moment(monotonic: 5, wall: 2005)),
        .correctWallTimes(sessionID: 1, seconds: 60, firstPoint: 10, firstLap: 1),
      ], clock: otherBoot)
    let after = try store.points(sessionID: 1)
    #expect(after.prefix(10).map(\.wall) == before.map(\.wall), "points of the earlier boot keep their times")
    #expect(zip(after.dropFirst(10), h.points).allSatisfy { $0.wall == $1.moment.wall + 60 })
    #expect(try store.events(sessionID: 1).prefix(eventsBefore.count).map(\.wall) == eventsBefore.map(\.wall))
    // The same monotonic second in two boots is two samples; only this boot's moves.
    let samples = try store.batterySamples(sessionID: 1)
    #expect(samples.map(\.wall) == [1005, 2065], "\(samples)")
  }
}

/// The export ledger knows what each file was made from: a file made before a later event of
/// its session (the ride's end after an export mid-ride, an RPE after the ride) is stale.
struct ExportLedgerStalenessTests {
  @Test func aLaterEventMakesAFileStaleAndACopyOfItToo() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    _ = try recordRide(into: store, seconds: 20, stop: true)
    let latest = try store.latestEventID(sessionID: 1)
    #expect(latest > 0)
    #expect(try store.sessionIDsNotExported(format: "fit", destination: "/x") == [1])
    func record(_ destination: String, madeFrom: Int64?) throws {
      try store.recordExport(
        ExportRecord(
          sessionID: 1, format: "fit", destination: destination, name: "a.fit", bytes: 1, points: 20, writtenWall: 0,
          sourceEventID: madeFrom))
    }
    try record("/x", madeFrom: latest)
    try record("usb:1", madeFrom: latest)
    #expect(try store.sessionIDsNotExported(format: "fit", destination: "/x").isEmpty)
    #expect(try store.exportsNotCopied(from: "/x", to: "usb:1").isEmpty)

    // An RPE from the phone after the ride.
    let note = SessionEvent(
      kind: .annotation, moment: Moment(monotonic: 100, wall: 100), cause: "rpe", detail: "RPE 7", value: 7)
    _ = try store.addEvent(EventRecord(sessionID: 1, event: note, epoch: "test"))
    #expect(try store.latestEventID(sessionID: 1) > latest)
    #expect(try store.sessionIDsNotExported(format: "fit", destination: "/x") == [1], "the file is stale")
    // Made again: current, and the stick's copy is now behind it.
    try record("/x", madeFrom: try store.latestEventID(sessionID: 1))
    #expect(try store.sessionIDsNotExported(format: "fit", destination: "/x").isEmpty)
    #expect(try store.exportsNotCopied(from: "/x", to: "usb:1").map(\.sessionID) == [1])
    // A row of an earlier release (made from no one knows what) counts as current.
    try record("/old", madeFrom: nil)
    #expect(try store.sessionIDsNotExported(format: "fit", destination: "/old").isEmpty)
  }
}
