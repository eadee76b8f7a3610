import Foundation
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

/// `workoutd --board linux` on a machine with gpsd and no buttons, barometer or straps: a real
/// gpsd (gpsfake replaying a real receiver's capture), the real service, driven by workoutctl.
@Suite(.serialized, .enabled(if: GPSFake.isAvailable, "needs gpsfake (make test installs gpsd-clients)"))
struct LinuxBoardGPSTests {
  /// A moving boat on the IJsselmeer (B&G Zeus2, 10 Hz, 3D fixes), replayed over and over.
  static let capture = "bundg_zeus_9.log"

  func configuration(port: Int, in dir: ServiceDirectory, limit: Int = 100) throws -> String {
    let path = dir.path + "/workoutd.toml"
    try """
    [service]
    board = "linux"
    [session]
    countdown_seconds = 1
    [auto_pause]
    enabled = false
    [gps]
    host = "127.0.0.1"
    port = \(port)
    max_horizontal_error = \(limit)
    """.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  func ctl(_ arguments: [String], _ dir: ServiceDirectory) throws -> (status: Int32, output: String) {
    try run(binaryDirectory + "/workoutctl", arguments + ["--state-dir", dir.state, "--runtime-dir", dir.runtime])
  }

  @Test func aRideDrivenByWorkoutctlWithGPSFromGPSD() throws {
    let dir = ServiceDirectory()
    let port = GPSFake.freePort()
    let gpsd = try GPSFake(capture: Self.capture, port: port, singleShot: false, cycle: 0.02)
    let service = try ServiceProcess(dir, arguments: ["--config", try configuration(port: port, in: dir)])
    try service.waitUntilReady()
    try waitFor("a GPS fix through gpsd", timeout: 60) { try service.status().gps == .fix }
    #expect(try service.status().devices["gps"]?.hasPrefix("available") == true)

    #expect(try ctl(["start"], dir).status == 0)
    try waitFor("recording", timeout: 30) { try service.status().points >= 5 }
    #expect(try ctl(["pause"], dir).status == 0)
    let pausedPoints = try service.status().points
    sleep(2)
    #expect(try service.status().points == pausedPoints, "no points while paused")
    #expect(try ctl(["resume"], dir).status == 0)
    try waitFor("more points", timeout: 30) { try service.status().points >= pausedPoints + 5 }
    #expect(try ctl(["stop"], dir).status == 0)
    try waitFor("the session to end", timeout: 10) { try service.status().state == .ended }
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
    gpsd.terminate()

    let store = try WorkoutStore.openForReading(at: dir.database)
    let points = try store.points(sessionID: 1)
    #expect(points.count >= 10)
    let positioned = points.filter { $0.lat != nil }
    #expect(positioned.count >= points.count - 1, "every recorded second has the boat's position")
    // The capture's waters: the IJsselmeer, about 52.6° N 5.2° E.
    #expect(positioned.allSatisfy { abs($0.lat! - 52.6) < 0.5 && abs($0.lon! - 5.2) < 0.5 })
    #expect(positioned.contains { $0.altGPS != nil }, "3D fixes carry altitude")
    let session = try #require(try store.session(id: 1))
    #expect(session.distance > 0, "the boat moved")
    let transitions = try store.events(sessionID: 1).filter { $0.kind == "transition" }
    #expect(
      transitions.map { "\($0.fromState!)→\($0.toState!)" } == [
        "notStarted→prepared", "prepared→running", "running→paused", "paused→running", "running→stopped",
        "stopped→ended",
      ])
    #expect(transitions.filter { $0.cause == "button" }.allSatisfy { $0.detail == "control" })
  }

  @Test func gpsdKilledAndRestartedMidRideTheSessionGoesOnAndRecordsTheGap() throws {
    let dir = ServiceDirectory()
    let port = GPSFake.freePort()
    var gpsd = try GPSFake(capture: Self.capture, port: port, singleShot: false, cycle: 0.02)
    let service = try ServiceProcess(dir, arguments: ["--config", try configuration(port: port, in: dir)])
    try service.waitUntilReady()
    try waitFor("a GPS fix", timeout: 60) { try service.status().gps == .fix }
    #expect(try ctl(["start"], dir).status == 0)
    try waitFor("recording", timeout: 30) { try service.status().points >= 5 }

    // gpsd dies (SIGKILL: a crash as its clients see it), and stays away long enough for the
    // fix to count as lost (5 s).
    #expect(gpsd.killGPSD())
    gpsd.terminate()
    try waitFor("the loss to be noticed", timeout: 30) { try service.status().gps == .noGPSD }
    #expect(try service.status().devices["gps"]?.hasPrefix("lost") == true)
    #expect(try service.status().state == .running, "the session goes on without GPS")
    let pointsWithoutGPS = try service.status().points
    try waitFor("points to go on without GPS", timeout: 30) { try service.status().points >= pointsWithoutGPS + 3 }

    gpsd = try GPSFake(capture: Self.capture, port: port, singleShot: false, cycle: 0.02)
    try waitFor("gpsd to be found again", timeout: 90) { try service.status().gps == .fix }
    let afterRestart = try service.status().points
    try waitFor("points with positions again", timeout: 30) { try service.status().points >= afterRestart + 3 }
    #expect(try service.status().state == .running)
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
    gpsd.terminate()

    let store = try WorkoutStore.openForReading(at: dir.database)
    let events = try store.events(sessionID: 1)
    let kinds = events.map(\.kind)
    #expect(kinds.contains("deviceLost"))
    let lost = try #require(events.first { $0.kind == "fixLost" })
    let regained = try #require(events.first { $0.kind == "fixRegained" })
    #expect(lost.id! < regained.id!)
    #expect((regained.value ?? 0) >= 5, "the gap is recorded: \(regained.value ?? -1) s without a fix")
    #expect(events.last { $0.kind == "deviceAvailable" }.map { $0.id! > lost.id! } == true, "gpsd found again")
    let points = try store.points(sessionID: 1)
    #expect(points.map(\.seq) == Array(0..<points.count), "a point every second, with or without GPS")
    #expect(points.contains { $0.lat == nil }, "the seconds without GPS have no position")
    #expect(points.last?.lat != nil)
  }

  @Test func fixesRefusedForTheirErrorAreSaidInStatusEventAndLEDAndARaisedLimitTakesThem() throws {
    let dir = ServiceDirectory()
    let port = GPSFake.freePort()
    let gpsd = try GPSFake(capture: Self.capture, port: port, singleShot: false, cycle: 0.02)
    defer { gpsd.terminate() }
    // The boat's fixes report errors of metres: a 1 m limit refuses every one.
    var service = try ServiceProcess(dir, arguments: ["--config", try configuration(port: port, in: dir, limit: 1)])
    try service.waitUntilReady()
    try waitFor("fixes to be refused", timeout: 60) { try service.status().gps == .rejecting }
    let early = try service.status()
    #expect(early.gpsDetail?.contains("> limit 1 m") == true, "\(early.gpsDetail ?? "")")
    #expect(early.gpsDetail?.contains("max_horizontal_error") == true)
    #expect(early.indicator == .waitingForFix, "not a fault in the first seconds")
    try waitFor("the refusal to count as a fault", timeout: 30) { try service.status().indicator == .fault }
    let words = try ctl(["status"], dir).output
    #expect(words.contains("GPS: FIXES REFUSED: fixes arrive and are refused"), "\(words)")
    let json = try ctl(["status", "--json"], dir).output
    #expect(json.contains(#""gps" : "rejecting""#) || json.contains(#""gps":"rejecting""#), "\(json)")
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
    let events = try WorkoutStore.openForReading(at: dir.database).events(sessionID: nil)
    let refused = try #require(
      events.first { $0.kind == "deviceFailing" && $0.detail?.contains("refusing fixes") == true })
    #expect(refused.detail?.contains("limit 1 m") == true)
    #expect(events.filter { $0.detail?.contains("refusing fixes") == true }.count == 1, "said once")

    // The limit raised in the configuration: the same fixes count.
    service = try ServiceProcess(dir, arguments: ["--config", try configuration(port: port, in: dir, limit: 100)])
    try service.waitUntilReady()
    try waitFor("a fix", timeout: 60) { try service.status().gps == .fix }
    #expect(try service.status().indicator != .fault)
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
  }

  @Test(arguments: [
    ("a port that accepts and never speaks", FakeGPSDPeer.Behaviour.silent, "failing: no answer from gpsd at"),
    ("a peer that sends random bytes", FakeGPSDPeer.Behaviour.randomBytes, "failing: not gpsd at"),
  ])
  func notGPSDIsAFaultWithin10SecondsAndARealGPSDLaterClearsIt(
    _ what: String, _ behaviour: FakeGPSDPeer.Behaviour, _ said: String
  ) throws {
    let dir = ServiceDirectory()
    let port = GPSFake.freePort()
    let peer = try FakeGPSDPeer(port: port, behaviour: behaviour)
    let service = try ServiceProcess(dir, arguments: ["--config", try configuration(port: port, in: dir)])
    try service.waitUntilReady()
    let ready = Date()
    try waitFor("\(what) to be a fault", timeout: 10) { try service.status().gps == .noGPSD }
    #expect(Date().timeIntervalSince(ready) < 10)
    let status = try service.status()
    #expect(status.devices["gps"]?.hasPrefix("\(said) 127.0.0.1:\(port)") == true, "\(status.devices)")
    #expect(status.indicator == .fault)
    #expect(try ctl(["status"], dir).output.contains("GPS: NO GPSD: \(said)"))
    peer.stop()
    let gpsd = try GPSFake(capture: Self.capture, port: port, singleShot: false, cycle: 0.02)
    defer { gpsd.terminate() }
    do {
      // Up to the 30 s backoff, plus gpsfake starting on a loaded machine.
      try waitFor("gpsd there to clear it", timeout: 90) { try service.status().gps == .fix }
    } catch {
      Issue.record(
        "status: \((try? service.status()).map { "\($0.gps) \($0.devices)" } ?? "?")\nlog:\n\(service.log)\ngpsfake: \(gpsd.stderr)"
      )
      throw error
    }
    #expect(try service.status().indicator != .fault)
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
    let events = try WorkoutStore.openForReading(at: dir.database).events(sessionID: nil)
    let detail = said.replacingOccurrences(of: "failing: ", with: "gps: ")
    #expect(
      events.filter { $0.kind == "deviceFailing" && $0.detail?.hasPrefix(detail) == true }.count == 1, "said once")
    #expect(
      events.last { $0.kind == "deviceAvailable" && $0.detail?.hasPrefix("gps: connected to gpsd") == true } != nil)
    // Never taken for a working gpsd before that.
    let firstFailing = events.firstIndex { $0.kind == "deviceFailing" } ?? events.count
    #expect(!events[..<firstFailing].contains { $0.kind == "deviceAvailable" && $0.detail?.hasPrefix("gps:") == true })
  }
}
