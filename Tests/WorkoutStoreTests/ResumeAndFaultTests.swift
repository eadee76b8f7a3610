import Foundation
import GRDB
import Testing
import WorkoutTestSupport

@testable import WorkoutCore
@testable import WorkoutStore

let upgradeFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .appendingPathComponent("Fixtures/upgrade").path

/// A copy of an upgrade fixture (a mid-ride database written by an earlier release) and what
/// its session row said when it was made: state, points, distance, timer, elapsed.
func upgradeFixture(
  _ name: String, into dir: TemporaryDirectory
) throws -> (
  state: String, points: Int, distance: Double, timer: Double, elapsed: Double
) {
  try FileManager.default.copyItem(atPath: "\(upgradeFixtures)/\(name).db", toPath: dir.database)
  let fields = try String(contentsOfFile: "\(upgradeFixtures)/\(name).expected", encoding: .utf8)
    .split(separator: " ").map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }
  return (fields[0], Int(fields[1])!, Double(fields[2])!, Double(fields[3])!, Double(fields[4])!)
}

func resumable(_ store: WorkoutStore) throws -> ResumableSession {
  let unfinished = try store.unfinishedSessions()
  guard unfinished.count == 1, case .resumable(let session) = unfinished[0] else {
    throw StoreTestFailure("expected one resumable session, got \(unfinished)")
  }
  return session
}

struct StoreTestFailure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Copies the database files as a crash would leave them: the WAL with what was committed.
func crashCopy(of dir: TemporaryDirectory, to other: TemporaryDirectory) throws {
  for suffix in ["", "-wal"] {
    try FileManager.default.copyItem(atPath: dir.database + suffix, toPath: other.database + suffix)
  }
}

func sha256(_ path: String) throws -> String {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
  process.arguments = [path]
  let pipe = Pipe()
  process.standardOutput = pipe
  try process.run()
  let data = pipe.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return String(decoding: data, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
}

struct UpgradeTests {
  /// What the release before this one wrote mid-ride resumes with its distance, timer and
  /// state, from its own checkpoint (format 1 is still this binary's).
  @Test(arguments: ["running-v3", "paused-v3"])
  func aMidRideDatabaseOfTheLastReleaseResumes(_ name: String) throws {
    let dir = TemporaryDirectory()
    let expected = try upgradeFixture(name, into: dir)
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let resumed = try resumable(store)
    #expect(resumed.basis == .checkpoint)
    #expect(resumed.session.state.rawValue == expected.state)
    let totals = resumed.session.builder.totals
    #expect(abs(totals.distance - expected.distance) < 1e-6)
    #expect(abs(totals.timer - expected.timer) < 1e-6)
    #expect(abs(totals.elapsed - expected.elapsed) < 1e-6)
    #expect(resumed.session.builder.pointCount == expected.points)
    #expect(try store.pointCount(sessionID: 1) == expected.points)
    #expect(try store.session(id: 1)?.snapshotVersion == 1)
  }

  /// Each way a checkpoint can be unreadable: the session is rebuilt from its events and
  /// points, in the state its log says, with the distance and timer of its last point.
  @Test(arguments: [
    ("garbage", "UPDATE session SET snapshot = 'garbage'"),
    ("empty", "UPDATE session SET snapshot = ''"),
    ("key deleted", "UPDATE session SET snapshot = json_remove(snapshot, '$.builder')"),
    ("type changed", "UPDATE session SET snapshot = json_set(snapshot, '$.builder.totals', 7)"),
    ("nested key deleted", "UPDATE session SET snapshot = json_remove(snapshot, '$.machine.state')"),
    ("unknown format", "UPDATE session SET snapshot_version = 999"),
    ("another session's", "UPDATE session SET snapshot = json_set(snapshot, '$.id', 42)"),
  ])
  func anUnreadableCheckpointIsRebuiltFromEventsAndPoints(_ variant: (String, String)) throws {
    for name in ["running-v3", "paused-v3"] {
      let dir = TemporaryDirectory()
      let expected = try upgradeFixture(name, into: dir)
      do {
        let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
        _ = store  // migrated to v4 (snapshot_version)
      }
      let db = try DatabaseQueue(path: dir.database)
      try db.write { try $0.execute(sql: variant.1) }
      try db.close()

      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      let resumed = try resumable(store)
      guard case .rebuilt(let reason) = resumed.basis else {
        Issue.record("\(variant.0): expected a rebuild, got \(resumed.basis)")
        continue
      }
      #expect(!reason.isEmpty)
      let session = resumed.session
      #expect(session.id == 1)
      #expect(session.state.rawValue == expected.state, "\(variant.0)")
      let last = try #require(try store.points(sessionID: 1).last)
      #expect(session.builder.pointCount == expected.points)
      #expect(session.builder.totals.distance == last.distance)
      #expect(session.builder.totals.timer == last.timer)
      #expect(session.builder.totals.elapsed == last.elapsed)
      #expect(abs(session.builder.totals.distance - expected.distance) < 1e-6)
      #expect(session.builder.startMoment != nil)
      #expect(resumed.lastPoint?.sequence == expected.points - 1)
      #expect((session.builder.totals.heartRate.count, session.builder.totals.speed.count) != (0, 0))
    }
  }

  /// Text where the event log's times are numbers (a damaged record's type byte): GRDB's
  /// subscript would stop the service at every start. The session is rebuilt, in the state of
  /// its row; its start is its first point's second.
  @Test func eventTimesThatAreNotNumbersStillResume() throws {
    let dir = TemporaryDirectory()
    let expected = try upgradeFixture("running-v3", into: dir)
    do { _ = try WorkoutStore.open(at: dir.database, wallNow: 0) }
    let db = try DatabaseQueue(path: dir.database)
    try db.write {
      try $0.execute(sql: "UPDATE session SET snapshot = 'x'")
      try $0.execute(sql: "UPDATE event SET wall = 'zz', monotonic = 'zz'")
      // And a number where the log's states are names: the session row's state stands.
      try $0.execute(sql: "UPDATE event SET to_state = 42 WHERE kind = 'transition'")
    }
    try db.close()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let resumed = try resumable(store)
    guard case .rebuilt = resumed.basis else {
      Issue.record("expected a rebuild, got \(resumed.basis)")
      return
    }
    #expect(resumed.session.state.rawValue == expected.state)
    #expect(abs(resumed.session.builder.totals.distance - expected.distance) < 1e-6)
    let first = try #require(try store.points(sessionID: 1).first)
    #expect(resumed.session.builder.startMoment?.wall == first.wall)
  }

  @Test func aSessionWhoseStateIsUnknownIsClosedWithItsDataKept() throws {
    let dir = TemporaryDirectory()
    _ = try upgradeFixture("running-v3", into: dir)
    do { _ = try WorkoutStore.open(at: dir.database, wallNow: 0) }
    let db = try DatabaseQueue(path: dir.database)
    try db.write {
      try $0.execute(sql: "UPDATE session SET snapshot = 'x', state = 'hovering', activity = 'levitation'")
      try $0.execute(sql: "UPDATE event SET to_state = 'hovering' WHERE kind = 'transition'")
    }
    try db.close()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let unfinished = try store.unfinishedSessions()
    guard case .unresumable(let id, let state, let reason)? = unfinished.first else {
      Issue.record("expected an unresumable session, got \(unfinished)")
      return
    }
    #expect(id == 1)
    try store.closeUnresumable(sessionID: id, state: state, reason: reason, clock: testClock)
    #expect(try store.unfinishedSessions().isEmpty)
    #expect(try store.pointCount(sessionID: 1) == 590, "its points are kept")
    let abandoned = try #require(try store.events(sessionID: 1).last)
    #expect(abandoned.kind == "abandoned")
    #expect(abandoned.detail == reason)
  }
}

struct CheckpointTests {
  /// A second writes its point; the session row and its checkpoint only every
  /// `checkpointInterval` points. A crash between checkpoints loses nothing: the points after
  /// the checkpoint are folded back in.
  @Test func pointsBetweenCheckpointsAreFoldedBackInAfterACrash() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let interval = SessionEngine.checkpointInterval
    let h = try recordRide(into: store, seconds: interval * 5 / 2)
    let live = try #require(h.engine.session)
    let row = try #require(try store.session(id: 1))
    #expect(row.points == 2 * interval, "the checkpoint of the second interval's last point is the last")
    #expect(try store.pointCount(sessionID: 1) == live.builder.pointCount)

    let resumed = try resumable(store)
    #expect(resumed.basis == .checkpoint)
    let totals = resumed.session.builder.totals
    #expect(resumed.session.builder.pointCount == live.builder.pointCount)
    #expect(totals.distance == live.builder.totals.distance)
    #expect(totals.timer == live.builder.totals.timer)
    #expect(totals.elapsed == live.builder.totals.elapsed)
    #expect(totals.speed == live.builder.totals.speed)
    #expect(totals.heartRate == live.builder.totals.heartRate)
    #expect(resumed.session.builder.lapTotals.timer == live.builder.lapTotals.timer)
    // The last committed second is the last point, not the older checkpoint.
    #expect(resumed.lastCommit.moment == h.engine.lastPoint?.moment)
  }

  /// The rebuild without any checkpoint gives what the live builder had, laps included.
  @Test func aRebuildFromPointsAloneMatchesTheLiveSession() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    var h = try recordRide(into: store, seconds: 70)
    var written = h.commands.count
    _ = h.press(.lap)
    var position = GeoPoint(latitude: 46.06, longitude: 14.5)
    h.ride(seconds: 45, speed: 7, heartRate: 160, from: &position)
    try store.write(Array(h.commands[written...]), clock: testClock)
    written = h.commands.count
    let live = try #require(h.engine.session)
    let db = try DatabaseQueue(path: dir.database)
    try db.write { try $0.execute(sql: "UPDATE session SET snapshot = 'lost'") }
    try db.close()

    let resumed = try resumable(store)
    let builder = resumed.session.builder
    #expect(builder.lapNumber == 2)
    #expect(builder.pointCount == live.builder.pointCount)
    #expect(builder.totals.distance == live.builder.totals.distance)
    #expect(builder.totals.timer == live.builder.totals.timer)
    #expect(builder.totals.speed.count == live.builder.totals.speed.count)
    #expect(builder.totals.heartRate.maximum == live.builder.totals.heartRate.maximum)
    #expect(abs(builder.lapTotals.timer - live.builder.lapTotals.timer) < 1e-6)
    #expect(abs(builder.lapTotals.distance - live.builder.lapTotals.distance) < 1e-6)
    #expect(builder.lapTotals.heartRate.count == live.builder.lapTotals.heartRate.count)
    #expect(builder.startMoment == live.builder.startMoment)
  }

  /// Rebuilt from its points, a session with zones counts its time in zone (the workout's and
  /// the open lap's) and its training metrics over all its points, as the live one had them.
  @Test func aRebuildFromPointsKeepsTheTimeInZoneAndTheMetrics() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    var settings = EngineSettings(countdown: 0)
    settings.zones = [
      try ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175]),
      try SystemZones.power(ftp: 250),
    ]
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 46.06, longitude: 14.5)
    for second in 0..<200 {
      if second == 90 { _ = h.press(.lap) }
      if second == 100 { _ = h.send(.targetZone(.heartRate, try TargetZone(parsing: "2-3", quantity: .heartRate))) }
      if second == 110 { _ = h.send(.targetZone(.cyclingPower, try TargetZone(parsing: "4", quantity: .cyclingPower))) }
      if second == 120 { _ = h.send(.targetZone(.cyclingPower, nil)) }
      h.advance(by: 1)
      position = position.moved(eastBy: 7)
      h.send(
        .reading(
          .gps(
            GPSFix(
              dimension: .threeD, latitude: position.latitude, longitude: position.longitude, altitude: 300,
              speed: 7, horizontalError: 3))))
      h.send(.reading(.heartRate(bpm: second < 120 ? 130 : 165)))
      h.send(.reading(.power(watts: 150 + second)))
      h.send(.tick)
    }
    try store.write(h.commands, clock: testClock)
    let live = try #require(h.engine.session)
    let db = try DatabaseQueue(path: dir.database)
    try db.write { try $0.execute(sql: "UPDATE session SET snapshot = 'lost'") }
    try db.close()

    let resumed = try resumable(store)
    #expect(resumed.basis != .checkpoint)
    let trackers = try #require(resumed.session.builder.zoneTrackers)
    let liveTrackers = try #require(live.builder.zoneTrackers)
    #expect(trackers.map(\.configuration) == liveTrackers.map(\.configuration))
    for (rebuilt, original) in zip(trackers, liveTrackers) {
      for (a, b) in zip(rebuilt.workout.seconds, original.workout.seconds) { #expect(abs(a - b) <= 1) }
      for (a, b) in zip(rebuilt.lap.seconds, original.lap.seconds) { #expect(abs(a - b) <= 1) }
    }
    #expect(abs(trackers[0].lap.total - 110) <= 1, "the open lap's zone times start at the lap")
    let np = try #require(resumed.session.builder.metrics?.normalizedPower)
    let liveNP = try #require(live.builder.metrics?.normalizedPower)
    #expect(abs(np - liveNP) < 0.01)
    // Its target, from its events: the heart-rate one set, the power one set and cleared.
    #expect(resumed.session.targetZones?.map(\.text) == ["2-3"])
    #expect(resumed.session.targetZones?.map(\.quantity) == [.heartRate])

    // Resumed, it announces no zones again (they are the session's own).
    let (_, commands) = SessionEngine.resuming(
      resumed.session, settings: settings, nextSessionID: 2, gap: RecoveryGap(seconds: 5, basis: .monotonic),
      at: h.now.advanced(by: 5))
    #expect(
      !commands.contains {
        if case .recordEvent(_, let event) = $0 { return event.kind == .zoneConfiguration }
        return false
      })
  }
}

struct StartUpFaultTests {
  @Test func aNewerSchemaIsRefusedAndTheFileLeftAsItWas() throws {
    let dir = TemporaryDirectory()
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try recordRide(into: store, seconds: 5)
    }
    let db = try DatabaseQueue(path: dir.database)
    try db.write {
      try $0.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from a newer release')")
    }
    try db.close()
    let before = try sha256(dir.database)
    #expect {
      _ = try WorkoutStore.open(at: dir.database, wallNow: 0)
    } throws: { error in
      guard let error = error as? StoreError, case .newerSchema(let detail) = error else { return false }
      return error.needsOperator && detail.contains(dir.database) && detail.contains("fix:")
        && detail.contains("v99: from a newer release")
    }
    #expect(try sha256(dir.database) == before)
  }

  /// A crash leaves frames in the WAL: the open says so and asks for a full check, which is
  /// not done on the way to ready.
  @Test func anUncleanStopIsNoticedAndItsWALReplayed() throws {
    let dir = TemporaryDirectory()
    let crashed = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    try recordRide(into: store, seconds: 30)
    try crashCopy(of: dir, to: crashed)
    let (reopened, notices) = try WorkoutStore.open(at: crashed.database, wallNow: 0)
    #expect(notices.contains { if case .uncleanStop = $0 { true } else { false } })
    #expect(reopened.integrityCheckIsDue)
    #expect(try reopened.pointCount(sessionID: 1) == 30, "what was in the WAL is there")
    #expect(reopened.backgroundIntegrityCheck() == ["ok"])
  }

  @Test func aCleanStopRecentlyCheckedOpensWithoutACheck() throws {
    let dir = TemporaryDirectory()
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try recordRide(into: store, seconds: 5)
      #expect(store.backgroundIntegrityCheck() == ["ok"])
    }
    #expect(DatabaseFiles.size(of: dir.database + "-wal") == 0, "a clean close empties the WAL")
    let (store, notices) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    #expect(notices.isEmpty)
    #expect(!store.integrityCheckIsDue)
  }

  /// A WAL that cannot belong to its database is moved aside with it, bytes intact: SQLite
  /// would silently start the WAL afresh and lose the seconds in it.
  @Test(arguments: ["empty database", "garbage WAL", "wrong page size"])
  func aWALThatCannotBeMatchedIsMovedAsideWithItsDatabase(_ variant: String) throws {
    let dir = TemporaryDirectory()
    let crashed = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    try recordRide(into: store, seconds: 20)
    try crashCopy(of: dir, to: crashed)
    switch variant {
    case "empty database":
      try Data().write(to: URL(fileURLWithPath: crashed.database))
    case "garbage WAL":
      let size = DatabaseFiles.size(of: crashed.database + "-wal")!
      var generator = SeededRandom(seed: 7)
      let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
      try Data(bytes).write(to: URL(fileURLWithPath: crashed.database + "-wal"))
    default:
      // The header's page size says 1024: recompute its checksum so only the size is wrong.
      let handle = try FileHandle(forUpdating: URL(fileURLWithPath: crashed.database + "-wal"))
      var header = [UInt8](try handle.read(upToCount: 32)!)
      header[8...11] = [0, 0, 4, 0]
      let (s0, s1) = DatabaseFiles.walChecksum(Array(header[0..<24]), bigEndian: header[3] & 1 == 1)
      for (index, word) in [s0, s1].enumerated() {
        for byte in 0..<4 { header[24 + index * 4 + byte] = UInt8(truncatingIfNeeded: word >> (24 - 8 * byte)) }
      }
      try handle.seek(toOffset: 0)
      try handle.write(contentsOf: Data(header))
      try handle.close()
    }
    let walBefore = try sha256(crashed.database + "-wal")
    let (fresh, notices) = try WorkoutStore.open(at: crashed.database, wallNow: 1_795_323_600)
    guard case .movedAside(_, let movedTo, let reason)? = notices.first else {
      Issue.record("\(variant): expected the files to be moved aside, got \(notices)")
      return
    }
    #expect(reason.contains("WAL"), "\(reason)")
    let movedWAL = try #require(movedTo.first { $0.hasSuffix("-wal") })
    #expect(try sha256(movedWAL) == walBefore, "the WAL is kept as it was")
    #expect(movedTo.first == crashed.database + ".corrupt-20261122T050000Z")
    #expect(try fresh.maxSessionID() == 0)
  }

  /// Damage a clean stop cannot reveal is found by the background check, which marks the
  /// database; the next start checks it again and moves it aside.
  @Test func damageFoundInTheBackgroundMovesTheDatabaseAsideAtTheNextStart() throws {
    let dir = TemporaryDirectory()
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try recordRide(into: store, seconds: 600)
    }
    // Scribble over point pages near the end of the file, away from the schema's pages at the
    // start (damage there is found on opening already).
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: dir.database))
    let size = try handle.seekToEnd()
    let page = UInt64(WorkoutStore.newDatabasePageSize)
    #expect(size > page * 20)
    try handle.seek(toOffset: size - page * 8)
    try handle.write(contentsOf: Data(repeating: 0xA5, count: Int(page) * 6))
    try handle.close()

    do {
      let (store, notices) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      #expect(!notices.contains { if case .movedAside = $0 { true } else { false } }, "no full check on the way")
      #expect(store.backgroundIntegrityCheck() != ["ok"])
    }
    #expect(FileManager.default.fileExists(atPath: dir.database + ".check-failed"))
    let (fresh, notices) = try WorkoutStore.open(at: dir.database, wallNow: 1_795_323_600)
    #expect(notices.contains { if case .movedAside = $0 { true } else { false } }, "\(notices)")
    #expect(try fresh.maxSessionID() == 0)
    #expect(!FileManager.default.fileExists(atPath: dir.database + ".check-failed"))
  }

  /// The WAL made full size with zeros before the ride: commits go into it without growing
  /// it (so without changing its metadata), a crash in the middle replays exactly what was
  /// committed (the zeros after the last frame are no frames), and asking again writes nothing.
  @Test func aPreallocatedWALTakesTheRideWithoutGrowingAndSurvivesACrash() throws {
    let dir = TemporaryDirectory()
    let crashed = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    try store.preallocateWAL()
    let wal = dir.database + "-wal"
    let size = try #require(DatabaseFiles.size(of: wal))
    #expect(size == 32 + WorkoutStore.walPreallocatedFrames * (WorkoutStore.newDatabasePageSize + 24))
    try recordRide(into: store, seconds: 120)
    #expect(DatabaseFiles.size(of: wal) == size, "no commit grew the WAL")
    try store.preallocateWAL()
    #expect(DatabaseFiles.size(of: wal) == size)
    try crashCopy(of: dir, to: crashed)
    let (reopened, notices) = try WorkoutStore.open(at: crashed.database, wallNow: 0)
    #expect(notices.contains { if case .uncleanStop = $0 { true } else { false } })
    #expect(try reopened.pointCount(sessionID: 1) == 120)
    #expect(reopened.backgroundIntegrityCheck() == ["ok"])
  }

  /// A database whose WAL SQLite truncated at its close (an earlier release's clean stop): the
  /// room is made with a header of no frame, which reads as an empty WAL before the first
  /// commit; SQLite writes its frames after it, and a crash mid-ride replays every one.
  @Test func roomMadeBesideATruncatedWALHasAHeaderOfNoFrameAndTakesTheRide() throws {
    let dir = TemporaryDirectory()
    let crashed = TemporaryDirectory()
    let early = TemporaryDirectory()
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try recordRide(into: store, seconds: 10)
    }
    #expect(DatabaseFiles.size(of: dir.database + "-wal") == 0)
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    try store.preallocateWAL()
    try crashCopy(of: dir, to: early)
    #expect(DatabaseFiles(path: early.database).walCondition() == .empty, "killed before the first commit")
    let (_, earlyNotices) = try WorkoutStore.open(at: early.database, wallNow: 0)
    #expect(earlyNotices.isEmpty, "\(earlyNotices)")
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { db in
      for seq in 10..<70 {
        try db.execute(
          sql:
            "INSERT INTO point (session_id, seq, wall, monotonic, elapsed, timer, distance) VALUES (1, ?, ?, ?, ?, ?, 0)",
          arguments: [seq, 1_700_000_000 + seq, seq, seq, seq])
      }
    }
    try crashCopy(of: dir, to: crashed)
    try queue.close()
    let (reopened, notices) = try WorkoutStore.open(at: crashed.database, wallNow: 0)
    #expect(notices.contains { if case .uncleanStop = $0 { true } else { false } }, "\(notices)")
    #expect(try reopened.pointCount(sessionID: 1) == 70)
    #expect(reopened.backgroundIntegrityCheck() == ["ok"])
  }

  /// A WAL of nothing but zeros is room whose header never reached the disk (a power cut as
  /// the start made it): an empty WAL, not one to move aside. Zeros for a header before
  /// bytes that are not zero are still a WAL that cannot be matched.
  @Test(arguments: [false, true])
  func aWALOfZerosIsEmptyButNotAZeroHeaderBeforeFrames(_ framesAfter: Bool) throws {
    let dir = TemporaryDirectory()
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try recordRide(into: store, seconds: 10)
    }
    #expect(DatabaseFiles.size(of: dir.database + "-wal") == 0, "a clean close empties the WAL")
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try store.preallocateWAL()
    }
    // The clean close above emptied it again: put back what a power cut while making the
    // room can leave.
    var bytes = [UInt8](repeating: 0, count: 32 + 1024 * 2072)
    if framesAfter { bytes[40] = 1 }
    try Data(bytes).write(to: URL(fileURLWithPath: dir.database + "-wal"))
    switch DatabaseFiles(path: dir.database).walCondition() {
    case .empty: #expect(!framesAfter)
    case .unmatched(let reason): #expect(framesAfter, "\(reason)")
    case .uncleanStop: Issue.record("zeros read as frames")
    }
    let (reopened, notices) = try WorkoutStore.open(at: dir.database, wallNow: 1_795_323_600)
    if framesAfter {
      #expect(notices.contains { if case .movedAside = $0 { true } else { false } }, "\(notices)")
    } else {
      #expect(notices.isEmpty, "\(notices)")
      #expect(try reopened.pointCount(sessionID: 1) == 10)
    }
  }

  /// A clean stop keeps the WAL at its size, its frames all in the database and its header
  /// zero: the next start finds a clean stop, every point, and no room to make again. With a
  /// reader still in the WAL at the stop, nothing is zeroed: SQLite closes as it would, and
  /// what the WAL holds is replayed at the next start.
  @Test(arguments: [false, true])
  func aCleanStopKeepsTheWALAtItsSizeUnlessAReaderHoldsIt(_ readerHolds: Bool) throws {
    let dir = TemporaryDirectory()
    let wal = dir.database + "-wal"
    let size: Int
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try store.preallocateWAL()
      size = try #require(DatabaseFiles.size(of: wal))
      try recordRide(into: store, seconds: 40)
      var readOnly = Configuration()
      readOnly.readonly = true
      let reader = try DatabaseQueue(path: dir.database, configuration: readOnly)
      if readerHolds {
        try reader.read { db in
          _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM point")
          let outcome = store.closeKeepingWAL()
          #expect(outcome.contains("left to SQLite"), "\(outcome)")
          #expect(!outcome.contains("could not close"), "\(outcome)")
        }
      } else {
        let outcome = store.closeKeepingWAL()
        #expect(outcome.contains("kept at \(size) bytes"), "\(outcome)")
        #expect(!outcome.contains("could not close"), "the held point insert finalized first: \(outcome)")
      }
      try reader.close()
    }
    if readerHolds {
      // The reader was the last to close, and a reader cannot checkpoint: the frames wait in
      // the WAL for the next start, which replays them (as after any stop another process
      // outlived).
      #expect(DatabaseFiles(path: dir.database).walCondition() != .empty)
    } else {
      #expect(DatabaseFiles.size(of: wal) == size)
      #expect(DatabaseFiles(path: dir.database).walCondition() == .empty, "a header of no frame")
    }
    let (store, notices) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    #expect(notices.isEmpty == !readerHolds, "\(notices)")
    #expect(try store.pointCount(sessionID: 1) == 40)
    try store.preallocateWAL()
    #expect(DatabaseFiles.size(of: wal) == size)
    #expect(store.backgroundIntegrityCheck() == ["ok"])
  }

  @Test func theWALKeepsItsSizeBetweenCheckpoints() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let limit = try store.pragma("journal_size_limit")
    #expect(limit == WorkoutStore.walSizeLimit)
    #expect(try store.pragma("wal_autocheckpoint") == 1000)
    #expect(try store.pragma("page_size") == WorkoutStore.newDatabasePageSize, "a new database's pages")
    // The page cache is bounded explicitly (negative: KiB).
    #expect(try store.pragma("cache_size") == -WorkoutStore.serviceCacheKiB)
  }
}

struct MultisportResumeTests {
  /// A run, then a ride (the plan's second activity), written as the service writes it.
  func recordRunThenRide(into store: WorkoutStore) throws -> EngineHarness {
    var h = EngineHarness.multisport([.running, .cycling])
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    h.ride(seconds: 30, speed: 3, heartRate: 140, from: &position)
    #expect(h.send(.nextActivity(nil, .control)).outcome == .accepted(.running))
    h.ride(seconds: 20, speed: 8, heartRate: 150, from: &position)
    try store.write(h.commands, clock: testClock)
    return h
  }

  /// Rebuilt from its record (the checkpoint unreadable), a multisport session goes on in the
  /// activity it was in, numbered as it was, with that activity's own figures. The number is the
  /// activity event's value; one this binary cannot read (damaged, or another build's) is not
  /// a trap at start-up: the activity events are counted instead.
  @Test(arguments: [
    ("as written", nil), ("NULL", "NULL"), ("absurd", "1e300"), ("infinite", "9e999"), ("not a number", "'two'"),
    ("a fraction", "2.5"),
  ])
  func aMultisportSessionResumesInItsActivity(_ variant: (String, String?)) throws {
    let dir = TemporaryDirectory()
    let live: ActiveSession
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      live = try #require(try recordRunThenRide(into: store).engine.session)
    }
    let db = try DatabaseQueue(path: dir.database)
    try db.write {
      try $0.execute(sql: "UPDATE session SET snapshot = 'garbage'")
      if let value = variant.1 { try $0.execute(sql: "UPDATE event SET value = \(value) WHERE kind = 'activity'") }
    }
    try db.close()

    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let resumed = try resumable(store)
    guard case .rebuilt = resumed.basis else {
      Issue.record("\(variant.0): expected a rebuild, got \(resumed.basis)")
      return
    }
    let session = resumed.session
    #expect(session.currentActivity == .cycling, "\(variant.0)")
    #expect(session.activityNumber == 2, "\(variant.0)")
    let start = try #require(session.activityStart, "\(variant.0)")
    let liveStart = try #require(live.activityStart)
    #expect(start.distance == liveStart.distance && start.timer == liveStart.timer, "\(variant.0)")
    #expect(session.builder.totals.distance == live.builder.totals.distance)
  }
}

struct DamagedRowTests {
  /// NULLs where the schema says NOT NULL, in the session row, a point, an event and a lap:
  /// the service started with nothing to resume, the session neither resumed nor closed, and
  /// its exports and `show` failed. Rebuilt (its checkpoint unreadable too), it resumes in the
  /// state its event log says, without the points and lap it cannot place, which are counted.
  @Test func nullsWhereTheSchemaSaysNotNullStillResume() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    var h = try recordRide(into: store, seconds: 10)
    var written = h.commands.count
    func flush() throws {
      try store.write(Array(h.commands[written...]), clock: testClock)
      written = h.commands.count
    }
    var position = GeoPoint(latitude: 46.06, longitude: 14.5)
    for _ in 0..<2 {
      _ = h.press(.lap)
      try flush()
      for _ in 0..<10 {
        h.ride(seconds: 1, speed: 6, heartRate: 150, from: &position)
        try flush()
      }
    }
    let before = try store.points(sessionID: 1)
    #expect(try store.laps(sessionID: 1).count == 2)
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { db in
      try allowNull(in: "session", ["state", "elapsed", "timer", "distance", "clock_monotonic", "uuid", "points"], db)
      try allowNull(in: "point", ["wall", "distance"], db)
      try allowNull(in: "event", ["wall"], db)
      try allowNull(in: "lap", ["start_wall"], db)
    }
    try queue.close()
    let damaging = try DatabaseQueue(path: dir.database)
    try damaging.write { db in
      try db.execute(
        sql: """
          UPDATE session SET snapshot = 'x', state = NULL, elapsed = NULL, timer = NULL, distance = NULL,
            clock_monotonic = NULL, uuid = NULL, points = NULL
          """)
      try db.execute(sql: "UPDATE point SET wall = NULL WHERE seq = 3")
      try db.execute(sql: "UPDATE point SET distance = NULL WHERE seq = (SELECT MAX(seq) FROM point)")
      try db.execute(sql: "UPDATE event SET wall = NULL WHERE id = (SELECT MIN(id) FROM event WHERE kind = 'lap')")
      try db.execute(sql: "UPDATE lap SET start_wall = NULL WHERE number = 1")
    }
    try damaging.close()

    let resumed = try resumable(store)
    guard case .rebuilt = resumed.basis else {
      Issue.record("expected a rebuild, got \(resumed.basis)")
      return
    }
    #expect(resumed.session.state == .running, "its event log says running")
    #expect(resumed.unreadable == UnreadableRows(points: 2, events: 1, laps: 1), "what the rebuild read")
    let readable = try store.points(sessionID: 1)
    let lastSeq = try #require(before.last?.seq)
    #expect(readable.map(\.seq) == before.map(\.seq).filter { $0 != 3 && $0 != lastSeq })
    // The next second comes after the unreadable last one, and does not replace its row.
    #expect(resumed.session.builder.pointCount == lastSeq + 1)
    #expect(resumed.lastPoint?.sequence == readable.last?.seq)
    #expect(resumed.session.builder.totals.distance == readable.last?.distance)
    #expect(try store.unreadableRows(sessionID: 1) == UnreadableRows(points: 2, events: 1, laps: 1))

    let record = try #require(try store.session(id: 1))
    #expect(record.state == "" && record.uuid == "" && record.points == 0 && record.clockMonotonic.isNaN)
    #expect(UnreadableRows(points: 2, events: 1).description == "2 points, 1 event")

    // Resumed and ridden on: the ride's record says what was left out (an event), and the
    // damaged rows stay as they were, beside the new seconds.
    let (engine, commands) = SessionEngine.resuming(
      resumed.session, settings: EngineSettings(), nextSessionID: 2, gap: RecoveryGap(seconds: 5, basis: .monotonic),
      at: h.now.advanced(by: 5), lastPoint: resumed.lastPoint, unreadable: resumed.unreadable)
    let damaged = commands.compactMap { command -> SessionEvent? in
      if case .recordEvent(_, let event) = command, event.kind == .damagedRecord { return event }
      return nil
    }
    #expect(damaged.map(\.detail) == ["2 points, 1 event, 1 lap"] && damaged.map(\.value) == [2])
    #expect(
      commands.contains {
        if case .log(.warning, let line) = $0 {
          return line.contains("left out of its figures: 2 points, 1 event, 1 lap")
        }
        return false
      })
    #expect(
      commands.contains {
        if case .chirp(.alarm) = $0 { return true }
        return false
      }, "the alarm sounds once")
    #expect(engine.status(at: h.now.advanced(by: 5)).unreadable == resumed.unreadable, "status shows it")
    h.engine = engine
    h.commands = commands
    h.now = h.now.advanced(by: 5)
    written = 0
    try flush()
    h.ride(seconds: 3, speed: 6, heartRate: 150, from: &position)
    try flush()
    #expect(try store.points(sessionID: 1).map(\.seq).suffix(3) == [lastSeq + 1, lastSeq + 2, lastSeq + 3])
    #expect(try store.unreadableRows(sessionID: 1) == UnreadableRows(points: 2, events: 1, laps: 1))
    #expect(
      try store.events(sessionID: 1).filter { $0.kind == "damagedRecord" }.map(\.detail) == ["2 points, 1 event, 1 lap"]
    )
    // Counted once: the resume's checkpoint is past them, so the next start finds none new.
    #expect(try resumable(store).unreadable == UnreadableRows())
    #expect(try store.laps(sessionID: 1).map(\.number) == [2])
    #expect(try store.events(sessionID: 1).filter { $0.kind == "lap" }.count == 1)
    // The resume's checkpoint writes the row's state, figures and clock again.
    let rewritten = try #require(try store.session(id: 1))
    #expect(rewritten.state == "running" && rewritten.clockMonotonic.isFinite && rewritten.points > 0)
  }

  /// An ended session whose row's state is NULL is found among the unfinished (its state is
  /// not "ended"); its event log says it ended: its row says so again, its summary, points and
  /// events kept as they were (no second closing event), never resumed.
  @Test func anEndedSessionWhoseStateIsNullStaysEnded() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    try recordRide(into: store, seconds: 5, stop: true)
    let summary = try #require(try store.session(id: 1)?.summary)
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { db in try allowNull(in: "session", ["state"], db) }
    try queue.close()
    let damaging = try DatabaseQueue(path: dir.database)
    try damaging.write { db in try db.execute(sql: "UPDATE session SET state = NULL") }
    try damaging.close()
    let events = try store.events(sessionID: 1)
    let unfinished = try store.unfinishedSessions()
    guard case .ended(let id)? = unfinished.first, unfinished.count == 1 else {
      Issue.record("expected one ended session, got \(unfinished)")
      return
    }
    try store.markEnded(sessionID: id)
    #expect(try store.unfinishedSessions().isEmpty)
    let record = try #require(try store.session(id: 1))
    #expect(record.state == "ended" && record.summary == summary)
    #expect(try store.pointCount(sessionID: 1) == 5)
    #expect(try store.events(sessionID: 1) == events)
  }

  /// The session row's figures and clock reading NULL, its checkpoint readable: it resumes from
  /// the checkpoint, with the checkpoint's figures; the time away is unknown.
  @Test func aSessionRowsNullsResumeFromItsCheckpoint() throws {
    let dir = TemporaryDirectory()
    let expected = try upgradeFixture("running-v3", into: dir)
    do { _ = try WorkoutStore.open(at: dir.database, wallNow: 0) }
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { db in
      try allowNull(in: "session", ["activity", "opened_wall", "distance", "clock_wall", "clock_epoch"], db)
    }
    try queue.close()
    let damaging = try DatabaseQueue(path: dir.database)
    try damaging.write { db in
      try db.execute(
        sql:
          "UPDATE session SET activity = NULL, opened_wall = NULL, distance = NULL, clock_wall = NULL, clock_epoch = NULL"
      )
    }
    try damaging.close()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let resumed = try resumable(store)
    #expect(resumed.basis == .checkpoint)
    #expect(resumed.session.state.rawValue == expected.state)
    #expect(abs(resumed.session.builder.totals.distance - expected.distance) < 1e-6)
    #expect(resumed.unreadable.isEmpty)
    #expect(RecoveryGap.between(resumed.lastCommit, and: testClock).seconds == nil)
  }
}
