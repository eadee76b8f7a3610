import Testing

@testable import SensorProtocols

/// A heart-rate page: byte 0, bytes 1–3, event time, count, computed heart rate.
private func hr(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8, time: UInt16, count: UInt8, bpm: UInt8) -> [UInt8] {
  [b0, b1, b2, b3, UInt8(time & 0xFF), UInt8(time >> 8), count, bpm]
}

@Suite("ANT+ heart rate pages, heart rate and RR intervals")
struct ANTHeartRateTests {
  @Test func decodesEveryPage() throws {
    // Page 0 with the toggle set: event time 0x1355 = 4949/1024 s, count 34, 72 bpm.
    let p0 = try ANTHeartRatePage(payload: hr(0x80, 0xFF, 0xFF, 0xFF, time: 0x1355, count: 34, bpm: 72))
    #expect(p0.content == .default && p0.toggle && p0.heartBeatEventTime == 4949)
    #expect(p0.heartBeatCount == 34 && p0.computedHeartRate == 72)
    // Page 1: 0x002710 = 10,000 units of 2 s.
    #expect(
      try ANTHeartRatePage(payload: hr(1, 0x10, 0x27, 0, time: 0, count: 0, bpm: 60)).content
        == .background(.operatingTime(seconds: 20_000)))
    // Page 2: manufacturer 1, serial number upper bits 0x1234.
    #expect(
      try ANTHeartRatePage(payload: hr(2, 1, 0x34, 0x12, time: 0, count: 0, bpm: 60)).content
        == .background(.manufacturer(id: 1, serialUpper: 0x1234)))
    // Page 3: hardware 5, software 10, model 33.
    #expect(
      try ANTHeartRatePage(payload: hr(3, 5, 10, 33, time: 0, count: 0, bpm: 60)).content
        == .background(.product(hardware: 5, software: 10, model: 33)))
    // Page 4: previous beat at 0x1000.
    #expect(
      try ANTHeartRatePage(payload: hr(0x84, 0xAB, 0x00, 0x10, time: 0x1355, count: 34, bpm: 72)).content
        == .previousHeartBeat(manufacturerSpecific: 0xAB, eventTime: 0x1000))
    // Page 7: 85 %, 0x80/256 = 0.5 V plus coarse 3 V, status 2 (good).
    let p7 = try ANTHeartRatePage(payload: hr(7, 85, 0x80, 0x23, time: 0, count: 0, bpm: 60))
    #expect(p7.content == .battery(ANTBatteryStatus(fractionalVoltage: 0x80, descriptive: 0x23, percent: 85)))
    guard case .battery(let b) = p7.content else { return }
    #expect(b.percent == 85 && b.voltage == 3.5 && b.status == .good)
    // Page 7 with every field "invalid": level 0xFF, coarse voltage 0xF, status 7.
    let bad = try ANTHeartRatePage(payload: hr(7, 0xFF, 0xFF, 0x7F, time: 0, count: 0, bpm: 60))
    #expect(bad.content == .battery(ANTBatteryStatus(fractionalVoltage: 0xFF, descriptive: 0x7F)))
    guard case .battery(let i) = bad.content else { return }
    #expect(i.percent == nil && i.voltage == nil && i.status == .invalid)
    // Page 5 (swim) is kept as bytes; heart rate 0 is "invalid".
    let p5 = try ANTHeartRatePage(payload: hr(5, 1, 2, 3, time: 0, count: 0, bpm: 0))
    #expect(p5.content == .other(page: 5, bytes: [1, 2, 3]) && p5.computedHeartRate == nil)
    // Legacy: byte 0 is no page number.
    #expect(try ANTHeartRatePage(payload: hr(4, 1, 2, 3, time: 0, count: 0, bpm: 60), legacy: true).content == .default)
  }

  @Test func refusesShortPages() {
    #expect(throws: ANTDecodeError.truncated(id: 0, needed: 8, available: 7)) {
      try ANTHeartRatePage(payload: [0, 0, 0, 0, 0, 0, 0])
    }
    var readings = ANTHeartRateReadings()
    #expect(throws: ANTDecodeError.truncated(id: 0, needed: 8, available: 0)) { try readings.update([], at: 0) }
  }

  @Test func rrFromPage4AcrossTheTimeRollOver() throws {
    var r = ANTHeartRateReadings()
    // Toggle 0 then 1: page numbers are trusted from the second page.
    _ = try r.update(hr(0x04, 0, 0x00, 0xFE, time: 0xFF00, count: 33, bpm: 72), at: 0)
    #expect(!r.pagedFormat)
    // Previous beat 0xFF00, this one 0x0255 after the roll-over: 0x10255 - 0xFF00 = 853/1024 s.
    let result = try r.update(hr(0x84, 0, 0x00, 0xFF, time: 0x0255, count: 34, bpm: 72), at: 0.25)
    #expect(r.pagedFormat)
    #expect(result.readings == [.heartRate(bpm: 72)] && result.rrIntervals == [853])
    // The same beat again: no new interval.
    #expect(try r.update(hr(0x84, 0, 0x00, 0xFF, time: 0x0255, count: 34, bpm: 72), at: 0.5).rrIntervals == [])
  }

  @Test func rrFromSuccessiveBeatsAcrossTheCountRollOver() throws {
    var r = ANTHeartRateReadings()
    _ = try r.update(hr(0x00, 0xFF, 0xFF, 0xFF, time: 0xFE00, count: 255, bpm: 72), at: 0)
    // Count 255 → 0 is one beat; time 0xFE00 → 0x0155 is 0x10155 - 0xFE00 = 853.
    #expect(try r.update(hr(0x80, 0xFF, 0xFF, 0xFF, time: 0x0155, count: 0, bpm: 72), at: 0.8).rrIntervals == [853])
    // Two beats in one step (a page lost) give no interval: the one between is unknown.
    #expect(try r.update(hr(0x80, 0xFF, 0xFF, 0xFF, time: 0x0755, count: 2, bpm: 72), at: 2.5).rrIntervals == [])
    // After a long silence, no interval either (the time may have rolled over).
    #expect(try r.update(hr(0x80, 0xFF, 0xFF, 0xFF, time: 0x0A55, count: 3, bpm: 72), at: 40).rrIntervals == [])
  }

  @Test func legacySensorIsReadByItsCommonBytes() throws {
    var r = ANTHeartRateReadings()
    // Byte 0 stays 0x04 (its toggle never flips): bytes 2–3 are not a previous beat's time.
    var rr: [UInt16] = []
    for beat in 0..<10 {
      let result = try r.update(
        hr(0x04, 9, 9, 9, time: UInt16(beat * 800), count: UInt8(beat), bpm: 77), at: Double(beat) * 0.8)
      #expect(result.readings == [.heartRate(bpm: 77)])
      rr += result.rrIntervals
    }
    #expect(!r.pagedFormat)
    #expect(rr == Array(repeating: 800, count: 9))
  }

  @Test func batteryPageGivesThePercent() throws {
    var r = ANTHeartRateReadings()
    _ = try r.update(hr(0x00, 0xFF, 0xFF, 0xFF, time: 0, count: 0, bpm: 0), at: 0)
    let result = try r.update(hr(0x87, 40, 0, 0x13, time: 0, count: 0, bpm: 0), at: 0.25)
    #expect(result.batteryPercent == 40 && result.readings == [])
  }
}
