import Foundation
import Testing

@testable import WorkoutDaemon

struct SessionExporterTests {
  /// The exports directory and its missing parents are made (relative to the working
  /// directory: ExportServiceTests, in a process of its own); a regular file in the way is named.
  @Test func theDirectoryAndItsParentsAreMade() throws {
    let base = NSTemporaryDirectory() + "workoutd-exporter-" + UUID().uuidString
    defer { try? FileManager.default.removeItem(atPath: base) }
    #expect(SessionExporter.makeDirectory(base + "/state/exports") == nil)
    var isDirectory: ObjCBool = false
    #expect(FileManager.default.fileExists(atPath: base + "/state/exports", isDirectory: &isDirectory))
    #expect(isDirectory.boolValue)
    #expect(SessionExporter.makeDirectory(base + "/state/exports") == nil, "already there")

    FileManager.default.createFile(atPath: base + "/file", contents: Data("x".utf8))
    #expect(SessionExporter.makeDirectory(base + "/file/exports") == "Not a directory")
  }

  /// The drive's medium as configfs names it, from this service or another mount namespace.
  @Test func theDriveHoldsTheImageUnlessItWasRenamedOver() {
    let image = "/var/lib/workoutd/usb-drive.img"
    #expect(UsbDrive.holds(image, image))
    #expect(UsbDrive.holds("/usb-drive.img", image), "opened through the state directory's own mount")
    #expect(!UsbDrive.holds(image + " (deleted)", image))
    #expect(!UsbDrive.holds("/usb-drive.img (deleted)", image))
    #expect(!UsbDrive.holds("", image))
    #expect(!UsbDrive.holds("/var/lib/other/disk.img", image))
  }
}
