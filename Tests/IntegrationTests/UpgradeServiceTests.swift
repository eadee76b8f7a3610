import Foundation
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore

/// The release binary on databases an earlier release left mid-ride, and on resume state it
/// cannot read: it never locks itself out, and never writes to a database it must not.
@Suite(.serialized)
struct UpgradeServiceTests {
  static let fixtures = repositoryRoot + "/Tests/Fixtures/upgrade"

  func expected(_ name: String) throws -> (state: String, points: Int, distance: Double, timer: Double) {
    let fields = try String(contentsOfFile: "\(Self.fixtures)/\(name).expected", encoding: .utf8)
      .split(separator: " ").map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }
    return (fields[0], Int(fields[1])!, Double(fields[2])!, Double(fields[3])!)
  }

  /// Written mid-ride by f426fad (Tests/Fixtures/upgrade/make-fixtures.sh): resumed in its
  /// state with its distance and timer, and recording goes on.
  @Test(arguments: ["running-v3", "paused-v3"])
  func aMidRideDatabaseOfTheLastReleaseIsResumed(_ name: String) throws {
    let dir = ServiceDirectory()
    try FileManager.default.copyItem(atPath: "\(Self.fixtures)/\(name).db", toPath: dir.database)
    let before = try expected(name)
    let service = try ServiceProcess(dir, arguments: ["--speed", "20"])
    try service.waitUntilReady()
    let status = try service.status()
    #expect(status.sessionID == 1)
    #expect(status.distance >= before.distance - 1e-6)
    #expect(status.timer >= before.timer - 1e-6)
    #expect(service.log.contains("resumed session 1 in state \(before.state)"))
    if before.state == "paused" {
      #expect(try service.control(.resume).ok)
    }
    try waitFor("recording to go on", timeout: 60) { try service.status().points > before.points + 5 }
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
  }

  @Test func anUnreadableCheckpointKeepsTheServiceUpAndRecording() throws {
    let dir = ServiceDirectory()
    try FileManager.default.copyItem(atPath: "\(Self.fixtures)/running-v3.db", toPath: dir.database)
    #expect(try run("/usr/bin/sqlite3", [dir.database, "UPDATE session SET snapshot = '{\"id\": \"x\"}'"]).status == 0)
    let before = try expected("running-v3")
    let service = try ServiceProcess(dir, arguments: ["--speed", "20"])
    try service.waitUntilReady()
    #expect(service.log.contains("session 1: resume checkpoint unreadable"))
    let status = try service.status()
    #expect(status.sessionID == 1)
    #expect(status.state == .running || status.state == .paused)
    #expect(status.distance >= before.distance - 1e-6)
    try waitFor("recording to go on", timeout: 60) { try service.status().points > before.points + 5 }
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
  }

  @Test func aNewerSchemaStopsTheServiceBeforeAnyWrite() throws {
    let dir = ServiceDirectory()
    try FileManager.default.copyItem(atPath: "\(Self.fixtures)/running-v3.db", toPath: dir.database)
    let insert = "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from a newer release')"
    #expect(try run("/usr/bin/sqlite3", [dir.database, insert]).status == 0)
    let before = try Data(contentsOf: URL(fileURLWithPath: dir.database))
    let service = try ServiceProcess(dir, arguments: ["--speed", "20"])
    #expect(try service.waitForExit() == 3)
    #expect(!service.log.contains("ready:"))
    #expect(service.log.contains("newer workoutd") && service.log.contains("fix:"))
    #expect(try Data(contentsOf: URL(fileURLWithPath: dir.database)) == before)
  }
}
