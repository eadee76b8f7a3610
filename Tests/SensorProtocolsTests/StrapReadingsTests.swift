import Testing
import WorkoutCore

@testable import SensorProtocols

@Suite("Strap values to the engine's readings")
struct StrapReadingsTests {
  @Test func heartRateWithContactAndRRIntervals() throws {
    var strap = StrapReadings()
    // Flags 0x16: uint8, contact supported and detected, RR present; 72 bpm; RR 1024 and 1008.
    let r = try strap.update(.heartRateMeasurement, [0x16, 72, 0x00, 0x04, 0xF0, 0x03], at: 0)
    #expect(r.readings == [.heartRate(bpm: 72)])
    #expect(r.contact == .detected)
    #expect(r.rrIntervals == [1024, 1008])
    // Contact supported, not detected: the value is no one's heart rate.
    let off = try strap.update(.heartRateMeasurement, [0x04, 72], at: 1)
    #expect(off.readings.isEmpty && off.contact == .notDetected)
    // No contact feature, and 0 bpm while settling: nothing either; a uint16 value is taken.
    #expect(try strap.update(.heartRateMeasurement, [0x00, 0], at: 2).readings.isEmpty)
    #expect(try strap.update(.heartRateMeasurement, [0x01, 0x2C, 0x01], at: 3).readings == [.heartRate(bpm: 300)])
  }

  @Test func heartRateOrPowerBeyondAnyRiderIsRefusedWhole() throws {
    var strap = StrapReadings()
    // uint16 form: 300 bpm is taken, 301 and 60,000 are a faulty strap's; contact and RR
    // intervals of that value are dropped with it, and the error names the figure.
    #expect(try strap.update(.heartRateMeasurement, [0x01, 0x2C, 0x01], at: 0).readings == [.heartRate(bpm: 300)])
    for bpm: UInt16 in [301, 60_000, .max] {
      #expect(
        throws: BLEDecodeError.implausible(
          .heartRateMeasurement, .heartRate, value: Int(bpm), maximum: 300, unit: "bpm")
      ) {
        try strap.update(.heartRateMeasurement, [0x17, UInt8(bpm & 0xFF), UInt8(bpm >> 8), 0x00, 0x04], at: 1)
      }
    }
    let words = BLEDecodeError.implausible(.heartRateMeasurement, .heartRate, value: 60_000, maximum: 300, unit: "bpm")
    #expect(words.description.contains("60000 bpm") && words.description.contains("at most 300 bpm"), "\(words)")
    // A strap without contact says so whatever number it sends: not a fault.
    #expect(try strap.update(.heartRateMeasurement, [0x05, 0x60, 0xEA], at: 2).readings.isEmpty)

    var meter = StrapReadings()
    // 4,000 W is taken; 4,001 and 32,767 (the sint16's largest) are not, and the crank pair
    // in the same value does not move the reference: the next pair is timed from the last good one.
    let crank: [UInt8] = [0x64, 0x00, 0x00, 0x04]
    #expect(
      try meter.update(.cyclingPowerMeasurement, [0x20, 0x00, 0xA0, 0x0F] + crank, at: 0).readings == [
        .power(watts: 4000)
      ])
    for watts: UInt16 in [4001, 0x7FFF] {
      #expect(
        throws: BLEDecodeError.implausible(
          .cyclingPowerMeasurement, .instantaneousPower, value: Int(watts), maximum: 4000, unit: "W")
      ) {
        try meter.update(
          .cyclingPowerMeasurement, [0x20, 0x00, UInt8(watts & 0xFF), UInt8(watts >> 8), 0x65, 0x00, 0x00, 0x06], at: 1)
      }
    }
    // Two revolutions in 2 s since the good pair (1024 → 3072 ticks): 60 rpm (timed from the
    // refused pair, at 1536 ticks, it would be one revolution in 1.5 s: 40 rpm).
    let after = try meter.update(.cyclingPowerMeasurement, [0x20, 0x00, 0xFA, 0x00, 0x66, 0x00, 0x00, 0x0C], at: 2)
    #expect(after.readings == [.power(watts: 250), .cadence(rpm: 60)], "\(after.readings)")
  }

  @Test func powerAndItsCrankCadence() throws {
    var meter = StrapReadings()
    // Flags 0x0020: crank revolution data; 250 W; 100 revolutions at 1024/1024 s.
    let first = try meter.update(.cyclingPowerMeasurement, [0x20, 0x00, 0xFA, 0x00, 0x64, 0x00, 0x00, 0x04], at: 0)
    #expect(first.readings == [.power(watts: 250)])
    // One revolution in 0.6 s (614.4 ticks ≈ 614): 100 rpm within rounding of the tick.
    let second = try meter.update(.cyclingPowerMeasurement, [0x20, 0x00, 0xFA, 0x00, 0x65, 0x00, 0x66, 0x06], at: 0.6)
    guard case .cadence(let rpm) = second.readings.last else {
      Issue.record("no cadence from the second crank pair: \(second.readings)")
      return
    }
    #expect(abs(rpm - 60 * 1024 / 614) < 1e-9)
    // Back-pedalling shows negative power on some meters: recorded as 0 W.
    #expect(try meter.update(.cyclingPowerMeasurement, [0x00, 0x00, 0xF6, 0xFF], at: 1).readings == [.power(watts: 0)])
  }

  @Test func speedCadencePodCrankAndBattery() throws {
    var pod = StrapReadings()
    // Flags 0x02: crank only; 10 revolutions at 0, then 11 at 1024 ticks (1 s): 60 rpm.
    #expect(try pod.update(.cscMeasurement, [0x02, 0x0A, 0x00, 0x00, 0x00], at: 0).readings.isEmpty)
    #expect(try pod.update(.cscMeasurement, [0x02, 0x0B, 0x00, 0x00, 0x04], at: 1).readings == [.cadence(rpm: 60)])
    #expect(try pod.update(.batteryLevel, [64], at: 1).batteryPercent == 64)
    #expect(throws: BLEDecodeError.self) { try pod.update(.batteryLevel, [101], at: 1) }
    #expect(throws: BLEDecodeError.self) { try pod.update(.cscMeasurement, [0x02, 0x0B], at: 2) }
    // Values of characteristics it does not turn into readings give nothing, and no error.
    #expect(try pod.update(.cscFeature, [0x03, 0x00], at: 2) == StrapReadings.Result())
  }

  @Test func wheelSpeedAndDistanceFromASpeedSensor() throws {
    var pod = StrapReadings(wheelCircumference: 2.105)
    // Flags 0x01: wheel only; 100 revolutions at 0, then 103 at 2048/1024 s: 3 × 2.105 m in 2 s.
    #expect(try pod.update(.cscMeasurement, [0x01, 100, 0, 0, 0, 0x00, 0x00], at: 0).readings.isEmpty)
    let moving = try pod.update(.cscMeasurement, [0x01, 103, 0, 0, 0, 0x00, 0x08], at: 2)
    guard case .wheelSpeed(let speed, let distance) = try #require(moving.readings.first) else {
      Issue.record("no wheel speed: \(moving.readings)")
      return
    }
    #expect(abs(speed - 3 * 2.105 / 2) < 1e-9)
    #expect(abs(distance - 3 * 2.105) < 1e-9)
    // A counter reset (battery change) looks like a jump of 4 billion revolutions: rejected, no
    // distance, and the new reference.
    let reset = try pod.update(.cscMeasurement, [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x0A], at: 3)
    #expect(reset.readings.isEmpty && !reset.pairUsed)
    #expect(reset.refused?.counter == .wheel)
    #expect(reset.refused?.description.hasPrefix("a wheel pair of ") == true)
    #expect(reset.refused?.description.hasSuffix(" km/h (at most 100 km/h)") == true, "\(reset.refused!)")
    // The uint32 counter rolls over: 0xFFFFFFFF → 1 is 2 revolutions, here in 1024/1024 s.
    let rolled = try pod.update(.cscMeasurement, [0x01, 0x01, 0, 0, 0, 0x00, 0x0E], at: 4)
    #expect(rolled.readings == [.wheelSpeed(metersPerSecond: 2 * 2.105, distance: 2 * 2.105)])
    #expect(rolled.pairUsed && rolled.refused == nil)
    // No new event for longer than 3 s: stopped, 0 m/s, no distance.
    #expect(
      try pod.update(.cscMeasurement, [0x01, 0x01, 0, 0, 0, 0x00, 0x0E], at: 8).readings == [
        .wheelSpeed(metersPerSecond: 0, distance: 0)
      ])
  }

  @Test func powerMeterWithWheelAndCrankDataTogether() throws {
    var meter = StrapReadings(wheelCircumference: 2.0)
    // Flags 0x0030: wheel (uint32 + uint16 in 1/2048 s) then crank (uint16 + uint16 in 1/1024 s).
    func payload(watts: UInt8, wheel: UInt32, wheelTime: UInt16, crank: UInt16, crankTime: UInt16) -> [UInt8] {
      [0x30, 0x00, watts, 0x00]
        + (0..<4).map { UInt8(truncatingIfNeeded: wheel >> (8 * $0)) }
        + [UInt8(wheelTime & 0xFF), UInt8(wheelTime >> 8), UInt8(crank & 0xFF), UInt8(crank >> 8)]
        + [UInt8(crankTime & 0xFF), UInt8(crankTime >> 8)]
    }
    let first = try meter.update(
      .cyclingPowerMeasurement, payload(watts: 200, wheel: 10, wheelTime: 0, crank: 5, crankTime: 0), at: 0)
    #expect(first.readings == [.power(watts: 200)])
    // 4 wheel revolutions in 2048/2048 s = 8 m/s; 1 crank revolution in 1024/1024 s = 60 rpm.
    let second = try meter.update(
      .cyclingPowerMeasurement, payload(watts: 210, wheel: 14, wheelTime: 2048, crank: 6, crankTime: 1024), at: 1)
    #expect(
      second.readings == [.power(watts: 210), .wheelSpeed(metersPerSecond: 8, distance: 8), .cadence(rpm: 60)])
  }
}
