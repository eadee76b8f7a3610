import Foundation
import GRDB
import LinuxSupport
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

/// `workoutctl` prints what a service or a database gives it, and neither is always this
/// build's: a ride stored before the fix filter dropped absurd altitudes (session 24) holds an
/// ascent of 2e299 m, and a status can come from another release. No figure makes it trap.
struct AbsurdFiguresCLITests {
  /// 20 s east at 6 m/s and 150 bpm, second 8's fix carrying 1e300 m and 1e300 m/s, posted
  /// unfiltered (as the gpsd source did before it checked altitude and speed).
  func recordGlitchedRide() -> EngineHarness {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    h.ride(seconds: 20, speed: 6, heartRate: 150, from: &position) { second, fix in
      if second == 8 {
        fix.altitude = 1e300
        fix.speed = 1e300
      }
    }
    return h
  }

  @Test func showAndSessionsPrintAStoredRideWithAnAbsurdAscent() throws {
    var h = recordGlitchedRide()
    // This build's ascent leaves the spike out (no rider climbs 1e300 m in a second)...
    #expect(h.engine.status(at: h.now).ascent == 0)
    _ = h.press(.stop)
    let dir = ServiceDirectory()
    try dir.record(h.commands)
    // ...so the ride is given the figure an older build stored for it (one before the fix
    // filter took the spike's fifth: 2e299 m).
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { db in
      let summary = try #require(try String.fetchOne(db, sql: "SELECT summary FROM session WHERE id = 1"))
      #expect(summary.contains("\"ascent\":0"))
      try db.execute(
        sql: "UPDATE session SET ascent = 2e299, summary = ?",
        arguments: [summary.replacingOccurrences(of: "\"ascent\":0", with: "\"ascent\":2e299")])
      try db.execute(sql: "UPDATE lap SET ascent = 2e299")
    }
    try queue.close()
    let show = try dir.workoutctl(["show", "1"])
    #expect(show.status == 0, "\(show.output)")
    #expect(show.output.contains("ascent 2"), "\(show.output)")
    #expect(show.output.contains("e+299 m"), "written whole, not as an Int: \(show.output)")
    #expect(show.output.contains("heart rate avg 150, max 150"), "\(show.output)")
    for arguments in [["sessions"], ["sessions", "--json"], ["show", "1", "--json"]] {
      let listed = try dir.workoutctl(arguments)
      #expect(listed.status == 0, "\(arguments): \(listed.output)")
    }
  }

  @Test func statusPrintsAServicesAbsurdFigures() throws {
    let h = recordGlitchedRide()
    var engine = h.engine.status(at: h.now)
    engine.timer = 1e300
    engine.ascent = 2e299
    // The control socket's JSON carries a non-finite figure as a string ("inf"), read back as it.
    engine.descent = .infinity
    engine.averageHeartRate = .nan
    let dir = ServiceDirectory()
    let server = try dir.answeringStatus(engine)
    defer { server.shutDown() }

    let status = try dir.workoutctl(["status"])
    #expect(status.status == 0, "\(status.output)")
    #expect(status.output.contains("timer 1e+300 s"), "\(status.output)")
    #expect(status.output.contains("e+299 m, descent inf m"), "\(status.output)")
    #expect(status.output.contains("(avg nan, max 150)"), "\(status.output)")
    let brief = try dir.workoutctl(["status", "--brief"])
    #expect(brief.status == 0, "\(brief.output)")
  }
}

/// `workoutctl status` prints a zone line for what the ride measures: a ride with power zones
/// configured and no power meter gets no "power zone -- of 6".
struct StatusZoneLinesTests {
  @Test func aQuantityWithNoReadingHasNoZoneLine() throws {
    var settings = EngineSettings(countdown: 0, autoPause: .some(nil))
    settings.zones = [try SystemZones.heartRate(age: 40, resting: 60), try SystemZones.power(ftp: 250)]
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    h.ride(seconds: 20, speed: 6, heartRate: 150, from: &position)
    let engine = h.engine.status(at: h.now)
    #expect(engine.zones?.map(\.quantity) == [.heartRate, .cyclingPower], "both tracked")
    let dir = ServiceDirectory()
    let server = try dir.answeringStatus(engine)
    defer { server.shutDown() }
    let status = try dir.workoutctl(["status"])
    #expect(status.status == 0, "\(status.output)")
    #expect(status.output.contains("heart-rate zone "), "\(status.output)")
    #expect(!status.output.contains("power zone"), "\(status.output)")
  }
}

/// A session this binary cannot put back together — its activity a newer release's (a
/// downgrade), its checkpoint unreadable — and with no summary yet: `sessions` and `show` read
/// its figures from its row and points. It was an error that hid every other session.
struct UnrebuildableSessionCLITests {
  @Test func aNewerReleasesActivityIsListedAndShownBesideTheOthers() throws {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    h.ride(seconds: 30, speed: 5, heartRate: 140, from: &position)
    _ = h.press(.stop)
    _ = h.press(.start)
    h.finishCountdown()
    h.ride(seconds: 20, speed: 4, heartRate: 120, from: &position)
    let dir = ServiceDirectory()
    try dir.record(h.commands)
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { try $0.execute(sql: "UPDATE session SET activity = 'rowing', snapshot = 'x' WHERE id = 2") }
    try queue.close()

    let list = try dir.workoutctl(["sessions"])
    #expect(list.status == 0, "\(list.output)")
    #expect(list.output.contains("rowing") && list.output.contains("0:00:20"), "\(list.output)")
    #expect(list.output.split(separator: "\n").count == 3, "a header and both sessions: \(list.output)")
    let show = try dir.workoutctl(["show", "2"])
    #expect(show.status == 0, "\(show.output)")
    #expect(show.output.contains("heart rate avg 120, max 120"), "\(show.output)")
    #expect(show.output.contains("distance 0.08 km"), "\(show.output)")
  }
}
