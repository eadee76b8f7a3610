import Foundation
import LinuxSupport
import Testing
import WorkoutControl
import WorkoutStore
import WorkoutTestSupport

/// `workoutctl zones target` through the real service, on the bundled ride (an Edge 500 ride
/// at 162 bpm on average: mostly in zone 4 of 120/140/160/175).
@Suite(.serialized)
struct TargetZoneControlTests {
  func ctl(_ arguments: [String], _ dir: ServiceDirectory) throws -> (status: Int32, output: String) {
    try run(binaryDirectory + "/workoutctl", arguments + ["--state-dir", dir.state, "--runtime-dir", dir.runtime])
  }

  @Test func aTargetSetDuringTheRideAlertsWhenTheRiderIsOutsideItAndCanBeCleared() throws {
    let dir = ServiceDirectory()
    let config = dir.path + "/workoutd.toml"
    try "[zones]\nheart_rate = \"120,140,160,175\"\n".write(toFile: config, atomically: true, encoding: .utf8)
    let service = try ServiceProcess(dir, arguments: ["--speed", "20", "--config", config])
    try service.waitUntilReady()
    try waitFor("the ride to run", timeout: 60) { try service.status().state == .running }

    let set = try ctl(["zones", "target", "2"], dir)
    #expect(set.status == 0, "\(set.output)")
    #expect(set.output.contains("the current workout's target: heart-rate zones 2"), "\(set.output)")
    try waitFor("the rider to be outside zone 2", timeout: 60) {
      try service.status().targetZones?.first?.outside == true
    }
    let status = try ctl(["status"], dir)
    #expect(status.output.contains("target: heart-rate zones 2 (OUTSIDE)"), "\(status.output)")
    #expect(status.output.contains("LED offTarget") || status.output.contains("LED fault"), "\(status.output)")

    let beyond = try ctl(["zones", "target", "4-6"], dir)
    #expect(beyond.status != 0)
    #expect(beyond.output.contains("the target goes beyond the workout's zones"), "\(beyond.output)")
    let power = try ctl(["zones", "target", "3", "--power"], dir)
    #expect(power.status != 0)
    #expect(power.output.contains("the workout has no zones of that quantity"), "\(power.output)")
    let bad = try ctl(["zones", "target", "3-1"], dir)
    #expect(bad.status != 0 && bad.output.contains("a target is a zone or a range of zones"), "\(bad.output)")

    let off = try ctl(["zones", "target", "--off"], dir)
    #expect(off.status == 0, "\(off.output)")
    #expect(try service.status().targetZones == nil)
    let sessionID = try #require(try service.status().sessionID)
    service.signal(SIGTERM)
    _ = try service.waitForExit()
    let store = try WorkoutStore.openForReading(at: dir.database)
    let left = try store.events(sessionID: sessionID).filter { $0.kind == "targetZoneLeft" }
    #expect(left.count >= 1)
    #expect(left.first?.detail?.contains("above the target 2") == true, "\(left.map(\.detail))")
  }
}
