import Testing

@testable import SensorProtocols

@Suite("BLE Cycling Power Measurement 0x2A63 and CSC Measurement 0x2A5B, byte by byte")
struct BLECyclingTests {
  @Test func powerOnly() throws {
    let m = try CyclingPowerMeasurement(payload: hexBytes("00 00 64 00"))
    #expect(m.instantaneousPower == 100)
    #expect(m.wheel == nil && m.crank == nil && m.pedalPowerBalance == nil)
    #expect(try CyclingPowerMeasurement(payload: hexBytes("00 00 9c ff")).instantaneousPower == -100)
  }

  @Test func wheelAndCrankTogether() throws {
    // flags 0x0030; power 250 W; wheel 10000 revs at 0x0800 = 2048/2048 s = 1 s; crank 300 revs
    // at 0x0400 = 1024/1024 s = 1 s. The crank data starts at byte 10, after 6 bytes of wheel data.
    let m = try CyclingPowerMeasurement(payload: hexBytes("30 00 fa 00 10 27 00 00 00 08 2c 01 00 04"))
    #expect(m.instantaneousPower == 250)
    #expect(
      m.wheel == WheelRevolutionData(cumulativeRevolutions: 10000, lastEventTime: 0x0800, eventTimeUnit: .oneOver2048))
    #expect(m.wheel?.lastEventTimeSeconds == 1.0)
    #expect(m.crank == CrankRevolutionData(cumulativeRevolutions: 300, lastEventTime: 0x0400))
    #expect(m.crank?.lastEventTimeSeconds == 1.0)
  }

  /// Every field present: flags 0x1FFF (bits 0–12, with the left-pedal reference, crank-based
  /// torque and the offset compensation indicator).
  static let allFields = hexBytes(
    "ff 1f  2c 01  64  40 06  45 23 01 00 00 10  c8 00 00 0c  90 01 ce ff  20 03 e0 ff  b4 e0 10  0a 00  be 00  02 01"
  )

  @Test func everyOptionalField() throws {
    let bytes = Self.allFields
    #expect(bytes.count == 34)
    let m = try CyclingPowerMeasurement(payload: bytes)
    #expect(m.instantaneousPower == 300)
    #expect(m.pedalPowerBalance == .init(raw: 100, referenceIsLeft: true))
    #expect(m.pedalPowerBalance?.percent == 50)
    #expect(m.accumulatedTorque == .init(raw: 1600, crankBased: true))
    #expect(m.accumulatedTorque?.newtonMetres == 50)
    #expect(
      m.wheel == WheelRevolutionData(cumulativeRevolutions: 0x12345, lastEventTime: 0x1000, eventTimeUnit: .oneOver2048)
    )
    #expect(m.wheel?.lastEventTimeSeconds == 2.0)
    #expect(m.crank == CrankRevolutionData(cumulativeRevolutions: 200, lastEventTime: 0x0C00))
    #expect(m.crank?.lastEventTimeSeconds == 3.0)
    #expect(m.extremeForceMagnitudes == .init(maximum: 400, minimum: -50))
    #expect(m.extremeTorqueMagnitudes == .init(maximum: 800, minimum: -32))
    #expect(m.extremeAngles == .init(maximum: 180, minimum: 270))
    #expect(m.topDeadSpotAngle == 10)
    #expect(m.bottomDeadSpotAngle == 190)
    #expect(m.accumulatedEnergy == 258)
    #expect(m.offsetCompensationIndicator)
    #expect(m.reservedFlags == 0)
    #expect(m.flags == 0x1FFF)
    #expect(m.payload == bytes)
  }

  /// Each optional field alone, followed by the accumulated energy (the last field): the energy
  /// reads right only if the field before it was skipped by its real size.
  @Test(arguments: [(0, 1), (2, 2), (4, 6), (5, 4), (6, 4), (7, 4), (8, 3), (9, 2), (10, 2)])
  func eachFieldHasItsRealSize(bit: Int, size: Int) throws {
    let flags = UInt16(1) << UInt16(bit) | 1 << 11
    var bytes: [UInt8] = []
    bytes.appendLE(flags)
    bytes.appendLE(Int16(123))
    bytes += Array(repeating: 0xAA, count: size)
    bytes.appendLE(UInt16(0x3412))
    let m = try CyclingPowerMeasurement(payload: bytes)
    #expect(m.instantaneousPower == 123)
    #expect(m.accumulatedEnergy == 0x3412)
    #expect(m.payload == bytes)
    // One byte fewer in the field is a short value, never a shifted one.
    #expect(throws: BLEDecodeError.self) { try CyclingPowerMeasurement(payload: bytes.dropLast()) }
  }

  @Test func flagBitsWithoutFieldsAndReservedBits() throws {
    // bits 1 and 3 (balance reference, torque source) without their fields: no bytes, nothing set.
    let m = try CyclingPowerMeasurement(payload: hexBytes("0a 00 64 00"))
    #expect(m.pedalPowerBalance == nil && m.accumulatedTorque == nil)
    // RFU bits 13–15 with crank data: the crank data is where it always is.
    let r = try CyclingPowerMeasurement(payload: hexBytes("20 e0 64 00 2c 01 00 04"))
    #expect(r.crank == CrankRevolutionData(cumulativeRevolutions: 300, lastEventTime: 1024))
    #expect(r.reservedFlags == 0xE000)
    // With an RFU bit set, a field appended by a newer revision is tolerated; without, not.
    #expect(try CyclingPowerMeasurement(payload: hexBytes("00 20 64 00 01 02")).instantaneousPower == 100)
    #expect(throws: BLEDecodeError.trailingBytes(.cyclingPowerMeasurement, offset: 4, count: 2)) {
      try CyclingPowerMeasurement(payload: hexBytes("00 00 64 00 01 02"))
    }
  }

  @Test func truncatedPowerPayloadsNameTheField() {
    let all = Self.allFields
    let cases: [(Int, BLEField, Int, Int)] = [
      // (bytes kept, field, its offset, its size)
      (0, .flags, 0, 2), (1, .flags, 0, 2), (3, .instantaneousPower, 2, 2), (4, .pedalPowerBalance, 4, 1),
      (6, .accumulatedTorque, 5, 2), (9, .cumulativeWheelRevolutions, 7, 4), (11, .lastWheelEventTime, 11, 2),
      (14, .cumulativeCrankRevolutions, 13, 2), (16, .lastCrankEventTime, 15, 2),
      (18, .extremeForceMagnitudes, 17, 2), (20, .extremeForceMagnitudes, 19, 2),
      (24, .extremeTorqueMagnitudes, 23, 2), (27, .extremeAngles, 25, 3), (28, .topDeadSpotAngle, 28, 2),
      (31, .bottomDeadSpotAngle, 30, 2), (33, .accumulatedEnergy, 32, 2),
    ]
    for (kept, field, offset, size) in cases {
      let error = BLEDecodeError.truncated(
        .cyclingPowerMeasurement, field, offset: offset, needed: size, available: kept - offset)
      #expect(throws: error, "\(kept) bytes") { try CyclingPowerMeasurement(payload: all.prefix(kept)) }
    }
    // And every prefix is rejected: each field of the full value is needed.
    for n in 0..<all.count {
      #expect(throws: BLEDecodeError.self) { try CyclingPowerMeasurement(payload: all.prefix(n)) }
    }
  }

  @Test func cscWheelOnly() throws {
    let m = try CSCMeasurement(payload: hexBytes("01 10 27 00 00 00 04"))
    #expect(
      m.wheel == WheelRevolutionData(cumulativeRevolutions: 10000, lastEventTime: 1024, eventTimeUnit: .oneOver1024))
    #expect(m.wheel?.lastEventTimeSeconds == 1.0)
    #expect(m.crank == nil)
  }

  @Test func cscCrankOnly() throws {
    let m = try CSCMeasurement(payload: hexBytes("02 2c 01 00 08"))
    #expect(m.wheel == nil)
    #expect(m.crank == CrankRevolutionData(cumulativeRevolutions: 300, lastEventTime: 2048))
    #expect(m.crank?.lastEventTimeSeconds == 2.0)
  }

  @Test func cscWheelAndCrank() throws {
    let m = try CSCMeasurement(payload: hexBytes("03 ff ff ff ff ff ff fe ff 01 80"))
    #expect(
      m.wheel == WheelRevolutionData(cumulativeRevolutions: .max, lastEventTime: .max, eventTimeUnit: .oneOver1024))
    #expect(m.crank == CrankRevolutionData(cumulativeRevolutions: 0xFFFE, lastEventTime: 0x8001))
    #expect(m.payload == hexBytes("03 ff ff ff ff ff ff fe ff 01 80"))
  }

  @Test func cscNoDataAndReservedBits() throws {
    #expect(try CSCMeasurement(payload: [0x00]) == CSCMeasurement())
    let r = try CSCMeasurement(payload: hexBytes("06 2c 01 00 08"))
    #expect(r.crank == CrankRevolutionData(cumulativeRevolutions: 300, lastEventTime: 2048))
    #expect(r.reservedFlags == 0x04)
    #expect(r.payload == hexBytes("06 2c 01 00 08"))
  }

  @Test func cscMalformed() {
    let cases: [(String, BLEDecodeError)] = [
      ("", .truncated(.cscMeasurement, .flags, offset: 0, needed: 1, available: 0)),
      ("01 10 27 00", .truncated(.cscMeasurement, .cumulativeWheelRevolutions, offset: 1, needed: 4, available: 3)),
      ("01 10 27 00 00 00", .truncated(.cscMeasurement, .lastWheelEventTime, offset: 5, needed: 2, available: 1)),
      (
        "03 10 27 00 00 00 04 2c",
        .truncated(.cscMeasurement, .cumulativeCrankRevolutions, offset: 7, needed: 2, available: 1)
      ),
      ("02 2c 01 00", .truncated(.cscMeasurement, .lastCrankEventTime, offset: 3, needed: 2, available: 1)),
      ("02 2c 01 00 08 00", .trailingBytes(.cscMeasurement, offset: 5, count: 1)),
      // Wheel data announced but crank-sized data sent (a sensor that mixes up its flags).
      ("01 2c 01 00 08", .truncated(.cscMeasurement, .lastWheelEventTime, offset: 5, needed: 2, available: 0)),
    ]
    for (hex, error) in cases {
      #expect(throws: error, "\(hex)") { try CSCMeasurement(payload: hexBytes(hex)) }
    }
  }
}

@Suite("BLE readable characteristics: battery, body sensor location, CSC and CP features")
struct BLEReadableTests {
  @Test func batteryLevel() throws {
    #expect(try BatteryLevel(payload: [0]).percent == 0)
    #expect(try BatteryLevel(payload: [100]).percent == 100)
    #expect(throws: BLEDecodeError.outOfRange(.batteryLevel, .batteryLevel, value: 101)) {
      try BatteryLevel(payload: [101])
    }
    #expect(throws: BLEDecodeError.outOfRange(.batteryLevel, .batteryLevel, value: 255)) {
      try BatteryLevel(payload: [255])
    }
    #expect(throws: BLEDecodeError.truncated(.batteryLevel, .batteryLevel, offset: 0, needed: 1, available: 0)) {
      try BatteryLevel(payload: [])
    }
    #expect(throws: BLEDecodeError.trailingBytes(.batteryLevel, offset: 1, count: 1)) {
      try BatteryLevel(payload: [50, 0])
    }
  }

  @Test func bodySensorLocation() throws {
    let names: [BodySensorLocation] = [.other, .chest, .wrist, .finger, .hand, .earLobe, .foot]
    for (raw, location) in names.enumerated() {
      #expect(try BodySensorLocation(payload: [UInt8(raw)]) == location)
      #expect(location.payload == [UInt8(raw)])
    }
    #expect(try BodySensorLocation(payload: [7]) == .reserved(7))
    #expect(try BodySensorLocation(payload: [0xFF]).rawValue == 0xFF)
    #expect(throws: BLEDecodeError.self) { try BodySensorLocation(payload: []) }
    #expect(throws: BLEDecodeError.self) { try BodySensorLocation(payload: [1, 1]) }
  }

  @Test func cscFeature() throws {
    let f = try CSCFeature(payload: hexBytes("07 00"))
    #expect(f == [.wheelRevolutionData, .crankRevolutionData, .multipleSensorLocations])
    #expect(try CSCFeature(payload: hexBytes("02 00")) == .crankRevolutionData)
    #expect(try CSCFeature(payload: hexBytes("00 80")).rawValue == 0x8000)  // RFU kept
    #expect(throws: BLEDecodeError.truncated(.cscFeature, .features, offset: 0, needed: 2, available: 1)) {
      try CSCFeature(payload: [0x03])
    }
    #expect(throws: BLEDecodeError.trailingBytes(.cscFeature, offset: 2, count: 1)) {
      try CSCFeature(payload: [0x03, 0x00, 0x00])
    }
  }

  @Test func cyclingPowerFeature() throws {
    // wheel + crank data (bits 2, 3), torque based (bit 16), distributed system support 2 (bits 21–22).
    let f = try CyclingPowerFeature(payload: hexBytes("0c 00 41 00"))
    #expect(f.contains(.wheelRevolutionData) && f.contains(.crankRevolutionData))
    #expect(!f.contains(.pedalPowerBalance))
    #expect(f.measurementContext == .torqueBased)
    #expect(f.distributedSystemSupport == .forUseInDistributedSystem)
    #expect(f.instantaneousMeasurementDirection == 0)
    #expect(f.payload == hexBytes("0c 00 41 00"))
    let all = try CyclingPowerFeature(payload: hexBytes("ff ff ff ff"))
    #expect(all.contains(.enhancedOffsetCompensation) && all.contains(.factoryCalibrationDate))
    #expect(all.instantaneousMeasurementDirection == 3)
    #expect(all.distributedSystemSupport == .reserved)
    #expect(try CyclingPowerFeature(payload: hexBytes("00 00 00 00")).measurementContext == .forceBased)
    #expect(throws: BLEDecodeError.truncated(.cyclingPowerFeature, .features, offset: 0, needed: 4, available: 3)) {
      try CyclingPowerFeature(payload: [1, 2, 3])
    }
    #expect(throws: BLEDecodeError.trailingBytes(.cyclingPowerFeature, offset: 4, count: 1)) {
      try CyclingPowerFeature(payload: [1, 2, 3, 4, 5])
    }
  }
}
