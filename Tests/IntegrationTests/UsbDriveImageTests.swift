import Foundation
import Testing
import WorkoutTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// `workoutctl usb-drive up` runs as root (workoutd-usb-drive.service) and has the kernel open
/// the drive image, which the `workoutd` user makes: an image that is a symlink, a FIFO,
/// another's file or in a symlinked directory is refused before anything is made (issue 57).
/// Without a USB device controller here, an image that passes goes on to say there is none.
struct UsbDriveImageTests {
  let dir = ServiceDirectory()
  var image: String { dir.state + "/usb-drive.img" }
  let user = String(cString: getpwuid(geteuid())!.pointee.pw_name)

  func up(_ image: String) throws -> (status: Int32, output: String) {
    let configfs = dir.path + "/configfs"
    try FileManager.default.createDirectory(atPath: configfs, withIntermediateDirectories: true)
    return try run(
      binaryDirectory + "/workoutctl",
      ["usb-drive", "up", "--image", image, "--configfs", configfs, "--user", user, "--controller", "none.udc"])
  }

  @Test func aSymlinkedImageIsRefused() throws {
    try Data("secret".utf8).write(to: URL(fileURLWithPath: dir.path + "/secret"))
    try FileManager.default.createSymbolicLink(atPath: image, withDestinationPath: dir.path + "/secret")
    let refused = try up(image)
    #expect(refused.status == 1)
    #expect(
      refused.output.contains("the drive image is not used: \(image) is refused: it is a symbolic link"),
      "\(refused.output)")
    #expect(!refused.output.contains("USB device controller"), "refused before the gadget is made")
  }

  @Test func aFIFOImageOrOneInASymlinkedDirectoryIsRefused() throws {
    #expect(mkfifo(image, 0o600) == 0)
    let fifo = try up(image)
    #expect(fifo.status == 1)
    #expect(fifo.output.contains("\(image) is refused: it is a FIFO, not a regular file"), "\(fifo.output)")

    unlink(image)
    try Data(count: 4096).write(to: URL(fileURLWithPath: image))
    try FileManager.default.createSymbolicLink(atPath: dir.path + "/linked", withDestinationPath: dir.state)
    let linked = try up(dir.path + "/linked/usb-drive.img")
    #expect(linked.status == 1)
    #expect(linked.output.contains("\(dir.path)/linked is refused: it is a symbolic link"), "\(linked.output)")
  }

  @Test(.enabled(if: geteuid() == 0, "chown needs root"))
  func anotherUsersImageIsRefused() throws {
    try Data(count: 4096).write(to: URL(fileURLWithPath: image))
    #expect(chown(image, 65534, 65534) == 0)
    let refused = try up(image)
    #expect(refused.status == 1)
    #expect(refused.output.contains("\(image) is refused: it belongs to uid 65534"), "\(refused.output)")
  }

  @Test func theServiceUsersImageOrNoneYetPassesTheCheck() throws {
    let none = try up(image)
    #expect(none.output.contains("no USB device controller none.udc"), "\(none.output)")
    try Data(count: 4096).write(to: URL(fileURLWithPath: image))
    let made = try up(image)
    #expect(made.output.contains("no USB device controller none.udc"), "\(made.output)")
  }
}
