import Foundation
import Testing

@testable import SensorProtocols

/// Heart Rate Measurement payloads published by others, collected with their provenance in the
/// team's corpus (shared/corpus/ble/hr_samples.json). The one MIT-licensed entry is copied in
/// Tests/Fixtures/ble (see its MANIFEST.md); the others are restated here as facts (a few bytes
/// each, and what they mean), naming where they were published, so no test reads ../shared.
struct StrapPayload: Sendable, CustomTestStringConvertible {
  var source: String
  var hex: String
  var heartRate: UInt16
  var contact: HeartRateMeasurement.SensorContact
  var energy: UInt16? = nil
  var rr: [UInt16] = []

  var testDescription: String { "\(source): \(hex)" }

  static let all: [StrapPayload] = [
    // Polar H7, gatttool notifications (github cal-id/Polar-H7-Pi README).
    .init(source: "Polar H7 (cal-id/Polar-H7-Pi)", hex: "06 3c", heartRate: 60, contact: .detected),
    .init(source: "Polar H7 (cal-id/Polar-H7-Pi)", hex: "16 3c 11 04", heartRate: 60, contact: .detected, rr: [1041]),
    .init(source: "Polar H7 (cal-id/Polar-H7-Pi)", hex: "16 3c f5 03", heartRate: 60, contact: .detected, rr: [1013]),
    // An unbranded strap, gatttool (stackoverflow.com/questions/60599696).
    .init(source: "unbranded strap (SO 60599696)", hex: "16 34 e4 04", heartRate: 52, contact: .detected, rr: [1252]),
    .init(source: "unbranded strap (SO 60599696)", hex: "16 34 a5 04", heartRate: 52, contact: .detected, rr: [1189]),
    .init(source: "unbranded strap (SO 60599696)", hex: "16 33 ea 04", heartRate: 51, contact: .detected, rr: [1258]),
    .init(source: "unbranded strap (SO 60599696)", hex: "16 33 de 04", heartRate: 51, contact: .detected, rr: [1246]),
    // Polar H10, Android (stackoverflow.com/questions/67024800): no contact bits.
    .init(source: "Polar H10 (SO 67024800)", hex: "10 3b 53 04", heartRate: 59, contact: .notSupported, rr: [1107]),
    // Polar H10, gatttool (stackoverflow.com/questions/50477232): two RR-intervals in one.
    .init(source: "Polar H10 (SO 50477232)", hex: "10 48 2c 03", heartRate: 72, contact: .notSupported, rr: [812]),
    .init(
      source: "Polar H10 (SO 50477232)", hex: "10 49 5e 03 96 03", heartRate: 73, contact: .notSupported,
      rr: [862, 918]),
    // Polar H7, iOS CoreBluetooth (a Stack Overflow Q&A on characteristic.value).
    .init(source: "Polar H7 (iOS Q&A)", hex: "16 4d 16 03", heartRate: 77, contact: .detected, rr: [790]),
    .init(source: "Polar H7 (iOS Q&A)", hex: "16 4e 1b 03 12 03", heartRate: 78, contact: .detected, rr: [795, 786]),
    .init(source: "Polar H7 (iOS Q&A)", hex: "16 4f 02 03", heartRate: 79, contact: .detected, rr: [770]),
    .init(source: "Polar H7 (iOS Q&A)", hex: "16 4e 0f 03", heartRate: 78, contact: .detected, rr: [783]),
    // Garmin HRM-Dual (forums.garmin.com, "HRM-Dual - extra data in heart rate characteristic
    // data"): the poster reads the second RR (0x0035 = 52 ms) as extra data. By the
    // specification it is an RR-interval and is kept; judging it is the caller's.
    .init(
      source: "Garmin HRM-Dual (forum)", hex: "10 38 2d 04 35 00", heartRate: 56, contact: .notSupported,
      rr: [1069, 53]),
    // Polar's SDK unit-test vectors (polarofficial/polar-ble-sdk BleHrClientTest.kt): edges.
    .init(source: "Polar SDK test", hex: "00 ff", heartRate: 255, contact: .notSupported),
    .init(source: "Polar SDK test", hex: "00 7f", heartRate: 127, contact: .notSupported),
    .init(source: "Polar SDK test", hex: "01 80 80", heartRate: 32896, contact: .notSupported),
    .init(source: "Polar SDK test", hex: "01 7f 7f", heartRate: 32639, contact: .notSupported),
    .init(source: "Polar SDK test", hex: "06 00", heartRate: 0, contact: .detected),
    .init(source: "Polar SDK test", hex: "04 00", heartRate: 0, contact: .notDetected),
    .init(source: "Polar SDK test", hex: "02 00", heartRate: 0, contact: .notSupported),
    .init(source: "Polar SDK test", hex: "00 00", heartRate: 0, contact: .notSupported),
    .init(source: "Polar SDK test", hex: "09 00 00 ff ff", heartRate: 0, contact: .notSupported, energy: 65535),
    .init(source: "Polar SDK test", hex: "08 00 7f 80", heartRate: 0, contact: .notSupported, energy: 32895),
    .init(source: "Polar SDK test", hex: "10 00 ff ff", heartRate: 0, contact: .notSupported, rr: [65535]),
    .init(
      source: "Polar SDK test", hex: "11 00 00 ff ff 7f 80", heartRate: 0, contact: .notSupported, rr: [65535, 32895]),
    .init(source: "Polar SDK test", hex: "11 00 00 00 00", heartRate: 0, contact: .notSupported, rr: [0]),
  ]
}

@Suite("BLE heart rate: payloads from real straps")
struct BLEStrapPayloadTests {
  @Test(arguments: StrapPayload.all)
  func decodes(_ sample: StrapPayload) throws {
    let m = try HeartRateMeasurement(payload: hexBytes(sample.hex))
    #expect(m.heartRate == sample.heartRate)
    #expect(m.sensorContact == sample.contact)
    #expect(m.energyExpended == sample.energy)
    #expect(m.rrIntervals == sample.rr)
    #expect(m.rrIntervalsSeconds == sample.rr.map { Double($0) / 1024 })
  }

  @Test func sampleTableCoversTheCorpus() {
    // The corpus has 29 entries: 28 restated here and one copied as a fixture.
    #expect(StrapPayload.all.count == 28)
  }

  /// The MIT-licensed ActiGraph example, read from the copied fixture, checked against the
  /// corpus's own decode (rr_ms rounded to 0.01 ms).
  @Test func actigraphFixture() throws {
    var url = URL(fileURLWithPath: #filePath)
    url.deleteLastPathComponent()
    url.deleteLastPathComponent()
    let data = try Data(contentsOf: url.appendingPathComponent("Fixtures/ble/hr_samples_mit.json"))
    let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let samples = try #require(json["samples"] as? [[String: Any]])
    #expect(samples.count == 1)
    for sample in samples {
      let hex = try #require(sample["payload_hex"] as? String)
      let decoded = try #require(sample["decoded"] as? [String: Any])
      let m = try HeartRateMeasurement(payload: hexBytes(hex))
      #expect(Int(m.heartRate) == decoded["hr_bpm"] as? Int)
      #expect(m.sensorContact == .detected)
      #expect(decoded["sensor_contact_detected"] as? Bool == true)
      #expect(m.rrIntervals.map(Int.init) == decoded["rr_1_1024s"] as? [Int])
      let ms = try #require(decoded["rr_ms"] as? [Double])
      #expect(m.rrIntervalsMilliseconds.map { ($0 * 100).rounded() / 100 } == ms)
      #expect(m.rrIntervalsMilliseconds == [1023.4375, 359.375])
    }
  }
}
