import Foundation
import LinuxSupport
import Testing
import WorkoutCore
import WorkoutTestSupport

/// `workoutctl --state-dir D status`: the locations an administrator gives before the
/// subcommand are the subcommand's, as they are after it.
struct WorkoutctlLeadingOptionsTests {
  func recordedRide() throws -> ServiceDirectory {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    h.ride(seconds: 12, speed: 6, heartRate: 140, from: &position) { _, _ in }
    _ = h.press(.stop)
    let dir = ServiceDirectory()
    try dir.record(h.commands)
    return dir
  }

  @Test func theStateDirectoryBeforeTheSubcommandIsTheSubcommands() throws {
    let dir = try recordedRide()
    let ctl = binaryDirectory + "/workoutctl"
    let after = try run(ctl, ["sessions", "--state-dir", dir.state])
    #expect(after.status == 0, "\(after.output)")
    #expect(after.output.contains("ended"), "\(after.output)")
    for arguments in [["--state-dir", dir.state, "sessions"], ["--state-dir=\(dir.state)", "sessions"]] {
      let before = try run(ctl, arguments)
      #expect(before.status == 0, "\(arguments): \(before.output)")
      #expect(before.output == after.output, "\(arguments)")
    }
    // Two levels of subcommand, and an option of the subcommand's own after it.
    let show = try run(ctl, ["--state-dir", dir.state, "show", "1", "--json"])
    #expect(show.status == 0, "\(show.output)")
    #expect(show.output.hasPrefix("{"), "\(show.output)")
  }

  @Test func theRuntimeDirectoryBeforeTheSubcommandIsWhereItLooks() throws {
    let dir = ServiceDirectory()
    // No service runs there: the error names the socket it tried, which is the one given.
    let status = try run(
      binaryDirectory + "/workoutctl", ["--runtime-dir", dir.runtime, "--state-dir", dir.state, "status"])
    #expect(status.status == 1, "\(status.output)")
    #expect(status.output.contains(dir.runtime + "/control.sock"), "\(status.output)")
  }

  @Test func withoutLeadingOptionsTheArgumentsAreAsGiven() throws {
    let help = try run(binaryDirectory + "/workoutctl", ["--version"])
    #expect(help.status == 0, "\(help.output)")
    let unknown = try run(binaryDirectory + "/workoutctl", ["--state-dir"])
    #expect(unknown.status != 0, "\(unknown.output)")
  }
}
