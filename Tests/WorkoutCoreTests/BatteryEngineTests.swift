import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutCore

@Suite("The battery in the engine")
struct BatteryEngineTests {
  func battery(_ level: Double, charging: Bool = false) -> EngineInput {
    .reading(
      .battery(
        BatteryReading(
          supply: "sbs-1-000b", level: level, voltage: 3.7, current: charging ? 0.5 : -0.4,
          status: charging ? .charging : .discharging)))
  }

  func events(_ h: EngineHarness, _ kind: SessionEvent.Kind) -> [(Int64?, SessionEvent)] {
    h.commands.compactMap {
      if case .recordEvent(let id, let event) = $0, event.kind == kind { return (id, event) }
      return nil
    }
  }

  func running() -> EngineHarness {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    return h
  }

  @Test("low warns once (event, buzzer, LED); critical counts down, then the system stops and ends the ride")
  func lowThenCriticalEndsTheRide() {
    var h = running()
    h.send(battery(40))
    #expect(h.engine.indicator == .running)
    for level in [15.0, 16, 15, 14] {
      h.advance(by: 30)
      h.send(battery(level))
      h.send(.tick)
    }
    let low = events(h, .batteryLow)
    #expect(low.count == 1)
    #expect(low.first?.0 == 1)
    #expect(low.first?.1.value == 15)
    #expect(h.commands.contains(.chirp(.lowBattery)))
    #expect(h.engine.indicator == .lowBattery)
    #expect(h.engine.state == .running)

    h.advance(by: 30)
    h.send(battery(5))
    let critical = events(h, .batteryCritical)
    #expect(critical.count == 1)
    #expect(critical.first?.1.detail?.contains("level 5 %") == true)
    let deadline = h.now.monotonic + 60
    #expect(h.engine.nextDeadline == deadline)
    #expect(h.engine.status(at: h.now).battery?.countdownRemaining == 60)
    #expect(h.engine.status(at: h.now).battery?.alert == .critical)
    #expect(!h.commands.contains { if case .powerOff = $0 { true } else { false } })

    h.advance(by: 60)
    h.send(.wakeup)
    #expect(h.engine.state == .ended)
    let stop = h.transitions.first { $0.to == .stopped }
    #expect(stop?.cause == "system")
    #expect(stop?.detail == "lowBattery")
    #expect(h.summaries.count == 1)
    #expect(h.commands.filter { $0 == .powerOff(afterSession: 1) }.count == 1)
    // Once: later readings and wakeups ask for nothing more.
    h.advance(by: 10)
    h.send(battery(4))
    h.send(.wakeup)
    #expect(h.commands.filter { if case .powerOff = $0 { true } else { false } }.count == 1)
  }

  @Test("a charger plugged in during the countdown cancels it: the ride goes on")
  func chargerCancels() {
    var h = running()
    h.send(battery(5))
    #expect(events(h, .batteryCritical).count == 1)
    h.advance(by: 20)
    h.send(battery(5, charging: true))
    #expect(events(h, .batteryCountdownCancelled).map(\.1.detail) == ["a charger is plugged in"])
    #expect(h.engine.nextDeadline == nil)
    for _ in 0..<90 {
      h.advance(by: 1)
      h.send(.tick)
    }
    #expect(h.engine.state == .running)
    #expect(!h.commands.contains { if case .powerOff = $0 { true } else { false } })
    #expect(h.engine.status(at: h.now).battery?.onCharger == true)
  }

  @Test("an idle board at critical powers off, with the events the service's own")
  func idleBoardPowersOff() {
    var h = EngineHarness()
    h.send(battery(3))
    let critical = events(h, .batteryCritical)
    #expect(critical.count == 1)
    #expect(critical.first?.0 == nil)
    #expect(critical.first?.1.detail?.contains("the board powers off") == true)
    #expect(h.engine.indicator == .lowBattery)
    h.advance(by: 60)
    h.send(.wakeup)
    #expect(h.commands.filter { $0 == .powerOff(afterSession: nil) }.count == 1)
    #expect(h.engine.session == nil)
  }

  @Test("a board without a gauge runs as today: no battery status, no events, an absent gauge no fault")
  func noBattery() {
    var plain = running()
    var position = GeoPoint(latitude: 45, longitude: 6)
    plain.ride(seconds: 30, speed: 5, from: &position)
    var absent = running()
    absent.send(.device(DeviceStatus(device: .battery, condition: .absent, detail: "no power_supply of type Battery")))
    var position2 = GeoPoint(latitude: 45, longitude: 6)
    absent.ride(seconds: 30, speed: 5, from: &position2)
    #expect(plain.engine.status(at: plain.now).battery == nil)
    #expect(absent.engine.status(at: absent.now).battery == nil)
    #expect(absent.engine.indicator == .running)
    #expect(absent.engine.faultyDevices.isEmpty)
    #expect(plain.points.count == absent.points.count)
    #expect(
      !(plain.commands + absent.commands).contains {
        if case .recordEvent(_, let event) = $0 { event.kind.rawValue.hasPrefix("battery") } else { false }
      })
    // A gauge that was there and went is a fault.
    absent.send(.device(DeviceStatus(device: .battery, condition: .lost, detail: "sbs-1-000b went")))
    #expect(absent.engine.faultyDevices == [.battery])
    #expect(absent.engine.indicator == .fault)
  }

  @Test("status carries the level, the drain of this ride and the time left")
  func status() {
    var h = running()
    for minute in 0...30 {
      h.send(battery(80 - Double(minute) * 0.2))
      for _ in 0..<60 {
        h.advance(by: 1)
        h.send(.tick)
      }
    }
    let status = h.engine.status(at: h.now).battery
    #expect(status?.supply == "sbs-1-000b")
    #expect(status?.level == 74)
    #expect(status?.voltage == 3.7)
    #expect(status?.status == .discharging)
    let drain = status?.drainPerHour ?? 0
    #expect(abs(drain - 12) < 0.5, "\(drain)")
    let left = status?.timeLeft ?? 0
    #expect(abs(left - 74.0 / 12 * 3600) < 600, "\(left)")
    #expect(status?.alert == .normal)
    #expect(status?.countdownRemaining == nil)
  }
}
