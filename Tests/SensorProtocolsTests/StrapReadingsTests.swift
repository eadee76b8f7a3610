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
}
