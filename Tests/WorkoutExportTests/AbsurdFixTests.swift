import Foundation
import GRDB
import Testing
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

@testable import WorkoutExport

/// One report in a ride with an altitude or speed no receiver can measure (a glitch of the
/// receiver or of gpsd's report: finite, and far out of range).
@Suite("a ride with one absurd fix")
struct AbsurdFixTests {
  /// 30 s east at 8 m/s and 300 m, second 10's fix carrying `altitude` and `speed`; each fix
  /// goes through the fix filter first when `filtered` (as the gpsd source posts them).
  func ride(
    altitude: Double, speed: Double, filtered: Bool, into directory: ExportDirectory
  ) throws -> (
    WorkoutStore, EngineStatus
  ) {
    let (store, _) = try WorkoutStore.open(at: directory.path + "/workoutd.db", wallNow: 0)
    var h = EngineHarness()
    var filter = FixQualityFilter()
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 45.5, longitude: 7.25)
    for second in 0..<30 {
      h.advance(by: 1)
      position = position.moved(eastBy: 8)
      let glitch = second == 10
      let fix = GPSFix(
        dimension: .threeD, time: 1_700_000_000 + Double(second), latitude: position.latitude,
        longitude: position.longitude, altitude: glitch ? altitude : 300, speed: glitch ? speed : 8,
        horizontalError: 3)
      let posted = filtered ? try #require(filter.evaluate(fix).fix) : fix
      h.send(.reading(.gps(posted)))
      h.send(.tick)
    }
    let status = h.engine.status(at: h.now)
    _ = h.press(.stop)
    try store.write(h.commands, clock: FITActivityTests.clock)
    return (store, status)
  }

  /// Far out of range (the fix filter drops the figure), and within range but 500 m from the
  /// seconds around it (the fix filter keeps it; the ascent's spike gate leaves it out).
  static let glitches: [(Double, Double)] = [
    (1e300, 8), (-1e300, 8), (2e18, 8), (40_000, 8), (300, 1e300), (300, 1e17), (800, 8), (-200, 8),
  ]

  @Test("through the fix filter: the ride's climb and top speed are its own", arguments: glitches)
  func totalsStayTheRides(altitude: Double, speed: Double) throws {
    let directory = ExportDirectory()
    let (_, status) = try ride(altitude: altitude, speed: speed, filtered: true, into: directory)
    #expect(status.ascent == 0 && status.descent == 0, "\(status.ascent) m up, \(status.descent) m down")
    #expect(status.maxSpeed == 8)
    #expect(status.points == 30)
  }

  @Test(
    "stored as it came (a point written before the filter knew better): every format still exports every point",
    arguments: glitches)
  func everyFormatExports(altitude: Double, speed: Double) throws {
    let directory = ExportDirectory()
    let (store, _) = try ride(altitude: altitude, speed: speed, filtered: false, into: directory)
    let session = try #require(try store.session(id: 1))
    for format in ExportFormat.allCases {
      let written = try ExportFile.write(session, from: store, format: format, into: directory.path)
      #expect(written.points == 30, "\(format)")
    }
    let fit = try ExportFile.write(session, from: store, format: .fit, into: directory.path + "/")
    guard let decoded = try readWithReferenceDecoders(fit.path) else { return }
    #expect((decoded["errors"] as? [String])?.isEmpty == true, "\(decoded["errors"] ?? "")")
    #expect(decoded["records"] as? Int == 30)
  }
}

/// A stored ride with values no build writes: what a flipped bit in an SD card's page makes of
/// a REAL (SQLite checks a page's structure, not its values). Every format still exports
/// every point, valid, and the service does not trap at the ride's end.
@Suite("a ride whose record is damaged")
struct DamagedRecordExportTests {
  @Test(
    "times beyond any calendar, positions off the globe: written as year 0001/9999 or invalid, and no position",
    arguments: [Double.infinity, -1e300, 1e300])
  func everyFormatExportsValid(damage: Double) throws {
    let directory = ExportDirectory()
    let (store, _) = try AbsurdFixTests().ride(altitude: 300, speed: 8, filtered: true, into: directory)
    let queue = try DatabaseQueue(path: directory.path + "/workoutd.db")
    try queue.write { db in
      try db.execute(sql: "UPDATE point SET wall = ? WHERE seq = 10", arguments: [damage])
      try db.execute(sql: "UPDATE point SET lat = ? WHERE seq = 12", arguments: [damage])
      try db.execute(sql: "UPDATE point SET lon = 1000 WHERE seq = 14")
      try db.execute(sql: "UPDATE lap SET start_wall = ?, end_wall = ?", arguments: [damage, damage])
      try db.execute(
        sql: "UPDATE event SET wall = ? WHERE kind = 'transition' AND to_state = 'running'", arguments: [damage])
      try db.execute(sql: "UPDATE session SET start_wall = ?", arguments: [damage])
    }
    try queue.close()
    let session = try #require(try store.session(id: 1))
    var paths: [ExportFormat: String] = [:]
    for format in ExportFormat.allCases {
      let written = try ExportFile.write(session, from: store, format: format, into: directory.path)
      // GPX's track points are positions: the two off the globe are not among them.
      #expect(written.points == (format == .gpx ? 28 : 30), "\(format)")
      paths[format] = written.path
    }
    try Self.checkValid(paths, fitRecords: 30, in: directory)
    let text = try String(contentsOfFile: try #require(paths[.gpx]), encoding: .utf8)
    #expect(text.contains(damage > 0 ? "9999-12-31T23:59:59.999Z" : "0001-01-01T00:00:00Z"))
  }

  /// NULLs where the schema says NOT NULL and text where a number goes (a flipped type byte):
  /// the export failed with GRDB's error at every pass (a NULL), or wrote a second in 1970 at
  /// distance 0 (text read as 0). The points, lap and event that cannot be placed are left
  /// out, and said to be; the rest is exported, valid.
  @Test func rowsThatCannotBePlacedAreLeftOutAndCounted() throws {
    let directory = ExportDirectory()
    let (store, _) = try AbsurdFixTests().ride(altitude: 300, speed: 8, filtered: true, into: directory)
    let database = directory.path + "/workoutd.db"
    let queue = try DatabaseQueue(path: database)
    try queue.write { db in
      try allowNull(in: "session", ["state", "uuid", "distance"], db)
      try allowNull(in: "point", ["wall"], db)
      try allowNull(in: "event", ["monotonic"], db)
      try allowNull(in: "lap", ["end_wall"], db)
    }
    try queue.close()
    let damaging = try DatabaseQueue(path: database)
    try damaging.write { db in
      try db.execute(sql: "UPDATE point SET wall = NULL WHERE seq = 10")
      try db.execute(sql: "UPDATE point SET distance = 'zz' WHERE seq = 12")
      try db.execute(sql: "UPDATE lap SET end_wall = NULL")
      try db.execute(sql: "UPDATE event SET monotonic = NULL WHERE kind = 'transition' AND to_state = 'stopped'")
      try db.execute(sql: "UPDATE session SET state = NULL, uuid = NULL, distance = NULL")
    }
    try damaging.close()
    let laps = try store.laps(sessionID: 1)
    #expect(laps.isEmpty)
    let session = try #require(try store.session(id: 1))
    var paths: [ExportFormat: String] = [:]
    for format in ExportFormat.allCases {
      let written = try ExportFile.write(session, from: store, format: format, into: directory.path)
      #expect(written.points == 28, "\(format)")
      #expect(written.unreadable == UnreadableRows(points: 2, events: 1, laps: 1))
      #expect(written.counts.hasSuffix("; left out as unreadable: 2 points, 1 event, 1 lap)"))
      #expect(written.name.hasSuffix("Z-1.\(format.fileExtension)"), "no UUID: the session's number names it")
      paths[format] = written.path
    }
    try Self.checkValid(paths, fitRecords: 28, in: directory)
    // The four from one reading of the session (`ExportFile.Source`, as the service's exporter
    // writes them): the same files, the same count.
    let source = try ExportFile.Source.load(session, from: store)
    #expect(source.unreadable == UnreadableRows(points: 2, events: 1, laps: 1))
    let again = directory.path + "/again"
    try FileManager.default.createDirectory(atPath: again, withIntermediateDirectories: true)
    for format in ExportFormat.allCases {
      let written = try ExportFile.write(source, from: store, format: format, into: again)
      #expect(written.unreadable == source.unreadable)
      let first = try #require(paths[format])
      #expect(FileManager.default.contents(atPath: written.path) == FileManager.default.contents(atPath: first))
    }
  }

  /// The GPX and TCX files pass their schemas (xmllint); the FIT file decodes without errors with
  /// `fitRecords` records (Garmin's FIT SDK and fitdecode, when installed).
  static func checkValid(_ paths: [ExportFormat: String], fitRecords: Int, in directory: ExportDirectory) throws {
    let gpx = try validate(
      try #require(paths[.gpx]), schema: "gpx11-trackpointextension1.xsd",
      needs: ["Topografix_gpx11.xsd", "TrackPointExtensionv1.xsd"], in: directory)
    #expect(gpx.status == 0, "\(gpx.errors)")
    let tcx = try validate(
      try #require(paths[.tcx]), schema: "tcx2-activityextension2.xsd",
      needs: TCXTests.schemas, in: directory)
    #expect(tcx.status == 0, "\(tcx.errors)")
    guard let decoded = try readWithReferenceDecoders(try #require(paths[.fit])) else { return }
    #expect((decoded["errors"] as? [String])?.isEmpty == true, "\(decoded["errors"] ?? "")")
    #expect(decoded["records"] as? Int == fitRecords)
  }
}
