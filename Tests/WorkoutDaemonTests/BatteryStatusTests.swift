import Foundation
import Testing
import WorkoutControl
import WorkoutTestSupport

@testable import WorkoutCore

/// The battery in `workoutctl status`: its line, and `--json`'s `battery` object beside the
/// keys scripts already read.
struct BatteryStatusTests {
  func report(_ inputs: (inout EngineHarness) -> Void) -> StatusReport {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    inputs(&h)
    return StatusReport(
      engine: h.engine.status(at: h.now), board: "sim", boardTime: h.now.monotonic, devices: [:],
      storage: .init(database: "/var/lib/workoutd/workoutd.db", pendingWrites: 0, failing: false, lastError: nil))
  }

  static func reading(_ level: Double, status: BatteryReading.Status = .discharging) -> EngineInput {
    .reading(.battery(BatteryReading(supply: "BAT0", level: level, voltage: 3.81, current: -0.35, status: status)))
  }

  /// Half an hour falling 0.2 % a minute from 65 %: 12 %/h, 59 % left.
  static func halfAnHour(_ h: inout EngineHarness) {
    for minute in 0...30 {
      h.send(reading(65 - Double(minute) * 0.2))
      h.advance(by: 60)
    }
  }

  @Test func theLineSaysTheLevelTheStatusAndTheTimeLeft() {
    let status = report(Self.halfAnHour)
    #expect(BatteryText.line(status.battery) == "battery 59 % discharging, 4 h 55 min left (drain 12.0 %/h)")
  }

  @Test func noGaugeIsNoBatteryInformation() {
    let status = report { _ in }
    #expect(status.battery == nil)
    #expect(BatteryText.line(status.battery) == "no battery information")
  }

  @Test func lowAndCriticalAreSaid() {
    let low = report { $0.send(Self.reading(14)) }
    #expect(BatteryText.line(low.battery) == "battery 14 % discharging; LOW")
    let critical = report {
      $0.send(Self.reading(5))
      $0.advance(by: 17.5)
    }
    #expect(
      BatteryText.line(critical.battery)
        == "battery 5 % discharging; CRITICAL: the ride is saved and ended, and the board powered off, in 43 s unless a charger is plugged in"
    )
    let charging = report { $0.send(Self.reading(40, status: .charging)) }
    #expect(BatteryText.line(charging.battery) == "battery 40 % charging")
    let voltageOnly = BatteryText.line(
      .init(supply: "ups", voltage: 3.905, status: .discharging, onCharger: false, alert: .normal))
    #expect(voltageOnly == "battery discharging, 3.91 V")
  }

  @Test func theJSONHasABatteryObjectAndKeepsItsKeys() throws {
    let status = report(Self.halfAnHour)
    let object = try #require(
      try JSONSerialization.jsonObject(with: Data(ControlJSON.encode(status).utf8)) as? [String: Any])
    #expect(object["sessionId"] as? Int == 1)
    #expect(object["state"] as? String == "running")
    let battery = try #require(object["battery"] as? [String: Any])
    #expect(battery["level"] as? Double == 59)
    #expect(battery["voltage"] as? Double == 3.81)
    #expect(battery["status"] as? String == "discharging")
    #expect(battery["alert"] as? String == "normal")
    #expect(abs((battery["drainPerHour"] as? Double ?? 0) - 12) < 0.01)
    #expect(battery["timeLeft"] as? Double != nil)
    #expect(battery["countdownRemaining"] == nil)
    let none = try #require(
      try JSONSerialization.jsonObject(with: Data(ControlJSON.encode(report { _ in }).utf8)) as? [String: Any])
    #expect(none["battery"] == nil)
  }
}
