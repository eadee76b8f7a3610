import Foundation
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore

@testable import WorkoutDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// The real `ServiceRuntime` on a manual clock (`ManualRuntime`): when it ticks, what a stall or
/// a silence does to the record, the watchdog, devices the loop reads, the GPS clock, a stop.
/// The store's faults are in `ServiceRuntimeStorageFaultTests`.
@Suite(.serialized)
struct ServiceRuntimeManualClockTests {
  static let origin = GeoPoint(latitude: 43.7134, longitude: -79.3661)

  @Test func theCountdownEndsAtItsDeadlineAndEachWholeSecondIsARow() throws {
    let h = try ManualRuntime()
    #expect(h.control(.start)?.state == .prepared)
    #expect(h.clock.waits.last == 53, "the loop sleeps until the countdown's deadline (host 50 + 3)")
    #expect(h.runtime.core.tickDue == nil, "no tick while counting down")
    h.run(for: 5.5)
    #expect(try h.points().map(\.monotonic) == [1004, 1005])
    #expect(try h.points().map(\.wall) == [1_795_000_004, 1_795_000_005])
    let running = try h.events().first { $0.kind == "transition" && $0.toState == "running" }
    #expect(running?.monotonic == 1003, "the countdown ends at its deadline, not when the loop got there")
  }

  @Test func aStallIsCaughtUpSecondBySecondWithWhatWasSensedInItsOwnSecond() throws {
    let h = try ManualRuntime()
    h.startRiding()
    h.clock.stall(for: 30)
    // A heart rate sensed in the middle of the stall, queued by its device's thread.
    h.sensed(.reading(.heartRate(bpm: 150)), at: 1020.5)
    h.run(for: 0)
    let points = try h.points()
    #expect(points.map(\.monotonic) == (1004...1033).map(Double.init), "each second of the stall keeps its row")
    #expect(points.first { $0.monotonic == 1020 }?.hr == nil, "sensed after second 1020's tick")
    #expect(points.first { $0.monotonic == 1021 }?.hr == 150)
    #expect(h.logs(containing: "no input for") == 0)
  }

  @Test func aLongSilenceIsSkippedWithOneWarningNotABurstOfRows() throws {
    let h = try ManualRuntime()
    h.startRiding()
    h.run(for: 2)
    let before = try h.points().count
    h.clock.stall(for: 600)
    h.run(for: 0)
    let after = try h.points().dropFirst(before)
    #expect(after.count == 1, "one row for the current second, not 600 about one instant")
    #expect(after.first?.monotonic == h.clock.now().monotonic.rounded(.down))
    #expect(h.logs(containing: "no input for") == 1)
    h.run(for: 3)
    #expect(try h.points().count == before + 4)
  }

  @Test func aStallIsCaughtUpToItsLastSensedInputAndTheSilenceAfterIsSkipped() throws {
    let h = try ManualRuntime()
    h.startRiding()
    h.clock.stall(for: 120)
    h.sensed(.reading(.heartRate(bpm: 140)), at: 1023.5)
    h.run(for: 0)
    // What was sensed in the gap goes into its own second; the silence after it is skipped.
    let points = try h.points()
    #expect(points.map(\.monotonic) == (1004...1023).map(Double.init) + [1123])
    #expect(points.first { $0.monotonic == 1023 }?.hr == nil)
    #expect(points.last?.hr == nil, "a minute and a half later the reading is stale")
    #expect(h.logs(containing: "no input for") == 1)
  }

  @Test func theWatchdogIsPingedOnlyWhileTheLoopRuns() throws {
    // WATCHDOG_USEC 20 s: a ping at most every 10 s.
    let h = try ManualRuntime(notify: true, watchdogUSec: 20_000_000)
    h.run(for: 0)
    #expect(h.notifications!.received() == ["WATCHDOG=1"])
    #expect(h.clock.waits.last == 60, "idle, the loop wakes for the next ping and nothing else")
    h.run(for: 4)
    #expect(h.notifications!.received().isEmpty, "not again before half the interval")
    h.run(for: 6)
    #expect(h.notifications!.received() == ["WATCHDOG=1"])
    // A loop that is not asked (hung) sends nothing; the first decision after pings at once.
    h.clock.stall(for: 25)
    #expect(h.notifications!.received().isEmpty)
    h.run(for: 0)
    #expect(h.notifications!.received() == ["WATCHDOG=1"])
    // While recording, ticks ping as they go, no more often than half the interval.
    // Read as systemd would, as they come: a datagram socket queues only ten.
    h.control(.start)
    var received = h.notifications!.received()
    for _ in 0..<63 {
      h.run(for: 1)
      received += h.notifications!.received()
    }
    let pings = received.filter { $0 == "WATCHDOG=1" }.count
    #expect((11...13).contains(pings), "\(pings) pings in 63 s")
  }

  @Test func devicesTheLoopReadsAreReadBeforeEachTickAndRarelyWhenIdle() throws {
    let clock = ManualRuntimeHost()
    let device = ManualReadDevice(clock: clock)
    let h = try ManualRuntime(clock: clock, settings: { $0.idleReadInterval = 3 }, devices: [device])
    h.run(for: 9.5)
    #expect(device.reads == [1000, 1003, 1006, 1009], "idle: once in three seconds")
    h.control(.start)
    h.run(for: 6)
    // Counting down: every second; running: before each tick (1013, 1014, 1015).
    #expect(device.reads.suffix(3) == [1013, 1014, 1015])
    // A fix read at the tick of 1016 but 0.3 s old goes into 1016's row, not 1017's.
    let position = Self.origin.moved(eastBy: 5)
    let fix = GPSFix(
      dimension: .threeD, latitude: position.latitude, longitude: position.longitude, speed: 5, horizontalError: 3)
    device.arrivals = [(.reading(.gps(fix)), 0.3)]
    h.run(for: 1)
    let point = try #require(try h.points().last)
    #expect(point.monotonic == 1016)
    #expect(point.lat == position.latitude)
  }

  @Test func gpsTimeCorrectsTheBoardClockOnceAndRowsAreStampedWithItAfter() throws {
    var engineSettings = EngineSettings()
    engineSettings.gpsClock = GPSClockSettings(earliestPlausible: 1_790_000_000)
    // A board that thinks it is 1970.
    let clock = ManualRuntimeHost(board: Moment(monotonic: 1000, wall: 1000), wallTrusted: false)
    let device = ManualReadDevice(clock: clock)
    let h = try ManualRuntime(
      engine: SessionEngine(settings: engineSettings, nextSessionID: 1), clock: clock, devices: [device],
      gpsClock: true)
    h.control(.start)
    h.run(for: 4.5)
    #expect(try h.points().allSatisfy { $0.wall < 2000 })
    for _ in 0..<3 {
      // Read at the next whole second (half a second on), 0.2 s after it arrived.
      let fix = GPSFix(
        dimension: .threeD, time: clock.now().wall + 0.3 + 1_795_000_000, latitude: Self.origin.latitude,
        longitude: Self.origin.longitude, horizontalError: 3)
      device.arrivals = [(.reading(.gps(fix)), 0.2)]
      h.run(for: 1)
    }
    let corrected = try h.events().filter { $0.kind == "clockCorrected" }
    #expect(corrected.count == 1)
    let last = try #require(try h.points().last)
    #expect(abs(last.wall - last.monotonic - 1_795_000_000) < 0.01, "stamped with GPS time")
  }

  @Test func aRemovedSensorLeavesTheStatusDevices() throws {
    let h = try ManualRuntime()
    h.startRiding()
    h.sensed(
      .device(DeviceStatus(device: .powerMeter, condition: .available, detail: "C1:00:00:00:00:01")), at: 1003.5)
    h.run(for: 0)
    #expect(h.runtime.core.deviceConditions["powerMeter"] == "available: C1:00:00:00:00:01")
    h.sensed(.deviceRemoved(.powerMeter), at: 1003.5)
    h.run(for: 0)
    #expect(h.runtime.core.deviceConditions["powerMeter"] == nil)
  }

  @Test func aStopAtATerminationSignalSavesTheSessionAndSaysNothingIsLost() throws {
    let h = try ManualRuntime(notify: true)
    h.startRiding()
    h.run(for: 2)
    _ = h.notifications!.received()
    h.queue.post(.terminate(signal: SIGTERM))
    h.run(for: 10)
    #expect(h.notifications!.received().contains("STOPPING=1"))
    #expect(h.runtime.core.pendingWrites == 0)
    #expect(h.runtime.core.lostAtStop.isEmpty)
    let unfinished = try h.store.unfinishedSessions()
    guard unfinished.count == 1, case .resumable(let resumable) = unfinished[0] else {
      Issue.record("not one resumable session: \(unfinished)")
      return
    }
    #expect(resumable.session.state == .running, "resumed as it was at the next start")
    #expect(resumable.lastCommit.moment.monotonic >= 1005)
  }
}
