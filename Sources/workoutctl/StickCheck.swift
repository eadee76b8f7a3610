import ArgumentParser
import Foundation
import WorkoutExport

struct StickCheck: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "stick-check",
    abstract: "Whether a USB block device is a stick to copy the rides onto (the USB units' ExecCondition).",
    discussion: """
      Exit status 0 when it is; 1, saying why, when a file system of its disk is mounted: the \
      disk the board runs from (a Pi booting from a USB SSD), or one someone mounted by hand, \
      is left alone, however its partitions look.
      """
  )
  @Option(help: ArgumentHelp("The stick or its partition (/dev/sda1).", valueName: "device")) var device: String

  func run() throws {
    let name = StickIdentity.kernelName(of: device)
    let mountinfo = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
    if let mounted = StickIdentity.mountedFileSystem(onDiskOf: name, mountinfo: mountinfo) {
      print("\(name): not a stick for the rides: its disk has \(mounted) mounted")
      throw ExitCode(1)
    }
  }
}
