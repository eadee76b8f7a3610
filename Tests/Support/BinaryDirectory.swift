import Foundation

/// Where the built binaries are: next to the test bundle (SwiftPM puts every product of the
/// package in the same directory), or $WORKOUTD_BIN_DIR.
public let binaryDirectory: String = {
  if let dir = ProcessInfo.processInfo.environment["WORKOUTD_BIN_DIR"] { return dir }
  let executable =
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
  var dir = URL(fileURLWithPath: executable).deletingLastPathComponent()
  // .../debug/workoutdPackageTests.xctest is the runner itself on Linux.
  while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("workoutd").path), dir.path != "/" {
    dir.deleteLastPathComponent()
  }
  return dir.path
}()
