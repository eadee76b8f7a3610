import LinuxSupport

/// Asks the system to power the board off, without root for the service: the flag file
/// `poweroff` in the service's runtime directory (/run/workoutd), which
/// `workoutd-poweroff.path` watches; its `workoutd-poweroff.service` removes the flag and runs
/// `systemctl poweroff`, which stops the service cleanly first. The flag is written durably
/// (`DurableFile`: whole, synced) and says why; /run is a tmpfs, so no boot finds it.
public struct PowerOffRequest: Sendable {
  public static let flagName = "poweroff"
  public let path: String

  public init(runtimeDirectory: String) {
    path = runtimeDirectory + "/" + Self.flagName
  }

  /// Writes the flag with `reason`; throws what kept it from being written.
  public func request(reason: String) throws(DurableFileError) {
    let file = try DurableFile.begin(path: path, mode: 0o644)
    try file.write(Array((reason + "\n").utf8))
    try file.commit()
  }
}
