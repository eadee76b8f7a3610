import ArgumentParser
import Foundation
import LinuxSupport

struct UsbDrive: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "usb-drive",
    abstract:
      "Make the board a USB drive holding the rides, or stop it being one (workoutd-usb-drive.service, as root).",
    discussion: """
      up makes the USB gadget (configfs, a read-only removable mass_storage LUN) with the \
      service's drive image in it, binds it to the USB device controller (dwc2 on a Pi), and \
      gives the LUN's medium to the image's owner, so the service can put each new image in. \
      down unbinds and removes it. status prints what the drive holds and whether a computer \
      has it. The image is made by the service when [usb_drive] is enabled in workoutd.toml.
      """
  )
  enum Action: String, ExpressibleByArgument, CaseIterable { case up, down, status }
  @Argument(help: "up, down or status.") var action: Action
  @Option(help: "The drive image the service makes.") var image = "/var/lib/workoutd/usb-drive.img"
  @Option(help: "The USB device controller in /sys/class/udc (default: the only or first one).") var controller: String?
  @Option(help: "configfs's usb_gadget directory.") var configfs = UsbGadget.defaultRoot

  func run() throws {
    let gadget = UsbGadget(root: configfs)
    switch action {
    case .status:
      guard let medium = gadget.medium() else { throw fail("no USB drive: \(gadget.directory) is not there") }
      let connection = gadget.connection()
      print("medium: \(medium.isEmpty ? "none" : medium)")
      print("controller: \(connection?.controller ?? "none (not bound)")")
      print(
        "host: \(connection.map { $0.state == "configured" ? "a computer has it (configured)" : $0.state } ?? "none")")
    case .down:
      do { try gadget.tearDown() } catch { throw fail("cannot remove the USB drive: \(error)") }
    case .up:
      guard access(UsbGadget.defaultRoot == configfs ? "/sys/kernel/config" : configfs, F_OK) == 0 else {
        throw fail("no configfs at \(configfs): this kernel has no USB gadget support (modprobe libcomposite)")
      }
      let controllers = UsbGadget.controllers()
      guard let chosen = controller ?? controllers.first else {
        throw fail(
          "no USB device controller in /sys/class/udc: on a Pi, dtoverlay=dwc2 in config.txt (see board/raspberrypi/USB-DRIVE.md)"
        )
      }
      guard controllers.contains(chosen) else {
        throw fail("no USB device controller \(chosen) (there are: \(controllers.joined(separator: ", ")))")
      }
      // The image's owner (the service) may change the medium; with no image yet, the owner of
      // its directory, and the drive starts empty.
      var info = stat()
      let imageThere = stat(image, &info) == 0
      if !imageThere {
        let parent = (image as NSString).deletingLastPathComponent
        guard stat(parent, &info) == 0 else { throw fail("cannot stat \(parent): \(String(cString: strerror(errno)))") }
      }
      let serial = machineSerial()
      do {
        try gadget.setUp(
          controller: chosen, identity: UsbGadget.Identity(serialNumber: serial), image: imageThere ? image : nil,
          owner: (info.st_uid, info.st_gid))
      } catch {
        try? gadget.tearDown()
        throw fail("cannot make the USB drive: \(error)")
      }
      print("USB drive on \(chosen): \(imageThere ? image : "no medium until the service makes its image")")
    }
  }

  /// A serial number a host tells boards apart by: the start of /etc/machine-id.
  func machineSerial() -> String {
    let text = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8)) ?? ""
    let hex = text.filter(\.isHexDigit).prefix(16)
    return hex.isEmpty ? "0000000000000000" : String(hex)
  }
}
