import Foundation
import Testing
import WorkoutStore
import WorkoutTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// `workoutctl copy-exports`, what the USB stick's unit runs, against real file systems: tmpfs
/// mounts stand in for sticks (a small one fills up, a read-only one refuses), with symlinks and
/// odd names planted on them. Mounting needs root, as CI runs.
@Suite(.serialized, .enabled(if: geteuid() == 0, "mounts file systems"))
struct CopyExportsTests {
  /// A tmpfs mounted on a directory of its own, unmounted and removed when done.
  final class Stick {
    let path: String
    init(options: String) throws {
      path = NSTemporaryDirectory() + "workoutd-stick-" + UUID().uuidString
      try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
      let mounted = try run("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", path])
      guard mounted.status == 0 else { throw TestFailure("mount: \(mounted.output)") }
    }
    func remount(_ options: String) throws {
      let mounted = try run("/bin/mount", ["-o", "remount," + options, path])
      guard mounted.status == 0 else { throw TestFailure("mount: \(mounted.output)") }
    }
    deinit {
      _ = try? run("/bin/umount", ["-l", path])
      rmdir(path)
    }
  }

  func ctl(_ arguments: [String], _ dir: ServiceDirectory) throws -> (status: Int32, output: String) {
    try run(binaryDirectory + "/workoutctl", arguments + ["--state-dir", dir.state, "--runtime-dir", dir.runtime])
  }

  func files(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
  }

  func contents(_ directory: String) -> [String: Data] {
    var all: [String: Data] = [:]
    for name in files(directory) { all[name] = FileManager.default.contents(atPath: directory + "/" + name) }
    return all
  }

  /// Records the short ride `count` times more, the service exporting FIT and GPX as it does.
  func record(_ count: Int, in dir: ServiceDirectory) throws {
    let ride = try ExportServiceTests.shortRide(in: dir)
    for _ in 0..<count {
      let service = try ServiceProcess(dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride])
      #expect(try service.waitForExit(timeout: 120) == 0, "\(service.log)")
    }
  }

  /// A state directory with `rides` short rides recorded and exported; the exports directory and its files.
  func recorded(_ rides: Int) throws -> (dir: ServiceDirectory, exports: String, ours: [String: Data]) {
    let dir = ServiceDirectory()
    try record(rides, in: dir)
    let exports = dir.state + "/exports"
    return (dir, exports, contents(exports))
  }

  @Test func newExportsGoOnceByteForByteAndOnlyTheNewOnesNextTime() throws {
    let dir = ServiceDirectory()
    try record(2, in: dir)
    let exports = dir.state + "/exports"
    #expect(files(exports).count == 4)
    let stick = try Stick(options: "size=16m")
    // What a stick already holds is left alone, odd names too.
    try FileManager.default.createDirectory(atPath: stick.path + "/workoutd", withIntermediateDirectories: true)
    try Data("mine".utf8).write(to: URL(fileURLWithPath: stick.path + "/workoutd/a note\nwith a newline.txt"))

    let first = try ctl(["copy-exports", "--to", stick.path, "--as", "usb:1234-ABCD"], dir)
    #expect(first.status == 0, "\(first.output)")
    #expect(first.output.contains("copied 4 files"), "\(first.output)")
    let onStick = contents(stick.path + "/workoutd")
    #expect(onStick.count == 5)
    for (name, data) in contents(exports) { #expect(onStick[name] == data, "\(name) byte for byte") }
    #expect(onStick["a note\nwith a newline.txt"] == Data("mine".utf8))
    let store = try WorkoutStore.openForReading(at: dir.database)
    let copied = try store.exports(sessionID: 1) + store.exports(sessionID: 2)
    #expect(copied.filter { $0.destination == "usb:1234-ABCD" }.count == 4)

    let again = try ctl(["copy-exports", "--to", stick.path, "--as", "usb:1234-ABCD"], dir)
    #expect(again.status == 0)
    #expect(again.output.contains("nothing new for usb:1234-ABCD"))

    try record(1, in: dir)
    let third = try ctl(["copy-exports", "--to", stick.path, "--as", "usb:1234-ABCD"], dir)
    #expect(third.status == 0, "\(third.output)")
    #expect(third.output.contains("copied 2 files"), "only the new session's: \(third.output)")
    #expect(files(stick.path + "/workoutd").count == 7)
  }

  @Test func aFullStickIsTheFullFaultLeavesNoHalfFileAndTheNextPlugFinishes() throws {
    let (dir, exports, ours) = try recorded(2)
    // Room for the FIT files and not much more (the GPX files are about 200 KB each).
    let stick = try Stick(options: "size=128k")
    let full = try ctl(["copy-exports", "--to", stick.path, "--as", "usb:FULL"], dir)
    #expect(full.status == 10, "\(full.output)")
    #expect(full.output.contains("No space left on device"), "\(full.output)")
    #expect(!files(stick.path + "/workoutd").contains { $0.hasSuffix(".partial") }, "no half file left")
    #expect(contents(exports) == ours, "our exports untouched")
    let store = try WorkoutStore.openForReading(at: dir.database)
    let recorded = (try store.exports(sessionID: 1) + store.exports(sessionID: 2)).filter {
      $0.destination == "usb:FULL"
    }
    #expect(recorded.count == files(stick.path + "/workoutd").count, "what is recorded is what is there")
    #expect(recorded.count < 4)

    try stick.remount("size=16m")
    let next = try ctl(["copy-exports", "--to", stick.path, "--as", "usb:FULL"], dir)
    #expect(next.status == 0, "\(next.output)")
    #expect(next.output.contains("copied \(4 - recorded.count) files"), "\(next.output)")
    let onStick = contents(stick.path + "/workoutd")
    for (name, data) in ours { #expect(onStick[name] == data, "\(name)") }
  }

  @Test func aReadOnlyStickAndPlantedSymlinksTouchNothingOfOurs() throws {
    let (dir, exports, ours) = try recorded(1)

    let readOnly = try Stick(options: "size=1m,ro")
    let refused = try ctl(["copy-exports", "--to", readOnly.path, "--as", "usb:RO"], dir)
    #expect(refused.status == 11, "\(refused.output)")
    #expect(refused.output.contains("Read-only file system"), "\(refused.output)")

    // workoutd/ on the stick is a symlink to a directory of ours: refused, not followed.
    let stick = try Stick(options: "size=16m")
    let elsewhere = dir.path + "/elsewhere"
    try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(atPath: stick.path + "/workoutd", withDestinationPath: elsewhere)
    let linked = try ctl(["copy-exports", "--to", stick.path, "--as", "usb:LINK"], dir)
    #expect(linked.status == 1, "\(linked.output)")
    #expect(linked.output.contains("is not a directory"), "\(linked.output)")
    #expect(files(elsewhere).isEmpty)

    // A file's name on the stick is a symlink to our own export: replaced, ours untouched.
    try FileManager.default.removeItem(atPath: stick.path + "/workoutd")
    try FileManager.default.createDirectory(atPath: stick.path + "/workoutd", withIntermediateDirectories: true)
    let fit = try #require(ours.keys.first { $0.hasSuffix(".fit") })
    try FileManager.default.createSymbolicLink(
      atPath: stick.path + "/workoutd/" + fit, withDestinationPath: exports + "/" + fit)
    try FileManager.default.createSymbolicLink(
      atPath: stick.path + "/workoutd/." + fit + ".partial", withDestinationPath: exports + "/" + fit)
    let copied = try ctl(["copy-exports", "--to", stick.path, "--as", "usb:LINK"], dir)
    #expect(copied.status == 0, "\(copied.output)")
    let attributes = try FileManager.default.attributesOfItem(atPath: stick.path + "/workoutd/" + fit)
    #expect(attributes[.type] as? FileAttributeType == .typeRegular)
    #expect(contents(exports) == ours, "our exports untouched")
    #expect(FileManager.default.contents(atPath: stick.path + "/workoutd/" + fit) == ours[fit])
  }

  /// What workoutd-usb@.service runs, against a running service: the copier's reports and the
  /// unit's after the unmount become the usbStick device's status, the LED's fault, and clear
  /// once a plug finishes the job.
  @Test func theServiceIsToldAFullStickIsAFaultAndTheNextWholeCopyIsSafeToRemove() throws {
    let (dir, _, ours) = try recorded(2)
    let service = try ServiceProcess(dir, arguments: ["--speed", "max"])
    try service.waitUntilReady()
    let stick = try Stick(options: "size=128k")
    let full = try ctl(
      ["copy-exports", "--to", stick.path, "--as", "usb:FULL", "--device", "/dev/sdz1", "--report"], dir)
    #expect(full.status == 10, "\(full.output)")
    var status = try service.status()
    #expect(status.devices["usbStick"]?.contains("No space left on device") == true, "\(status.devices)")
    #expect(status.devices["usbStick"]?.hasPrefix("failing") == true, "\(status.devices)")
    #expect(status.engine.indicator == .fault)
    // Unmounted by the unit: the failure stands.
    let unmounted = try ctl(["report-copy", "--device", "/dev/sdz1"], dir)
    #expect(unmounted.status == 0, "\(unmounted.output)")
    #expect(try service.status().devices["usbStick"]?.hasPrefix("failing") == true)

    try stick.remount("size=16m")
    let next = try ctl(
      ["copy-exports", "--to", stick.path, "--as", "usb:FULL", "--device", "/dev/sdz1", "--report"], dir)
    #expect(next.status == 0, "\(next.output)")
    status = try service.status()
    #expect(status.devices["usbStick"]?.contains("unmounting") == true, "\(status.devices)")
    #expect(try ctl(["report-copy", "--device", "/dev/sdz1"], dir).status == 0)
    status = try service.status()
    #expect(status.devices["usbStick"]?.hasPrefix("available") == true, "\(status.devices)")
    #expect(status.devices["usbStick"]?.hasSuffix("safe to remove") == true, "\(status.devices)")
    #expect(status.engine.indicator != .fault)
    #expect(contents(stick.path + "/workoutd").count == ours.count)
    #expect(service.log.contains("safe to remove"), "one log line says so")

    // A stick with no UUID to be known by is refused before anything is written.
    let unknown = try ctl(["copy-exports", "--to", stick.path, "--device", "/dev/null"], dir)
    #expect(unknown.status == 1)
    #expect(unknown.output.contains("no filesystem UUID"), "\(unknown.output)")
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
  }
}
