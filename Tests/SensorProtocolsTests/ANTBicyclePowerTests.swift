import Testing
import WorkoutCore

@testable import SensorProtocols

/// A power-only page (0x10).
private func powerOnly(event: UInt8, pedal: UInt8, cadence: UInt8, accumulated: UInt16, power: UInt16) -> [UInt8] {
  [
    0x10, event, pedal, cadence, UInt8(accumulated & 0xFF), UInt8(accumulated >> 8), UInt8(power & 0xFF),
    UInt8(power >> 8),
  ]
}

/// A torque page (0x11 wheel, 0x12 crank).
private func torque(
  _ page: UInt8, event: UInt8, ticks: UInt8, cadence: UInt8 = 0xFF, period: UInt16, torque: UInt16
)
  -> [UInt8]
{
  [page, event, ticks, cadence, UInt8(period & 0xFF), UInt8(period >> 8), UInt8(torque & 0xFF), UInt8(torque >> 8)]
}

@Suite("ANT+ bicycle power pages and readings")
struct ANTBicyclePowerTests {
  @Test func decodesPowerOnly() throws {
    // Pedal byte 0xB2: bit 7 (right pedal) and 0x32 = 50 %; cadence 90; accumulated 0x1000.
    let page = try ANTBicyclePowerPage(
      payload: powerOnly(event: 5, pedal: 0xB2, cadence: 90, accumulated: 0x1000, power: 200))
    #expect(
      page
        == .powerOnly(
          .init(
            eventCount: 5, pedalPower: .init(percent: 50, rightPedal: true), instantaneousCadence: 90,
            accumulatedPower: 4096, instantaneousPower: 200)))
    // 0xFF: pedal power not used, cadence invalid; 0x32 alone: 50 % of an unknown pedal.
    guard
      case .powerOnly(let none) = try ANTBicyclePowerPage(
        payload: powerOnly(event: 0, pedal: 0xFF, cadence: 0xFF, accumulated: 0, power: 0))
    else { Issue.record("not power-only"); return }
    #expect(none.pedalPower == nil && none.instantaneousCadence == nil)
    guard
      case .powerOnly(let left) = try ANTBicyclePowerPage(
        payload: powerOnly(event: 0, pedal: 0x32, cadence: 0, accumulated: 0, power: 0))
    else { Issue.record("not power-only"); return }
    #expect(left.pedalPower == .init(percent: 50, rightPedal: false) && left.instantaneousCadence == 0)
  }

  @Test func decodesTorquePages() throws {
    let wheel = try ANTBicyclePowerPage(
      payload: torque(0x11, event: 3, ticks: 4, cadence: 80, period: 0x0400, torque: 0x0140))
    #expect(
      wheel
        == .wheelTorque(
          .init(eventCount: 3, ticks: 4, instantaneousCadence: 80, accumulatedPeriod: 1024, accumulatedTorque: 320)))
    let crank = try ANTBicyclePowerPage(payload: torque(0x12, event: 3, ticks: 4, period: 0x0800, torque: 0x0500))
    #expect(
      crank
        == .crankTorque(
          .init(eventCount: 3, ticks: 4, instantaneousCadence: nil, accumulatedPeriod: 2048, accumulatedTorque: 1280)))
    #expect(
      try ANTBicyclePowerPage(payload: [0x01, 0xAC, 0, 0, 0, 0, 0, 0])
        == .other(page: 1, bytes: [0xAC, 0, 0, 0, 0, 0, 0]))
    #expect(throws: ANTDecodeError.truncated(id: 0, needed: 8, available: 3)) {
      try ANTBicyclePowerPage(payload: [0x10, 0, 0])
    }
  }

  @Test func powerOnlyAveragesOverEventsAndRollsOver() throws {
    var r = ANTPowerReadings()
    // The first page: its instantaneous power, and its cadence.
    #expect(
      try r.update(powerOnly(event: 5, pedal: 0xFF, cadence: 90, accumulated: 0x1000, power: 200), at: 0).readings == [
        .power(watts: 200), .cadence(rpm: 90),
      ])
    // Two events, 420 W accumulated: 210 W on average (not the instantaneous 215).
    #expect(
      try r.update(powerOnly(event: 7, pedal: 0xFF, cadence: 0xFF, accumulated: 0x11A4, power: 215), at: 0.5).readings
        == [
          .power(watts: 210)
        ])
    // The same event again: nothing new.
    #expect(
      try r.update(powerOnly(event: 7, pedal: 0xFF, cadence: 0xFF, accumulated: 0x11A4, power: 215), at: 0.75).readings
        == [])
    var roll = ANTPowerReadings()
    _ = try roll.update(powerOnly(event: 255, pedal: 0xFF, cadence: 0xFF, accumulated: 0xFF00, power: 300), at: 0)
    // Events 255 → 1 are 2; accumulated 0xFF00 → 0x0190 is 0x0290 = 656 W: 328 W.
    #expect(
      try roll.update(powerOnly(event: 1, pedal: 0xFF, cadence: 0xFF, accumulated: 0x0190, power: 330), at: 0.5)
        .readings == [
          .power(watts: 328)
        ])
  }

  @Test func crankTorqueGivesPowerAndCadence() throws {
    var r = ANTPowerReadings()
    #expect(try r.update(torque(0x12, event: 10, ticks: 10, period: 0, torque: 0), at: 0).readings == [])
    // One event in 2048/2048 s: 60 rpm. 1280/32 = 40 N·m: 128π · 1280 / 2048 = 80π = 251.3 W.
    #expect(
      try r.update(torque(0x12, event: 11, ticks: 11, period: 2048, torque: 1280), at: 1).readings == [
        .power(watts: 251), .cadence(rpm: 60),
      ])
    var roll = ANTPowerReadings()
    _ = try roll.update(torque(0x12, event: 255, ticks: 255, period: 0xF800, torque: 0xFF00), at: 0)
    // Events 255 → 1: 2; period 0xF800 → 0x0800: 4096 (2 s); torque 0xFF00 → 0x0400: 1280.
    // 60 · 2 / 2 = 60 rpm; 128π · 1280 / 4096 = 40π = 125.7 W.
    #expect(
      try roll.update(torque(0x12, event: 1, ticks: 1, period: 0x0800, torque: 0x0400), at: 2).readings == [
        .power(watts: 126), .cadence(rpm: 60),
      ])
  }

  @Test func crankStandingStill() throws {
    var r = ANTPowerReadings()
    _ = try r.update(torque(0x12, event: 10, ticks: 10, period: 0, torque: 0), at: 0)
    _ = try r.update(torque(0x12, event: 11, ticks: 11, period: 2048, torque: 1280), at: 1)
    // A new event with no new period: 0 W, 0 rpm.
    #expect(
      try r.update(torque(0x12, event: 12, ticks: 11, period: 2048, torque: 1280), at: 1.25).readings == [
        .power(watts: 0), .cadence(rpm: 0),
      ])
    // Pedalling again: the standing page is the reference, so the events counted while the
    // crank stood never make a cadence: one event in 1 s, 60 rpm.
    #expect(
      try r.update(torque(0x12, event: 13, ticks: 12, period: 4096, torque: 2560), at: 2.25).readings == [
        .power(watts: 251), .cadence(rpm: 60),
      ])
  }

  @Test func wheelTorqueGivesPowerSpeedAndDistance() throws {
    var r = ANTPowerReadings(wheelCircumference: 2.0)
    _ = try r.update(torque(0x11, event: 255, ticks: 255, period: 0xFE00, torque: 0xFFC0), at: 0)
    // Event and ticks 255 → 0: 1; period 0xFE00 → 0x0200: 1024 (0.5 s); torque 0xFFC0 → 0x0100: 320.
    // 2 m in 0.5 s = 4 m/s; 128π · 320 / 1024 = 40π = 125.7 W.
    #expect(
      try r.update(torque(0x11, event: 0, ticks: 0, period: 0x0200, torque: 0x0100), at: 0.5).readings == [
        .power(watts: 126), .wheelSpeed(metersPerSecond: 4, distance: 2),
      ])
  }

  @Test func implausiblePowerChangesNothing() throws {
    var r = ANTPowerReadings()
    #expect(throws: ANTDecodeError.implausible(field: "power", value: 5000, maximum: 4000, unit: "W")) {
      try r.update(powerOnly(event: 1, pedal: 0xFF, cadence: 0xFF, accumulated: 0, power: 5000), at: 0)
    }
    // Still the first page after the refused one.
    #expect(
      try r.update(powerOnly(event: 2, pedal: 0xFF, cadence: 0xFF, accumulated: 100, power: 100), at: 0.25).readings
        == [
          .power(watts: 100)
        ])
  }
}
