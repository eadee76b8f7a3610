import Foundation
import Testing
import WorkoutStore

/// board/sim/make-replay.py on FIT files whose timer is not the rider's button (issue 55): a
/// COROS watch starts its timer on movement (auto), an SRM head unit on its own signal
/// (fitness_equipment), and some files have no timer events at all. Each is written here
/// (write_fit.py), made into a ride, and replayed through the real service as one session.
@Suite("the replay tool reads any maker's FIT timer")
struct ReplayToolTests {
  struct Ride: Sendable, CustomTestStringConvertible {
    var name: String
    /// The FIT profile's manufacturer.
    var manufacturer: Int
    /// The seconds with a record, as ranges (write_fit.py's RECORDS).
    var records: String
    var recordCount: Int
    /// The timer events, `SECONDS:EVENT_TYPE:TRIGGER`.
    var events: [String]
    /// The press rows the ride must have, in order.
    var presses: [String]
    /// What the tool must say on stderr.
    var notes: [String] = []
    var testDescription: String { name }
  }

  static let rides = [
    // Started and stopped by the watch itself; its auto-pause (100-139 s, no records) stays a
    // gap for workoutd's own auto-pause, not a press.
    Ride(
      name: "COROS, auto timer", manufacturer: 294, records: "0-99,140-299", recordCount: 260,
      events: ["0:start:auto", "100:stop_all:auto", "140:start:auto", "300:stop_all:auto"],
      presses: ["0,press,start", "300,press,stop"]),
    // The head unit starts and ends the timer; the rider's own stop and start in between are a
    // pause and a resume.
    Ride(
      name: "SRM, fitness_equipment timer and a rider's pause", manufacturer: 6, records: "0-99,130-239",
      recordCount: 210,
      events: [
        "0:start:fitness_equipment", "100:stop_all:manual", "130:start:manual",
        "240:stop_disable_all:fitness_equipment",
      ],
      presses: ["0,press,start", "100,press,pause", "130,press,resume", "240,press,stop"]),
    Ride(
      name: "no timer events", manufacturer: 255, records: "0-179", recordCount: 180, events: [],
      presses: ["0,press,start", "180,press,stop"],
      notes: [
        "no timer start in the file: starting at the first record",
        "no timer stop in the file: ending after the last record",
      ]),
  ]

  @Test(arguments: rides)
  func aFITWhoseTimerIsNotTheRidersReplaysAsOneSession(_ ride: Ride) throws {
    let python = repositoryRoot + "/.build/pyref/bin/python"
    guard FileManager.default.isExecutableFile(atPath: python) else {
      Issue.record("no fitdecode in \(python): make test makes it (Tests/WorkoutExportTests/requirements.txt)")
      return
    }
    let dir = ServiceDirectory()
    let fit = dir.path + "/ride.fit"
    let csv = dir.path + "/ride.csv"
    let written = try run(
      python,
      [repositoryRoot + "/Tests/IntegrationTests/write_fit.py", fit, String(ride.manufacturer), ride.records]
        + ride.events)
    try #require(written.status == 0, "\(written.output)")

    let made = try run(python, [repositoryRoot + "/board/sim/make-replay.py", fit, csv, "a test ride"])
    try #require(made.status == 0, "\(made.output)")
    let notes = made.output.split(separator: "\n").map(String.init).filter { $0.hasPrefix("make-replay.py: ") }
    #expect(notes == ride.notes.map { "make-replay.py: \(fit): \($0)" }, "\(made.output)")
    let lines = try String(contentsOfFile: csv, encoding: .utf8).split(separator: "\n")
    #expect(lines.filter { $0.contains(",press,") } == ride.presses.map { Substring($0) })
    #expect(lines.contains("# start: 2026-05-01T07:30:00Z"))
    #expect(lines.filter { $0.contains(",rec,") }.count == ride.recordCount)

    let service = try ServiceProcess(dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", csv])
    #expect(try service.waitForExit(timeout: 120) == 0, "\(service.log)")
    let store = try WorkoutStore.openForReading(at: dir.database)
    #expect(try store.maxSessionID() == 1, "one session")
    let session = try #require(try store.session(id: 1))
    #expect(session.state == "ended")
    #expect(session.startWall == 1_777_620_600, "running from the timer's start")
    // Every record is a point (a stretch of running may start or end inside a second, with a
    // point less), and the rider's 8 m a record are the distance; the seconds workoutd's
    // auto-pause takes to see a standstill add a point or two at most.
    let events = try store.events(sessionID: 1)
    let stretches = events.filter { $0.toState == "running" }.count
    let points = try store.points(sessionID: 1)
    #expect(
      points.count >= ride.recordCount - stretches && points.count <= ride.recordCount + 3,
      "\(points.count) points in \(stretches) stretches")
    #expect(abs(session.distance - 8 * Double(ride.recordCount - 1)) < 16, "\(session.distance) m")
    // Each press a transition the simulated button made, in order.
    let states = ["start": "prepared", "pause": "paused", "resume": "running", "stop": "stopped"]
    let expected = ride.presses.map { states[String($0.split(separator: ",")[2])] ?? $0 }
    let pressed = events.filter { $0.kind == "transition" && $0.cause?.hasPrefix("button") == true }
    #expect(
      pressed.map { $0.toState ?? "" } == expected, "\(pressed.map { "\($0.fromState ?? "") → \($0.toState ?? "")" })")
  }

  /// A ride with no start press, replayed to its end, would record nothing and exit 0 as if it
  /// had: the service refuses it at start, before the database is made, and says why.
  @Test func aRideWithNoStartPressIsRefusedWhenReplayedToItsEnd() throws {
    let dir = ServiceDirectory()
    let ride = dir.path + "/no-start.csv"
    let rows = (0..<30).map { "\($0),rec,45.5,\(7.25 + Double($0) * 0.0001),300,8,140,85,18,200" }
    let header = ["# start: 2026-05-01T07:30:00Z", "t,kind,lat,lon,alt,speed,hr,cadence,temperature,power"]
    let text = header + rows + ["30,press,stop"]
    try text.joined(separator: "\n").write(toFile: ride, atomically: true, encoding: .utf8)
    let service = try ServiceProcess(dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride])
    #expect(try service.waitForExit() == 2)
    #expect(service.log.contains("cannot replay \(ride) to its end: it has no start press"), "\(service.log)")
    #expect(!FileManager.default.fileExists(atPath: dir.database))
  }
}
