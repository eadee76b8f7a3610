import BoardSim
import Foundation

/// What start-up would refuse, checked before anything is written: `--check-config` runs it,
/// and the service runs it first, so a configuration error exits 2 with the database, the
/// control socket and every session untouched.
///
/// Devices are not opened here: one that is missing at start is a device fault the service
/// reports and retries (a GPS plugged in later), not a configuration error.
public enum StartupCheck {
  public static func problems(_ configuration: DaemonConfiguration) -> [String] {
    var problems: [String] = []
    for (key, path) in [
      ("state_directory", configuration.stateDirectory), ("runtime_directory", configuration.runtimeDirectory),
    ] {
      var isDirectory: ObjCBool = false
      if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
        problems.append("[service] \(key) \(path) is a file, not a directory")
      }
    }
    switch configuration.board {
    case .sim:
      guard let ride = configuration.simRide ?? BundledRide.find() else {
        problems.append(
          "no ride to replay: set [sim] ride, or install the bundled one (looked in \(BundledRide.candidates().joined(separator: ", ")))"
        )
        break
      }
      do {
        let validated = try ReplayRideReader.validate(path: ride)
        // Replayed to its end and exited, a ride with no start press would record nothing and
        // exit 0 as if it had (a file the replay tool made before it read every FIT maker's
        // timer, or one made by hand). Without exit-at-end it waits for `workoutctl start`.
        if configuration.simExitAtEnd && !validated.pressesStart {
          problems.append(
            "cannot replay \(ride) to its end: it has no start press, so nothing would be recorded (make it again "
              + "with board/sim/make-replay.py, or add a \"0,press,start\" row; or, without --exit-at-end, start "
              + "the session with workoutctl start)")
        }
      } catch {
        problems.append("cannot replay \(ride): \(error)")
      }
    case .linux:
      do {
        _ = try LinuxBoardDevices(configuration)
      } catch {
        problems += error.problems
      }
    }
    return problems
  }
}
