import Foundation
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore

@testable import WorkoutDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// The real `ServiceRuntime` on a manual clock (`ManualRuntime`) with its database on a real
/// full disk (`SmallDisk`, a 1 MiB tmpfs): writes are held, retried, given up only past their
/// limit, and written in order when space returns; an ended ride is announced once committed.
@Suite(.serialized, .enabled(if: SmallDisk.canMount, "mounting a tmpfs needs root (CI runs as root)"))
struct ServiceRuntimeStorageFaultTests {
  @Test func writesAreHeldThroughAFullDiskAndWrittenInOrderWhenSpaceReturns() throws {
    let disk = try SmallDisk()
    let h = try ManualRuntime(directory: disk.path, notify: true)
    h.startRiding()
    h.run(for: 2)
    try disk.fill(under: h)
    h.run(for: 10)
    #expect(h.runtime.core.pendingWrites >= 10)
    #expect(h.runtime.core.engine.storageFailing)
    #expect(h.logs(containing: "cannot write to") == 1, "one line per condition")
    let notified = h.notifications!.received()
    #expect(notified.filter { $0.hasPrefix("STATUS=storage failing") }.count == 1, "\(notified)")
    #expect(h.outputs.indications.last == .fault)

    try disk.free()
    h.run(for: 1.5)
    #expect(h.runtime.core.pendingWrites == 0)
    #expect(!h.runtime.core.storageFailing)
    let sequences = try h.points().map(\.seq)
    #expect(sequences == Array(0..<sequences.count), "every second, in order, none lost")
    #expect(sequences.count >= 16)
    #expect(try h.events().contains { $0.kind == "storageFailing" }, "the fault is an event once it can be written")
    #expect(h.logs(containing: "storage works again") == 1)
    #expect(h.outputs.indications.last == .running)
  }

  @Test func aFullDiskIsRetriedEverySecondWhenNothingElseHappens() throws {
    let disk = try SmallDisk()
    let h = try ManualRuntime(directory: disk.path)
    h.startRiding()
    try disk.fill(under: h)
    h.control(.stop)
    let stoppedAt = h.clock.host
    h.run(for: 0.5)
    #expect(h.runtime.core.pendingWrites >= 1)
    #expect(h.clock.waits.last == stoppedAt + 1, "the loop wakes to retry a second later, though nothing is due")
    try disk.free()
    h.run(for: 1.5)
    #expect(h.runtime.core.pendingWrites == 0)
    #expect(h.runtime.core.engine.state == .ended, "the summary's commit ends the session")
  }

  @Test func anEndedSessionIsAnnouncedOnceItsEndIsCommittedNotBefore() throws {
    let disk = try SmallDisk()
    let h = try ManualRuntime(directory: disk.path)
    h.startRiding()
    try disk.fill(under: h)
    h.control(.stop)
    h.run(for: 3)
    #expect(h.outputs.endedSessions.isEmpty, "nothing for the exports while the end is held in memory")
    try disk.free()
    h.run(for: 2)
    #expect(h.runtime.core.engine.state == .ended)
    #expect(try h.store.session(id: 1)?.state == "ended")
    #expect(h.outputs.endedSessions == [1], "once, after the commit")
    h.run(for: 5)
    #expect(h.outputs.endedSessions == [1])
  }

  @Test func theOldestHeldWriteIsGivenUpLoudlyPastTheLimit() throws {
    let disk = try SmallDisk()
    let h = try ManualRuntime(directory: disk.path, settings: { $0.pendingLimit = 5 })
    h.startRiding()
    try disk.fill(under: h)
    h.run(for: 8)
    #expect(h.runtime.core.pendingWrites == 5)
    #expect(h.logs(containing: "giving up the oldest held second") >= 3)
  }

  @Test func aStopWhileTheDiskIsFullSaysWhatIsLost() throws {
    let disk = try SmallDisk()
    let h = try ManualRuntime(directory: disk.path)
    h.startRiding()
    try disk.fill(under: h)
    h.run(for: 2)
    h.queue.post(.terminate(signal: SIGTERM))
    h.run(for: 1)
    #expect(h.logs(containing: "writes the disk refused; they are lost") == 1)
  }
}
