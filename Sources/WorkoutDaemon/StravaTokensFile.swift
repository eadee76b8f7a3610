import LinuxSupport
import WorkoutUpload

/// The rider's Strava login (`StravaTokens`): written by `workoutctl upload login strava`
/// through the service, and again each time Strava rotates the refresh token, in the state
/// directory, mode 0600. Written durably before the new tokens are used: the old refresh token
/// stops working once Strava has given a new one.
struct StravaTokensFile: Sendable {
  let path: String

  /// The login's file in the service's state directory.
  init(in stateDirectory: String) {
    path = stateDirectory + "/strava-tokens.json"
  }

  func read() throws -> StravaTokens {
    let text = try PrivateFile(path: path, holds: "the Strava login").read()
    return try StravaTokens(fileContent: Array(text.utf8))
  }

  func write(_ content: [UInt8]) throws(DurableFileError) {
    let file = try DurableFile.begin(path: path, mode: 0o600)
    try file.write(content)
    try file.commit()
  }
}
