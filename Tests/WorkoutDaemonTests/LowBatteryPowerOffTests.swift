import Foundation
import Testing
import WorkoutCore
import WorkoutStore

@testable import WorkoutDaemon

/// A critical battery through the real `ServiceRuntime` on its manual clock: the ride stopped
/// and ended by the system (cause `lowBattery`), exported, then the board powered off, once.
@Suite(.serialized)
struct LowBatteryPowerOffTests {
  static func battery(_ level: Double, charging: Bool = false) -> EngineInput {
    .reading(
      .battery(
        BatteryReading(supply: "sbs-1-000b", level: level, status: charging ? .charging : .discharging)))
  }

  /// Rides a minute on a battery at 40 %, then 14 % (low), then 5 % (critical).
  func rideToCritical(_ h: ManualRuntime) {
    h.startRiding()
    h.sensed(Self.battery(40), at: h.clock.now().monotonic)
    h.run(for: 60)
    h.sensed(Self.battery(14), at: h.clock.now().monotonic)
    h.run(for: 10)
    #expect(h.runtime.core.engine.battery.alert == .low)
    h.sensed(Self.battery(5), at: h.clock.now().monotonic)
    h.run(for: 1)
  }

  @Test func aCriticalBatteryEndsTheRideExportsItAndPowersOffOnce() throws {
    let h = try ManualRuntime(exportsInto: "exports", boardPowersOff: true)
    rideToCritical(h)
    #expect(h.runtime.core.engine.state == .running, "the countdown runs")
    #expect(h.outputs.indications.last == .lowBattery)
    #expect(h.outputs.chirps.filter { $0 == .lowBattery }.count == 2, "low, then critical")
    #expect(h.outputs.powerOffs == 0)
    h.run(for: 60)
    #expect(h.runtime.core.engine.state == .ended)
    let session = try #require(try h.store.session(id: 1))
    #expect(session.state == "ended")
    let stop = try h.events().first { $0.kind == "transition" && $0.toState == "stopped" }
    #expect(stop?.cause == "system")
    #expect(stop?.detail == "lowBattery")
    #expect(try h.events().filter { $0.kind == "batteryLow" }.count == 1)
    #expect(try h.events().filter { $0.kind == "batteryCritical" }.count == 1)
    let files = try FileManager.default.contentsOfDirectory(atPath: h.directory + "/exports")
    #expect(files.contains { $0.hasSuffix(".gpx") }, "\(files)")
    #expect(h.outputs.powerOffs == 1)
    #expect(h.logs(containing: "powering the board off") == 1)
    h.sensed(Self.battery(4), at: h.clock.now().monotonic)
    h.run(for: 120)
    #expect(h.outputs.powerOffs == 1, "once")
  }

  @Test func aBoardThatCannotPowerOffSaysItWouldOnce() throws {
    let h = try ManualRuntime(exportsInto: "exports")
    rideToCritical(h)
    h.run(for: 70)
    #expect(h.runtime.core.engine.state == .ended)
    #expect(h.logs(containing: "the board would power off now") == 1)
    #expect(h.runtime.powerOffsRequested == 1)
  }

  @Test func powerOffFalseLeavesTheBoardOnAfterTheRideIsSaved() throws {
    var settings = EngineSettings()
    settings.battery.powerOff = false
    let h = try ManualRuntime(
      engine: SessionEngine(settings: settings), exportsInto: "exports", boardPowersOff: true)
    rideToCritical(h)
    h.run(for: 70)
    #expect(h.runtime.core.engine.state == .ended)
    #expect(h.outputs.powerOffs == 0)
    #expect(h.logs(containing: "the board stays on") == 1)
  }

  @Test func exportsThatCannotBeWrittenHoldThePowerOffAMinuteAtMost() throws {
    let h = try ManualRuntime(exportsInto: "exports", boardPowersOff: true)
    // A file where the exports directory should be: every pass fails.
    FileManager.default.createFile(atPath: h.directory + "/exports", contents: Data("x".utf8))
    rideToCritical(h)
    h.run(for: 61)
    #expect(h.runtime.core.engine.state == .ended)
    #expect(h.outputs.powerOffs == 0, "waiting for the exports")
    h.run(for: 60)
    #expect(h.outputs.powerOffs == 1)
    #expect(h.logs(containing: "is not exported after 1 min") == 1)
  }

  @Test func anIdleBoardAtCriticalPowersOffAtTheCountdownsEnd() throws {
    let h = try ManualRuntime(exportsInto: "exports", boardPowersOff: true)
    h.sensed(Self.battery(4), at: h.clock.now().monotonic)
    h.run(for: 59)
    #expect(h.outputs.powerOffs == 0)
    h.sensed(Self.battery(4), at: h.clock.now().monotonic)
    h.run(for: 2)
    #expect(h.outputs.powerOffs == 1)
    #expect(try h.store.session(id: 1) == nil)
  }

  @Test func aChargerDuringTheCountdownKeepsTheRideAndTheBoardOn() throws {
    let h = try ManualRuntime(exportsInto: "exports", boardPowersOff: true)
    rideToCritical(h)
    h.run(for: 20)
    h.sensed(Self.battery(5, charging: true), at: h.clock.now().monotonic)
    h.run(for: 120)
    #expect(h.runtime.core.engine.state == .running)
    #expect(h.outputs.powerOffs == 0)
    #expect(try h.events().filter { $0.kind == "batteryCountdownCancelled" }.count == 1)
  }
}
