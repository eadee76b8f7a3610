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
      gives the LUN's medium to the service's user, so the service can put each new image in. \
      The image must be a regular file of that user's in a directory of theirs, neither a \
      symlink, or it is refused. \
      down unbinds and removes it. status prints what the drive holds and whether a computer \
      has it. The image is made by the service when [usb_drive] is enabled in workoutd.toml.
      """
  )
  enum Action: String, ExpressibleByArgument, CaseIterable { case up, down, status }
  @Argument(help: "up, down or status.") var action: Action
  @Option(help: "The drive image the service makes.") var image = "/var/lib/workoutd/usb-drive.img"
  @Option(help: "The USB device controller in /sys/class/udc (default: the only or first one).") var controller: String?
  @Option(help: "configfs's usb_gadget directory.") var configfs = UsbGadget.defaultRoot
  @Option(help: "The service's user, whose the image and its directory must be.") var user = "workoutd"

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
      // Checked before anything is made: the image is the service user's to change.
      let medium = try checkedImage()
      let controllers = UsbGadget.controllers()
      guard let chosen = controller ?? controllers.first else {
        throw fail(
          "no USB device controller in /sys/class/udc: on a Pi, dtoverlay=dwc2 in config.txt (see board/raspberrypi/USB-DRIVE.md)"
        )
      }
      guard controllers.contains(chosen) else {
        throw fail("no USB device controller \(chosen) (there are: \(controllers.joined(separator: ", ")))")
      }
      let serial = machineSerial()
      do {
        // The kernel opens the medium by name as this process: the checked descriptor's
        // /proc/self/fd name, so what it opens is what was checked, whatever the service's user
        // puts under the image's name in between.
        try withExtendedLifetime(medium.file) {
          try gadget.setUp(
            controller: chosen, identity: UsbGadget.Identity(serialNumber: serial),
            image: medium.file.map { "/proc/self/fd/\($0.rawValue)" }, owner: medium.owner)
        }
      } catch {
        try? gadget.tearDown()
        throw fail("cannot make the USB drive: \(error)")
      }
      print("USB drive on \(chosen): \(medium.file != nil ? image : "no medium until the service makes its image")")
    }
  }

  /// The image, opened for the kernel to use (nil while the service has not made it yet), and
  /// who may change the medium: the service's user. This process is root, and the kernel opens
  /// the medium with its rights: through a symlink under the image's name, or a hard link to
  /// another's file, the drive would show a computer any file of the board. So the image is
  /// opened beneath its directory, not through a symlink, and must be a regular file of the
  /// user's, in a directory of the user's that is no symlink either.
  func checkedImage() throws -> (file: FileDescriptor?, owner: (uid: uid_t, gid: gid_t)) {
    guard let account = getpwnam(user) else { throw fail("no user \(user) (the service's) on this system") }
    let owner = (account.pointee.pw_uid, account.pointee.pw_gid)
    let directory = (image as NSString).deletingLastPathComponent
    let name = (image as NSString).lastPathComponent
    do {
      let state = try FileDescriptor.openTrustedDirectory(directory, ownedBy: owner.0)
      do {
        return (try state.openBeneath(name, expecting: .regular, ownedBy: owner.0, shownAs: directory), owner)
      } catch  where error.errno == ENOENT {
        return (nil, owner)
      }
    } catch {
      throw fail("the drive image is not used: \(error)")
    }
  }

  /// A serial number a host tells boards apart by: the start of /etc/machine-id.
  func machineSerial() -> String {
    let text = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8)) ?? ""
    let hex = text.filter(\.isHexDigit).prefix(16)
    return hex.isEmpty ? "0000000000000000" : String(hex)
  }
}
