import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// The USB stick copier's reports (`workoutd-usb@.service`) as the engine turns them into what
/// the rider sees: status, the LED, the buzzer, and a fault until a plug finishes the job.
struct StickCopyTests {
  let stick = "usb:1234-ABCD"

  func report(_ phase: StickCopyReport.Phase, _ detail: String, target: String? = nil) -> EngineInput {
    .stickCopy(StickCopyReport(phase: phase, target: target ?? stick, detail: detail, device: "sda1"))
  }

  func patterns(_ h: EngineHarness) -> [IndicatorPattern] {
    h.commands.compactMap { if case .indicate(let p) = $0 { p } else { nil } }
  }

  func chirps(_ h: EngineHarness) -> [ChirpPattern] {
    h.commands.compactMap { if case .chirp(let p) = $0 { p } else { nil } }
  }

  func usb(_ h: EngineHarness) -> DeviceStatus? { h.engine.watch.conditions[.usbStick] }

  @Test func aWholeCopyShowsOnTheLEDAndChirpsOnlyOnceUnmounted() {
    var h = EngineHarness()
    h.send(report(.copying, "3 files"))
    #expect(patterns(h) == [.copying])
    #expect(usb(h)?.condition == .available)
    #expect(usb(h)?.detail.contains("do not remove") == true)
    h.send(report(.copied, "copied 3 new files (120000 bytes)"))
    #expect(chirps(h).isEmpty, "still mounted: not yet safe")
    #expect(patterns(h).last == .off)
    h.send(report(.unmounted, "success exited 0"))
    #expect(chirps(h) == [.long])
    #expect(usb(h)?.condition == .available)
    #expect(usb(h)?.detail == "usb:1234-ABCD: copied 3 new files (120000 bytes); safe to remove")
    #expect(!h.engine.watch.hasFault)
  }

  @Test func aFailedCopyIsAFaultUntilAPlugFinishesIt() {
    var h = EngineHarness()
    h.send(report(.copying, "3 files"))
    h.send(report(.failed, "no space left on the stick (copied 1 of 3 files before the failure)"))
    #expect(patterns(h).last == .fault)
    #expect(chirps(h) == [.alarm])
    #expect(usb(h)?.condition == .failing)
    #expect(h.engine.faultyDevices.contains(.usbStick))
    let events = h.commands.compactMap { if case .recordEvent(_, let e) = $0 { e } else { nil } }
    #expect(events.contains { $0.kind == .deviceFailing && $0.detail?.contains("no space left") == true })
    h.send(report(.unmounted, "exit-code exited 10"))
    #expect(usb(h)?.condition == .failing, "the unmount does not clear it")
    #expect(usb(h)?.detail.contains("no space left") == true, "and the cause stays what it was")
    #expect(!chirps(h).contains(.long))
    // The next plug copies the rest.
    h.send(report(.copying, "2 files"))
    h.send(report(.copied, "copied 2 new files (80000 bytes)"))
    h.send(report(.unmounted, "success exited 0"))
    #expect(usb(h)?.condition == .available)
    #expect(!h.engine.watch.hasFault)
    #expect(patterns(h).last == .off)
    #expect(chirps(h).last == .long)
  }

  @Test func pulledMidCopyIsTheUnitsReportAndFindsTheStickByItsDevice() {
    var h = EngineHarness()
    h.send(report(.copying, "3 files"))
    // The stick is gone: the unit's report-copy cannot read its UUID, only the kernel name.
    h.send(report(.unmounted, "success killed TERM", target: "usb:sda1"))
    #expect(usb(h)?.condition == .failing)
    #expect(usb(h)?.detail.hasPrefix("usb:1234-ABCD: removed or stopped before the copy finished") == true)
    #expect(usb(h)?.detail.hasSuffix("plug it in again to finish") == true)
    #expect(patterns(h).last == .fault)
  }

  @Test func aStickThatWouldNotMountIsAFaultThatNamesTheUnit() {
    var h = EngineHarness()
    h.send(report(.unmounted, "exit-code exited 1; journalctl -u workoutd-usb@sdb1.service", target: "usb:sdb1"))
    #expect(usb(h)?.condition == .failing)
    #expect(
      usb(h)?.detail.contains(
        "would not mount, or the copier did not start: exit-code exited 1; journalctl -u workoutd-usb@sdb1.service")
        == true)
  }

  @Test func duringARideTheLEDKeepsTheRidesRhythmAndTheBuzzerStillSaysWhenToPull() {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    #expect(patterns(h).last == .running)
    h.send(report(.copying, "1 file"))
    #expect(patterns(h).last == .running)
    h.send(report(.copied, "copied 1 new files (1000 bytes)"))
    h.send(report(.unmounted, "success exited 0"))
    #expect(chirps(h).last == .long)
    #expect(h.engine.state == .running)
  }

  @Test func sticksPluggedOneAfterAnotherAreNeverAFlappingDevice() {
    var h = EngineHarness()
    for plug in 0..<8 {
      h.advance(by: 3)
      h.send(report(.copying, "1 file"))
      h.send(plug.isMultiple(of: 2) ? report(.copied, "copied 1 new files (10 bytes)") : report(.failed, "read-only"))
      h.send(report(.unmounted, "done"))
    }
    #expect(!h.engine.watch.isUnstable(.usbStick))
    let events = h.commands.compactMap { if case .recordEvent(_, let e) = $0 { e } else { nil } }
    #expect(events.filter { $0.kind == .deviceFailing }.count == 4, "each failed plug is told")
    #expect(usb(h)?.condition == .failing, "the last one failed")
  }

  @Test func anotherStickOnTheSamePortIsAnotherStick() {
    var h = EngineHarness()
    h.send(report(.copying, "1 file"))
    h.send(report(.copied, "copied 1 new files (10 bytes)"))
    h.send(report(.unmounted, "success exited 0"))
    h.send(report(.failed, "cannot make workoutd: Read-only file system", target: "usb:2345-BCDE"))
    #expect(usb(h)?.detail == "usb:2345-BCDE: cannot make workoutd: Read-only file system")
    h.send(report(.unmounted, "exit-code exited 11", target: "usb:2345-BCDE"))
    #expect(usb(h)?.detail == "usb:2345-BCDE: cannot make workoutd: Read-only file system")
    #expect(h.engine.stickCopies.failed.map(\.target) == ["usb:2345-BCDE"])
  }

  @Test func twoSticksAtOnceAreTwoCopiesAndOnesFailureIsNotHiddenByTheOther() {
    var h = EngineHarness()
    h.send(report(.copying, "2 files"))
    h.send(.stickCopy(StickCopyReport(phase: .copying, target: "usb:BBBB-0002", detail: "2 files", device: "sdb1")))
    #expect(patterns(h).last == .copying)
    h.send(.stickCopy(StickCopyReport(phase: .failed, target: "usb:BBBB-0002", detail: "full", device: "sdb1")))
    #expect(usb(h)?.condition == .failing)
    h.send(report(.copied, "copied 2 new files (20 bytes)"))
    h.send(report(.unmounted, "success exited 0"))
    #expect(chirps(h).last == .long, "the first stick is safe to pull")
    #expect(usb(h)?.condition == .failing, "the other's failure stands")
    #expect(usb(h)?.detail == "usb:BBBB-0002: full; usb:1234-ABCD: copied 2 new files (20 bytes); safe to remove")
    #expect(h.engine.stickCopies.underWay.keys.sorted() == ["usb:BBBB-0002"])
    h.send(.stickCopy(StickCopyReport(phase: .unmounted, target: "usb:sdb1", detail: "exit-code", device: "sdb1")))
    #expect(h.engine.stickCopies.underWay.isEmpty)
    #expect(usb(h)?.detail == "usb:BBBB-0002: full")
    #expect(patterns(h).last == .fault)
    // That stick plugged again, with room: all clear.
    h.send(.stickCopy(StickCopyReport(phase: .copying, target: "usb:BBBB-0002", detail: "2 files", device: "sda1")))
    h.send(.stickCopy(StickCopyReport(phase: .copied, target: "usb:BBBB-0002", detail: "copied 2", device: "sda1")))
    h.send(.stickCopy(StickCopyReport(phase: .unmounted, target: "usb:BBBB-0002", detail: "success", device: "sda1")))
    #expect(usb(h)?.condition == .available)
    #expect(usb(h)?.detail == "usb:BBBB-0002: copied 2; safe to remove")
    #expect(patterns(h).last == .off)
  }

  @Test func aStickThatCannotTakeRidesIsAFaultUntilItIsPulled() {
    var h = EngineHarness()
    let why =
      "holds an NTFS file system, which workoutd does not write: format it FAT32, exFAT or ext4 to take the rides"
    h.send(.stickCopy(StickCopyReport(phase: .refused, target: "usb:5A1C44D23F0E7B11", detail: why, device: "sdb1")))
    #expect(usb(h)?.condition == .failing)
    #expect(usb(h)?.detail == "usb:5A1C44D23F0E7B11: " + why)
    #expect(patterns(h).last == .fault)
    // Pulled: its unit's stop knows only the partition's name.
    h.send(.stickCopy(StickCopyReport(phase: .removed, target: "usb:sdb1", detail: "removed", device: "sdb1")))
    #expect(usb(h)?.condition == .available)
    #expect(!h.engine.watch.hasFault)
    #expect(chirps(h) == [.alarm], "the fault sounded; nothing copied: no long 'safe to remove' chirp")
    #expect(h.engine.stickCopies.failed.isEmpty && h.engine.stickCopies.underWay.isEmpty)
  }

  @Test func pullingARefusedStickLeavesAnotherSticksFailure() {
    var h = EngineHarness()
    h.send(report(.copying, "2 files"))
    h.send(report(.failed, "cannot write workoutd/a.fit: Read-only file system"))
    h.send(report(.unmounted, "exit-code exited 11"))
    h.send(
      .stickCopy(
        StickCopyReport(phase: .refused, target: "usb:sdc", detail: "no file system found on it", device: "sdc")))
    #expect(usb(h)?.detail.hasPrefix("usb:sdc: no file system found on it (and 1 more") == true)
    h.send(.stickCopy(StickCopyReport(phase: .removed, target: "usb:sdc", detail: "removed", device: "sdc")))
    #expect(usb(h)?.condition == .failing)
    #expect(usb(h)?.detail.hasPrefix("usb:1234-ABCD: cannot write workoutd/a.fit: Read-only") == true)
  }

  @Test func aRemovalNobodyWasToldOfChangesNothing() {
    var h = EngineHarness()
    h.send(.stickCopy(StickCopyReport(phase: .removed, target: "usb:sdd1", detail: "removed", device: "sdd1")))
    #expect(usb(h)?.condition != .failing)
    #expect(!h.engine.watch.hasFault)
    #expect(patterns(h).last != .fault)
  }
}
