import ArgumentParser
import Foundation
import LinuxSupport
import WorkoutControl
import WorkoutCore
import WorkoutExport

struct ReportCopy: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "report-copy",
    abstract: "Tell the service that a USB stick's copy has ended and it is unmounted (workoutd-usb@.service).",
    discussion: """
      Run by workoutd-usb@.service after it unmounted the stick: after a whole copy the service \
      says the stick is safe to remove (a long chirp, status); after anything else (pulled \
      mid-copy, a file system that would not mount) it shows a fault until a plug finishes the \
      job. The unit's result is read from $SERVICE_RESULT, $EXIT_CODE and $EXIT_STATUS.
      """
  )
  @OptionGroup var locations: Locations
  @Option(help: ArgumentHelp("The stick's partition (/dev/sda1).", valueName: "device")) var device: String
  @Option(help: "The unit that mounted it, for the rider to look up (journalctl -u).") var unit: String?
  @Flag(
    help: """
      The stick cannot take the rides (workoutd-usb-unusable@.service): tell the service why, from \
      what udev found on it, unless another partition of the same stick takes them.
      """)
  var unusable = false
  @Flag(help: "The stick that could not take the rides is gone (that unit's stop).") var removed = false

  func validate() throws {
    if unusable && removed { throw ValidationError("--unusable or --removed, not both") }
  }

  func run() throws {
    let environment = ProcessInfo.processInfo.environment
    let name = StickIdentity.kernelName(of: device)
    // The unit's ExecCondition (stick-check) found the board's own disk: nothing to tell.
    if environment["SERVICE_RESULT"] == "exec-condition" { return }
    if unusable || removed {
      try reportUnusable(name)
      return
    }
    // The partition may be gone already (pulled): its UUID is then unknown here, and the
    // kernel name is what the rider can match with the log.
    let target = StickIdentity.targetName(forDevice: device) ?? "usb:\(name)"
    var result = [environment["SERVICE_RESULT"], environment["EXIT_CODE"], environment["EXIT_STATUS"]]
      .compactMap { $0 }.joined(separator: " ")
    if result.isEmpty { result = "no result from systemd" }
    if let unit { result += "; journalctl -u \(unit)" }
    // A write-protected stick fails its file system check (fsck cannot open it to write), so
    // it is never mounted: what the rider can do about it is the lock switch.
    if StickIdentity.isWriteProtected(name) {
      result = "the stick is read-only (write-protected: a lock switch?); " + result
    }
    _ = try request(
      ControlRequest(
        command: .reportCopy, copy: StickCopyReport(phase: .unmounted, target: target, detail: result, device: name)),
      to: locations)
  }

  /// A stick 80-workoutd-usb.rules found unusable: judged from udev's properties of it and of
  /// the other partitions of its disk (sysfs), said to the service as `refused`; its removal
  /// as `removed`.
  private func reportUnusable(_ name: String) throws {
    let target = StickIdentity.targetName(forDevice: device) ?? "usb:\(name)"
    var report = StickCopyReport(phase: .removed, target: target, detail: "removed", device: name)
    if unusable {
      let stick = StickSuitability.Device(name: name, properties: try Self.udevProperties(name))
      var siblings: [StickSuitability.Device] = []
      if stick.properties["DEVTYPE"] == "partition" {
        for sibling in Self.partitionsBeside(name) where sibling != name {
          siblings.append(.init(name: sibling, properties: (try? Self.udevProperties(sibling)) ?? [:]))
        }
      }
      guard let why = StickSuitability.refusal(of: stick, siblings: siblings) else {
        print("\(name): not for the rides, and nothing to tell: another partition of the stick takes them")
        return
      }
      print("\(target): \(why)")
      report = StickCopyReport(phase: .refused, target: target, detail: why, device: name)
    }
    _ = try request(ControlRequest(command: .reportCopy, copy: report), to: locations)
  }

  /// udev's properties of block device `name` (`udevadm info`, which reads udev's database).
  static func udevProperties(_ name: String) throws -> [String: String] {
    let udevadm = try ChildProcess.run(
      "/usr/bin/udevadm", ["info", "--query=property", "--path=/sys/class/block/\(name)"])
    guard udevadm.status == 0 else { throw fail("udevadm info cannot describe \(name) (exit \(udevadm.status))") }
    return StickSuitability.properties(fromUdevadm: String(decoding: udevadm.output, as: UTF8.self))
  }

  /// The partitions of the disk that holds partition `name` (sysfs: its disk's directory).
  static func partitionsBeside(_ name: String) -> [String] {
    guard let disk = ExportFile.ledgerKey(forDirectory: "/sys/class/block/\(name)/..") else { return [] }
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: disk)) ?? []
    return entries.filter { FileManager.default.fileExists(atPath: "\(disk)/\($0)/partition") }.sorted()
  }
}
