import Foundation
import LinuxSupport
import Logging
import Testing
import WorkoutCore
import WorkoutStore

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

  /// With [usb_drive] on and no gadget (its unit failed, or no USB device controller), the first
  /// look says "not yet" and the next, 30 s on, is a fault the rider is told of.
  @Test func aDriveTheGadgetUnitNeverMadeIsAFaultAtTheNextLook() throws {
    let base = NSTemporaryDirectory() + "workoutd-drive-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: base + "/exports", withIntermediateDirectories: true)
    try FileManager.default.createDirectory(atPath: base + "/configfs", withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: base) }
    let (store, _) = try WorkoutStore.open(at: base + "/workoutd.db", wallNow: 0)
    let drive = UsbDrive(
      image: base + "/usb-drive.img", formats: [.fit], gadget: UsbGadget(root: base + "/configfs"),
      log: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
    let first = drive.update(
      reader: store, exportDirectory: base + "/exports", destination: base + "/exports", wallNow: 1_764_000_000)
    #expect(first.status.condition == .available && first.status.detail.contains("not a USB drive yet"))
    #expect(first.retryAfter == UsbDrive.waitForGadget)
    #expect(FileManager.default.fileExists(atPath: base + "/usb-drive.img"), "the image is made all the same")
    let second = drive.update(
      reader: store, exportDirectory: base + "/exports", destination: base + "/exports", wallNow: 1_764_000_030)
    #expect(second.status.device == .usbDrive && second.status.condition == .failing)
    #expect(second.status.detail.contains("journalctl -u workoutd-usb-drive"), "\(second.status.detail)")
    #expect(second.retryAfter == UsbDrive.waitForGadget)
  }
}
