import Foundation
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutTestSupport

/// `workoutctl status --json` is read by scripts (the board-VM suite's among them): the engine's
/// fields and the service's are one flat object, with the keys of the first release.
struct StatusReportTests {
  func report() -> StatusReport {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    h.ride(seconds: 5, speed: 6, heartRate: 150, from: &position)
    return StatusReport(
      engine: h.engine.status(at: h.now), board: "sim", boardTime: h.now.monotonic, devices: ["gps": "available: ok"],
      storage: .init(database: "/var/lib/workoutd/workoutd.db", pendingWrites: 0, failing: false, lastError: nil))
  }

  @Test func theJSONIsOneFlatObjectWithTheKeysScriptsRead() throws {
    let status = report()
    let json = try ControlJSON.encode(status)
    let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    #expect(object["sessionId"] as? Int == 1)
    #expect(object["state"] as? String == "running")
    #expect(object["timer"] as? Double == status.timer)
    #expect(object["points"] as? Int == 5)
    #expect(object["lastPointSequence"] as? Int == 4)
    #expect(object["lastPointTime"] as? Double == status.lastPointTime)
    #expect(object["board"] as? String == "sim")
    #expect((object["storage"] as? [String: Any])?["failing"] as? Bool == false)
    #expect((object["devices"] as? [String: String])?["gps"] == "available: ok")
    #expect(object["engine"] == nil, "not nested")
    #expect(object["sessionID"] == nil)
  }

  @Test func itReadsBackAsItWasWritten() throws {
    let status = report()
    let decoded = try ControlJSON.decode(StatusReport.self, from: try ControlJSON.encode(status))
    #expect(decoded.engine == status.engine)
    #expect(decoded.sessionID == 1)
    #expect(decoded.heartRate == 150)
    #expect(decoded.board == "sim")
    #expect(decoded.storage.database == status.storage.database)
  }
}

/// The binaries' `--version` and the Debian package's version are one.
struct VersionTests {
  @Test func theVersionIsDebianChangelogs() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let changelog = try String(contentsOf: root.appendingPathComponent("debian/changelog"), encoding: .utf8)
    let first = try #require(changelog.split(separator: "\n").first)
    #expect(first.hasPrefix("workoutd (\(WorkoutdVersion.string)) "), "debian/changelog: \(first)")
  }
}
