import Foundation
import LinuxSupport
import Testing
import WorkoutControl
import WorkoutStore
import WorkoutTestSupport

/// `workoutctl activity next` through the real service, and `show` printing each activity
/// from the stored points.
@Suite(.serialized)
struct MultiActivityControlTests {
  func ctl(_ arguments: [String], _ dir: ServiceDirectory) throws -> (status: Int32, output: String) {
    try run(binaryDirectory + "/workoutctl", arguments + ["--state-dir", dir.state, "--runtime-dir", dir.runtime])
  }

  @Test func aWorkoutGoesOnToItsNextActivityAndShowSaysEach() throws {
    let dir = ServiceDirectory()
    let config = dir.path + "/workoutd.toml"
    try "[zones]\nheart_rate = \"120,140,160,175\"\n".write(toFile: config, atomically: true, encoding: .utf8)
    let service = try ServiceProcess(dir, arguments: ["--speed", "20", "--config", config])
    try service.waitUntilReady()
    try waitFor("the ride to run a while", timeout: 60) {
      let status = try service.status()
      return status.state == .running && status.points > 60
    }
    let next = try ctl(["activity", "next", "running"], dir)
    #expect(next.status == 0, "\(next.output)")
    #expect(next.output.contains("activity 2: running"), "\(next.output)")
    let unknown = try ctl(["activity", "next", "swimming"], dir)
    #expect(unknown.status != 0 && unknown.output.contains("no activity \"swimming\""), "\(unknown.output)")
    let before = try service.status().points
    try waitFor("the second activity to record", timeout: 60) { try service.status().points > before + 60 }
    let status = try ctl(["status"], dir)
    #expect(status.output.contains("running (activity 2)"), "\(status.output)")
    #expect(status.output.contains("this activity: timer"), "\(status.output)")
    let stop = try ctl(["stop"], dir)
    #expect(stop.status == 0, "\(stop.output)")
    let sessionID = try #require(try service.status().sessionID)
    try waitFor("the session to end", timeout: 30) { try service.status().state == .ended }
    service.signal(SIGTERM)
    _ = try service.waitForExit()

    let text = try ctl(["show", String(sessionID)], dir)
    #expect(text.output.contains("1 cycling"), "\(text.output)")
    #expect(text.output.contains("2 running"), "\(text.output)")
    #expect(text.output.contains("heart-rate zones by activity:"), "\(text.output)")
    let json = try ctl(["show", String(sessionID), "--json"], dir)
    struct Shown: Decodable {
      struct Training: Decodable {
        struct Activity: Decodable {
          var type: String
          var timer: Double
          var zones: [[Double]]
        }
        var activities: [Activity]
      }
      struct Session: Decodable { var timer: Double }
      var training: Training
      var session: Session
    }
    let shown = try JSONDecoder().decode(Shown.self, from: Data(json.output.utf8))
    #expect(shown.training.activities.map(\.type) == ["cycling", "running"])
    // The activities make up the workout, to the second; and so do their times in zone.
    let timers = shown.training.activities.map(\.timer).reduce(0, +)
    #expect(abs(timers - shown.session.timer) <= 2, "\(timers) against \(shown.session.timer)")
    let inZones = shown.training.activities.flatMap { $0.zones.flatMap { $0 } }.reduce(0, +)
    #expect(inZones <= shown.session.timer + 2 && inZones > shown.session.timer * 0.9, "\(inZones)")
  }
}
