import Testing

@testable import SensorProtocols

@Suite("BLE Heart Rate Measurement 0x2A37: the HRS layout byte by byte")
struct BLEHeartRateTests {
  @Test func uint8HeartRateWithContact() throws {
    let m = try HeartRateMeasurement(payload: hexBytes("06 3c"))
    #expect(m.heartRate == 60)
    #expect(!m.uint16Format)
    #expect(m.sensorContact == .detected)
    #expect(m.energyExpended == nil)
    #expect(m.rrIntervals.isEmpty)
    #expect(m.reservedFlags == 0)
  }

  @Test func uint16HeartRate() throws {
    // flags 0x01: uint16 value; 0x012C = 300 (the format allows it; judging it is not the decoder's).
    let m = try HeartRateMeasurement(payload: hexBytes("01 2c 01"))
    #expect(m.heartRate == 300)
    #expect(m.uint16Format)
    #expect(m.sensorContact == .notSupported)
    // uint16 with RR: flags 0x11, HR 0x0048 = 72, RR 0x0400 = 1024/1024 s.
    let r = try HeartRateMeasurement(payload: hexBytes("11 48 00 00 04"))
    #expect(r.heartRate == 72)
    #expect(r.rrIntervals == [1024])
    #expect(r.rrIntervalsSeconds == [1.0])
  }

  @Test(arguments: [
    ("00 3c", HeartRateMeasurement.SensorContact.notSupported),
    ("02 3c", .notSupported),  // bit 1 without bit 2 (support) means nothing
    ("04 3c", .notDetected),
    ("06 3c", .detected),
  ])
  func sensorContact(hex: String, contact: HeartRateMeasurement.SensorContact) throws {
    #expect(try HeartRateMeasurement(payload: hexBytes(hex)).sensorContact == contact)
  }

  @Test func energyExpendedAndSeveralRRIntervals() throws {
    // flags 0x18: energy + RR; HR 80; energy 0x1234 = 4660 kJ; RR 1024, 512, 256, 1041.
    let m = try HeartRateMeasurement(payload: hexBytes("18 50 34 12 00 04 00 02 00 01 11 04"))
    #expect(m.heartRate == 80)
    #expect(m.energyExpended == 4660)
    #expect(m.rrIntervals == [1024, 512, 256, 1041])
    // Exact conversions: n/1024 s and n·125/128 ms are binary fractions.
    #expect(m.rrIntervalsSeconds == [1.0, 0.5, 0.25, 1.0166015625])
    #expect(m.rrIntervalsMilliseconds == [1000, 500, 250, 1016.6015625])
  }

  @Test func energyWithoutRR() throws {
    let m = try HeartRateMeasurement(payload: hexBytes("09 00 00 ff ff"))
    #expect(m.heartRate == 0)
    #expect(m.uint16Format)
    #expect(m.energyExpended == 65535)
    #expect(m.rrIntervals.isEmpty)
  }

  @Test func nineRRIntervalsFillATwentyByteNotification() throws {
    // The default ATT_MTU (23) leaves 20 bytes: flags, uint8 HR and nine RR-intervals (HRS notes).
    var bytes: [UInt8] = [0x10, 0x4b]
    let rr: [UInt16] = [700, 710, 720, 730, 740, 750, 760, 770, 65535]
    for v in rr { bytes.appendLE(v) }
    #expect(bytes.count == 20)
    let m = try HeartRateMeasurement(payload: bytes)
    #expect(m.rrIntervals == rr)
    #expect(m.rrIntervalsSeconds.last == 65535.0 / 1024)
  }

  @Test func rrFlagWithNoIntervalsIsAnEmptyList() throws {
    let m = try HeartRateMeasurement(payload: hexBytes("10 48"))
    #expect(m.heartRate == 72)
    #expect(m.rrIntervals.isEmpty)
  }

  @Test func reservedFlagBitsDoNotShiftFields() throws {
    // bits 5–7 set: ignored for the layout, kept for the caller.
    let m = try HeartRateMeasurement(payload: hexBytes("f6 3c 11 04"))
    #expect(m.heartRate == 60)
    #expect(m.sensorContact == .detected)
    #expect(m.rrIntervals == [1041])
    #expect(m.reservedFlags == 0xE0)
    // A field a newer revision may append after them is tolerated only then.
    let n = try HeartRateMeasurement(payload: hexBytes("e6 3c ab"))
    #expect(n.heartRate == 60)
    #expect(throws: BLEDecodeError.trailingBytes(.heartRateMeasurement, offset: 2, count: 1)) {
      try HeartRateMeasurement(payload: hexBytes("06 3c ab"))
    }
  }

  @Test func malformedPayloadsAreRejectedNamingTheField() {
    let cases: [(String, BLEDecodeError)] = [
      ("", .truncated(.heartRateMeasurement, .flags, offset: 0, needed: 1, available: 0)),
      ("06", .truncated(.heartRateMeasurement, .heartRate, offset: 1, needed: 1, available: 0)),
      ("01 48", .truncated(.heartRateMeasurement, .heartRate, offset: 1, needed: 2, available: 1)),
      ("08 48 01", .truncated(.heartRateMeasurement, .energyExpended, offset: 2, needed: 2, available: 1)),
      ("10 49 5e 03 96", .truncated(.heartRateMeasurement, .rrInterval, offset: 4, needed: 2, available: 1)),
      ("18 49 00", .truncated(.heartRateMeasurement, .energyExpended, offset: 2, needed: 2, available: 1)),
      ("00 48 00", .trailingBytes(.heartRateMeasurement, offset: 2, count: 1)),
      ("08 48 01 00 00", .trailingBytes(.heartRateMeasurement, offset: 4, count: 1)),
    ]
    for (hex, error) in cases {
      #expect(throws: error, "\(hex)") { try HeartRateMeasurement(payload: hexBytes(hex)) }
    }
  }

  @Test func everyPrefixOfAFullPayloadIsRejectedOrAShorterValue() throws {
    let full = hexBytes("19 2c 01 34 12 00 04 00 02")
    _ = try HeartRateMeasurement(payload: full)
    for n in 0..<full.count {
      let prefix = Array(full.prefix(n))
      do {
        let m = try HeartRateMeasurement(payload: prefix)
        // Only a prefix that ends between two RR-intervals is itself a valid value.
        #expect(n == 5 || n == 7, "prefix of \(n) bytes decoded as \(m)")
      } catch {
        guard case .truncated = error else {
          Issue.record("prefix of \(n) bytes: \(error)")
          continue
        }
      }
    }
  }

  @Test func payloadRoundTrips() throws {
    for hex in ["06 3c", "01 2c 01", "18 50 34 12 00 04 00 02", "e4 3c", "1e 48 ff ff 11 04"] {
      let m = try HeartRateMeasurement(payload: hexBytes(hex))
      #expect(m.payload == hexBytes(hex), "\(hex)")
    }
    let built = HeartRateMeasurement(heartRate: 300, rrIntervals: [900])
    #expect(built.uint16Format)
    #expect(try HeartRateMeasurement(payload: built.payload) == built)
  }

  @Test func decodesFromAnyCollection() throws {
    let bytes = hexBytes("ff 16 42 18 04 70 01")
    let m = try HeartRateMeasurement(payload: bytes.dropFirst())
    #expect(m.rrIntervals == [1048, 368])
    let n = try bytes.withUnsafeBytes { raw in try HeartRateMeasurement(payload: raw.dropFirst()) }
    #expect(n == m)
  }

  @Test func errorsDescribeThemselves() {
    let e = BLEDecodeError.truncated(.heartRateMeasurement, .rrInterval, offset: 4, needed: 2, available: 1)
    #expect(e.description.contains("Heart Rate Measurement (0x2A37)"))
    #expect(e.description.contains("RR-interval"))
  }
}
