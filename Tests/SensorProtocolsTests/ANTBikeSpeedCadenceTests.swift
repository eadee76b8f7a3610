import Testing
import WorkoutCore

@testable import SensorProtocols

private func le(_ values: UInt16...) -> [UInt8] { values.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } }

/// A speed or cadence sensor's page: byte 0, bytes 1–3, event time, revolutions.
private func page(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8, time: UInt16, revs: UInt16) -> [UInt8] {
  [b0, b1, b2, b3] + le(time, revs)
}

@Suite("ANT+ bike speed and cadence")
struct ANTBikeSpeedCadenceTests {
  @Test func decodesTheCombinedLayout() throws {
    let p = try ANTSpeedCadencePage(payload: le(0x0400, 100, 0x0800, 500))
    #expect(p.cadenceEventTime == 1024 && p.cadenceRevolutions == 100)
    #expect(p.speedEventTime == 2048 && p.speedRevolutions == 500)
    #expect(throws: ANTDecodeError.truncated(id: 0, needed: 8, available: 4)) {
      try ANTSpeedCadencePage(payload: [1, 2, 3, 4])
    }
  }

  @Test func decodesEverySpeedSensorPage() throws {
    let p0 = try ANTBikeSensorPage(payload: page(0x80, 0xFF, 0xFF, 0xFF, time: 0x1234, revs: 0xABCD))
    #expect(p0.content == .default && p0.toggle && p0.eventTime == 0x1234 && p0.revolutions == 0xABCD)
    #expect(
      try ANTBikeSensorPage(payload: page(1, 0x10, 0x27, 0, time: 0, revs: 0)).content
        == .background(.operatingTime(seconds: 20_000)))
    #expect(
      try ANTBikeSensorPage(payload: page(2, 7, 0x34, 0x12, time: 0, revs: 0)).content
        == .background(.manufacturer(id: 7, serialUpper: 0x1234)))
    #expect(
      try ANTBikeSensorPage(payload: page(3, 1, 2, 3, time: 0, revs: 0)).content
        == .background(.product(hardware: 1, software: 2, model: 3)))
    // Page 4: 0x40/256 = 0.25 V plus coarse 2 V; status 3, "ok"; no percent in this page.
    let p4 = try ANTBikeSensorPage(payload: page(4, 0xFF, 0x40, 0x32, time: 0, revs: 0))
    guard case .battery(let b) = p4.content else { Issue.record("\(p4)"); return }
    #expect(b.voltage == 2.25 && b.status == .ok && b.percent == nil)
    #expect(
      try ANTBikeSensorPage(payload: page(5, 0x01, 0xFF, 0xFF, time: 0, revs: 0)).content == .motion(stopped: true))
    #expect(
      try ANTBikeSensorPage(payload: page(5, 0x00, 0xFF, 0xFF, time: 0, revs: 0)).content == .motion(stopped: false))
    #expect(
      try ANTBikeSensorPage(payload: page(9, 1, 2, 3, time: 0, revs: 0)).content == .other(page: 9, bytes: [1, 2, 3]))
    #expect(try ANTBikeSensorPage(payload: page(5, 1, 2, 3, time: 0, revs: 0), legacy: true).content == .default)
  }

  @Test func combinedSensorGivesSpeedAndCadence() throws {
    var r = ANTBikeSensorReadings(type: .speedAndCadence, wheelCircumference: 2.0)
    #expect(try r.update(le(0x0400, 100, 0x0800, 500), at: 0).readings == [])
    // Wheel: 2 revolutions of 2 m in 1024/1024 s = 4 m/s. Crank: 2 revolutions in 1 s = 120 rpm.
    let result = try r.update(le(0x0800, 102, 0x0C00, 502), at: 1)
    #expect(result.readings == [.wheelSpeed(metersPerSecond: 4, distance: 4), .cadence(rpm: 120)])
  }

  @Test func everyCounterRollsOver() throws {
    var r = ANTBikeSensorReadings(type: .speedAndCadence, wheelCircumference: 2.0)
    _ = try r.update(le(0xFE00, 0xFFFF, 0xFC00, 0xFFFF), at: 0)
    // Times 0xFE00 → 0x0200 and 0xFC00 → 0x0000 are 1024 ticks; counts 0xFFFF → 1 are 2.
    let result = try r.update(le(0x0200, 1, 0x0000, 1), at: 1)
    #expect(result.readings == [.wheelSpeed(metersPerSecond: 4, distance: 4), .cadence(rpm: 120)])
    var speed = ANTBikeSensorReadings(type: .speed, wheelCircumference: 2.0)
    _ = try speed.update(page(0x00, 0xFF, 0xFF, 0xFF, time: 0xFF00, revs: 0xFFFE), at: 0)
    // 0xFFFE → 0x0001 is 3 revolutions; 0xFF00 → 0x0200 is 768 ticks: 6 m in 0.75 s = 8 m/s.
    #expect(
      try speed.update(page(0x00, 0xFF, 0xFF, 0xFF, time: 0x0200, revs: 1), at: 0.75).readings == [
        .wheelSpeed(metersPerSecond: 8, distance: 6)
      ])
    var cadence = ANTBikeSensorReadings(type: .cadence)
    _ = try cadence.update(page(0x80, 0xFF, 0xFF, 0xFF, time: 0xFC00, revs: 0xFFFF), at: 0)
    // One revolution in 0x10000 - 0xFC00 = 1024 ticks: 60 rpm.
    #expect(
      try cadence.update(page(0x80, 0xFF, 0xFF, 0xFF, time: 0x0000, revs: 0), at: 1).readings == [.cadence(rpm: 60)])
  }

  @Test func bleWheelCounterStaysUInt32() throws {
    // The same roll-over of 16 bits in BLE's 32-bit counter is 65,538 revolutions: refused.
    var ble = try #require(WheelSpeedCalculator(circumference: 2.0))
    let at = { (revs: UInt32, time: UInt16) in
      WheelRevolutionData(cumulativeRevolutions: revs, lastEventTime: time, eventTimeUnit: .oneOver1024)
    }
    _ = ble.update(at(0xFFFF, 0xFC00), at: 0)
    guard case .rejected = ble.update(at(1, 0), at: 1) else { Issue.record("accepted"); return }
    #expect(WheelSpeedCalculator(circumference: 2.0, counterBits: 7) == nil)
    #expect(CrankCadenceCalculator(counterBits: 33) == nil)
  }

  @Test func stoppedWheelAndShortMessages() throws {
    var r = ANTBikeSensorReadings(type: .speed, wheelCircumference: 2.0)
    _ = try r.update(page(0, 0xFF, 0xFF, 0xFF, time: 0, revs: 10), at: 0)
    _ = try r.update(page(0, 0xFF, 0xFF, 0xFF, time: 1024, revs: 12), at: 1)
    // No new event for 3 s: stopped, as a BLE sensor's.
    #expect(
      try r.update(page(0, 0xFF, 0xFF, 0xFF, time: 1024, revs: 12), at: 4).readings == [
        .wheelSpeed(metersPerSecond: 0, distance: 0)
      ])
    #expect(throws: ANTDecodeError.truncated(id: 0, needed: 8, available: 7)) {
      try r.update([0, 0, 0, 0, 0, 0, 0], at: 5)
    }
  }
}
