import LinuxSupport
import Logging
import WorkoutCore
import WorkoutExport
import WorkoutStore

#if canImport(Glibc)
  import Glibc
#endif

/// Keeps the board's USB drive (`[usb_drive]`) in step with the exports: a FAT image in the
/// state directory holding `workoutd/` with the exported files of the configured formats,
/// made anew (never changed in place) when the exports change, then put in the gadget's
/// drive (`UsbGadget`). A host that has the drive mounted keeps reading the old image, whole:
/// the kernel holds it open although renamed over, and refuses the change (EBUSY) while the
/// host locks the medium; the change is tried again until the host ejects it. Runs on the
/// exporter's thread, after its passes.
/// `@unchecked Sendable`: only the exporter's thread uses it after it is made.
final class UsbDrive: @unchecked Sendable {
  let image: String
  let formats: [ExportFormat]
  let gadget: UsbGadget
  private let log: Logger
  /// What the image holds ("name bytes" lines), as its `.contents` file beside it says; nil
  /// until read or when there is no image.
  private var contents: String?
  private var contentsRead = false
  private var lastKind: Kind?
  /// Looks in a row that found no gadget.
  private var absentLooks = 0

  /// Seconds between tries to change the medium while a host holds the drive, and to build
  /// again after a failure.
  static let waitForHost: Double = 5
  static let retryFailure: Double = 60
  /// Seconds the gadget unit has to make the drive after the image is there.
  static let waitForGadget: Double = 30

  enum Kind: Equatable {
    case noGadget, current, waiting, failed
  }

  /// A pass's outcome: the device's status and when to look again (nil: at the next export).
  struct Outcome {
    var status: DeviceStatus
    var retryAfter: Double?
    var kind: Kind
  }

  init(image: String, formats: [ExportFormat], gadget: UsbGadget = UsbGadget(), log: Logger) {
    self.image = image
    self.formats = formats
    self.gadget = gadget
    self.log = log
  }

  var contentsPath: String { image + ".contents" }

  /// Builds the image if the exports changed, and puts it in the drive.
  func update(reader: WorkoutStore, exportDirectory: String, destination: String, wallNow: Double) -> Outcome {
    let records: [ExportRecord]
    do {
      records = try reader.exports(destination: destination).filter { record in
        formats.contains { $0.rawValue == record.format }
      }
    } catch {
      return failed("cannot list the exports for the drive: \(error)")
    }
    var files: [FATImage.File] = []
    var lines: [String] = []
    for record in records {
      let path = exportDirectory + "/" + record.name
      var info = stat()
      // A file recorded but gone (removed by hand) is left off the drive, not a failure.
      guard stat(path, &info) == 0 else { continue }
      files.append(FATImage.File(name: record.name, sourcePath: path))
      // Its modification time too: a file made again (an RPE after the ride) may keep its size.
      lines.append("\(record.name) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)")
    }
    let wanted = lines.joined(separator: "\n") + "\n"
    if !contentsRead {
      contents = Self.readText(contentsPath)
      contentsRead = true
      if contents != nil && access(image, F_OK) != 0 { contents = nil }
    }
    var built = false
    if contents != wanted {
      do {
        _ = unlink(contentsPath)
        contents = nil
        let written = try FATImage.write(
          files, volumeID: UInt32(truncatingIfNeeded: Int64(wallNow)), modified: Int64(wallNow), to: image)
        try Self.writeText(wanted, to: contentsPath)
        contents = wanted
        built = true
        log(
          .info,
          "made the USB drive image \(image): \(written.files) file\(written.files == 1 ? "" : "s"), \(written.bytes) bytes"
        )
      } catch {
        return failed("cannot make the USB drive image \(image): \(error)")
      }
    }
    let summary =
      "\(files.count) file\(files.count == 1 ? "" : "s") (\(formats.map { $0.rawValue.uppercased() }.joined(separator: "+")))"
    guard let medium = gadget.medium() else {
      // Made by workoutd-usb-drive.service once the image is there (a second or so): missing
      // at the next look too, it is a fault the rider is told of, not a quiet "not yet".
      absentLooks += 1
      if absentLooks > 1 {
        return failed(
          "the board is not a USB drive: workoutd-usb-drive.service has not made it (journalctl -u workoutd-usb-drive; "
            + "a Pi needs dtoverlay=dwc2, see /usr/share/doc/workoutd)",
          retryAfter: Self.waitForGadget)
      }
      return note(
        .noGadget, "\(summary) in \(image); the board is not a USB drive yet (workoutd-usb-drive.service sets it up)",
        retryAfter: Self.waitForGadget)
    }
    absentLooks = 0
    let host = gadget.connection().map { $0.state == "configured" ? "a computer has it" : "no computer" } ?? "not bound"
    let current = "\(summary); \(host)"
    if Self.holds(medium, image) && !built { return note(.current, current, retryAfter: nil) }
    do {
      try gadget.changeMedium(to: image)
      if lastKind != .current || built { log(.info, "the USB drive now holds \(summary)") }
      return note(.current, current, retryAfter: nil)
    } catch  where error.errno == EBUSY {
      if lastKind != .waiting {
        log(.notice, "a computer has the USB drive mounted: the new rides go onto it once the computer ejects it")
      }
      return note(
        .waiting, "\(summary) ready; the computer that has the drive sees the new ones once it ejects it",
        retryAfter: Self.waitForHost)
    } catch {
      return failed("cannot put \(image) in the USB drive: \(error)")
    }
  }

  /// Takes the image out of the drive and removes it: `[usb_drive]` was turned off.
  static func retire(image: String, gadget: UsbGadget = UsbGadget(), log: Logger) {
    // Whatever our gadget holds is an image of ours.
    if let medium = gadget.medium(), !medium.isEmpty {
      do { try gadget.changeMedium(to: "") } catch {
        log(.notice, "cannot take \(image) out of the USB drive: \(error); it goes at the next boot")
      }
    }
    if unlink(image) == 0 { log(.info, "removed \(image): [usb_drive] is off") }
    _ = unlink(image + ".contents")
  }

  /// Whether the drive's medium, as the kernel names it, is the image now at `image`. The
  /// kernel names the file by the mount it was opened through: the full path from the service
  /// that put it in, but from another mount namespace (this service before a restart, the
  /// gadget unit) only the path within the state directory's mount. An image renamed over is
  /// " (deleted)".
  static func holds(_ medium: String, _ image: String) -> Bool {
    guard !medium.isEmpty, !medium.hasSuffix(" (deleted)") else { return false }
    let name = image.split(separator: "/").last.map { "/" + $0 } ?? image
    return medium == image || medium.hasSuffix(name)
  }

  private func failed(_ detail: String, retryAfter: Double = UsbDrive.retryFailure) -> Outcome {
    if lastKind != .failed { log(.warning, detail + "; tried again in \(Int(retryAfter)) s") }
    return note(.failed, detail, condition: .failing, retryAfter: retryAfter)
  }

  private func note(
    _ kind: Kind, _ detail: String, condition: DeviceStatus.Condition = .available, retryAfter: Double?
  ) -> Outcome {
    lastKind = kind
    return Outcome(
      status: DeviceStatus(device: .usbDrive, condition: condition, detail: detail), retryAfter: retryAfter, kind: kind)
  }

  static func readText(_ path: String) -> String? {
    (try? FileDescriptor.contents(of: path)).map { String(decoding: $0, as: UTF8.self) }
  }

  /// Through a temporary name, synced, renamed, the directory synced (`DurableFile`): a cut
  /// leaves the old text or none, never half.
  static func writeText(_ text: String, to path: String) throws(DurableFileError) {
    let file = try DurableFile.begin(path: path, temporarySuffix: ".partial")
    try file.write(Array(text.utf8))
    try file.commit()
  }
}
