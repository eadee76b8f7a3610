import Testing

@testable import SensorProtocols

@Suite("BMP280 registers, chip id, raw samples and errors")
struct BMP280RegisterTests {
  @Test func registerMap() {
    // DS001 §4.2 and DS002 §5.3 memory maps.
    #expect(BMP280Register.calibration.rawValue == 0x88)
    #expect(BMP280Register.humidityH1.rawValue == 0xA1)
    #expect(BMP280Register.humidityCalibration.rawValue == 0xE1)
    #expect(BMP280Register.chipID.rawValue == 0xD0)
    #expect(BMP280Register.reset.rawValue == 0xE0)
    #expect(BMP280Register.ctrlHum.rawValue == 0xF2)
    #expect(BMP280Register.status.rawValue == 0xF3)
    #expect(BMP280Register.ctrlMeas.rawValue == 0xF4)
    #expect(BMP280Register.config.rawValue == 0xF5)
    #expect(BMP280Register.data.rawValue == 0xF7)
    #expect(BMP280Layout.resetCommand == 0xB6)
    // The calibration block ends at 0x9F, the humidity block at 0xE7, the data at 0xFC / 0xFE.
    #expect(Int(BMP280Register.calibration.rawValue) + BMP280Layout.calibrationLength - 1 == 0x9F)
    #expect(
      Int(BMP280Register.humidityCalibration.rawValue) + BMP280Layout.humidityCalibrationLength - 1
        == 0xE7)
    #expect(Int(BMP280Register.data.rawValue) + BMP280Chip.bmp280.dataLength - 1 == 0xFC)
    #expect(Int(BMP280Register.data.rawValue) + BMP280Chip.bme280.dataLength - 1 == 0xFE)
    #expect(BMP280Register.data.description == "0xF7")
  }

  @Test func chipIDs() throws {
    #expect(try BMP280Chip(chipID: 0x58) == .bmp280)
    #expect(try BMP280Chip(chipID: 0x60) == .bme280)
    #expect(BMP280Chip.bmp280.hasHumidity == false)
    #expect(BMP280Chip.bme280.hasHumidity == true)
  }

  @Test(arguments: [
    (UInt8(0x55), "BMP180"), (0x61, "BME680"), (0x56, "engineering sample"),
    (0x00, "no device answering"), (0xFF, "no device answering"), (0x42, "0x42"),
  ])
  func wrongChipIsRefusedAndNamed(id: UInt8, mention: String) {
    #expect(throws: BMP280Error.wrongChip(id: id)) { try BMP280Chip(chipID: id) }
    let text = BMP280Error.wrongChip(id: id).description
    #expect(text.contains(mention), "\(text)")
    #expect(text.contains("0x58") && text.contains("0x60"))
  }

  @Test func shortReads() {
    let image = DatasheetExample.calibrationImage
    #expect(throws: BMP280Error.shortRead(.calibration, expected: 24, got: 23)) {
      try BMP280Calibration(registers: image.dropLast())
    }
    #expect(throws: BMP280Error.shortRead(.calibration, expected: 24, got: 0)) {
      try BMP280Calibration(registers: [UInt8]())
    }
    #expect(throws: BMP280Error.shortRead(.humidityCalibration, expected: 7, got: 6)) {
      try BME280HumidityCalibration(h1: 75, registers: [UInt8](repeating: 1, count: 6))
    }
    #expect(throws: BMP280Error.shortRead(.data, expected: 6, got: 5)) {
      try BMP280RawSample(burst: DatasheetExample.burst.dropLast(), humidity: false)
    }
    #expect(throws: BMP280Error.shortRead(.data, expected: 8, got: 6)) {
      try BMP280RawSample(burst: DatasheetExample.burst, humidity: true)
    }
  }

  @Test func calibrationThatCannotBeReal() {
    #expect(throws: BMP280Error.self) {
      try BMP280Calibration(registers: [UInt8](repeating: 0xFF, count: 24))
    }
    #expect(throws: BMP280Error.self) {
      try BMP280Calibration(registers: [UInt8](repeating: 0x00, count: 24))
    }
    var zeroP1 = DatasheetExample.calibrationImage
    zeroP1[6] = 0
    zeroP1[7] = 0
    #expect(throws: BMP280Error.invalidCalibration("dig_P1 is 0 (pressure would divide by zero)")) {
      try BMP280Calibration(registers: zeroP1)
    }
  }

  @Test func skippedMeasurements() throws {
    // Pressure skipped (osrs_p = 0): 0x80000 in press; temperature present.
    let noPressure = try BMP280RawSample(burst: hexBytes("80 00 00 7e ed 00"), humidity: false)
    #expect(noPressure.pressure == nil)
    #expect(noPressure.temperature == DatasheetExample.adcT)
    let compensator = BMP280Compensator(chip: .bmp280, calibration: DatasheetExample.calibration)
    let m = try compensator.measurement(noPressure)
    #expect(m.pressure == nil)
    #expect(m.temperature == 25.08)

    // Nothing measured yet after power-on/reset: every channel at its reset value.
    let fresh = hexBytes("80 00 00 80 00 00 80 00")
    let raw = try BMP280RawSample(burst: fresh, humidity: true)
    #expect(raw == BMP280RawSample(temperature: nil, pressure: nil, humidity: nil))
    #expect(throws: BMP280Error.measurementNotAvailable(.temperature)) {
      try compensator.measurement(burst: fresh)
    }
    // The low nibble of xlsb is not data: 0x80 0x00 0x0F is still the reset value.
    #expect(
      try BMP280RawSample(burst: hexBytes("80 00 0f 80 00 0f"), humidity: false).pressure == nil)
    // One count away from it is a value.
    #expect(
      try BMP280RawSample(burst: hexBytes("80 00 10 7e ed 00"), humidity: false).pressure == 0x80001
    )
  }

  @Test func twentyBitPacking() throws {
    // press = msb<<12 | lsb<<4 | xlsb[7:4] (DS001 §4.3.6)
    let raw = try BMP280RawSample(burst: hexBytes("ff ff ff 00 00 10"), humidity: false)
    #expect(raw.pressure == 0xFFFFF)
    #expect(raw.temperature == 1)
    let withHumidity = try BMP280RawSample(
      burst: hexBytes("65 5a c0 7e ed 00 6e 8f"), humidity: true)
    #expect(withHumidity.humidity == 0x6E8F)
  }

  @Test func statusBits() {
    #expect(BMP280Status(rawValue: 0b1000).measuring)
    #expect(!BMP280Status(rawValue: 0b1000).copyingCalibration)
    #expect(BMP280Status(rawValue: 0b0001).copyingCalibration)
    #expect(!BMP280Status(rawValue: 0b0001).measuring)
    #expect(!BMP280Status(rawValue: 0).measuring)
  }
}

@Suite("BMP280 settings encoding")
struct BMP280SettingsTests {
  @Test func rideLoggerDefaultsAreIndoorNavigation() throws {
    let s = BMP280Settings.rideLogger
    // osrs_t ×2 = 010, osrs_p ×16 = 101, normal = 11 → 0101_0111
    #expect(s.ctrlMeas == 0x57)
    // t_sb 0.5 ms = 000, filter 16 = 100, spi3w 0 → 0001_0000
    #expect(try s.config(for: .bmp280) == 0x10)
    #expect(try s.config(for: .bme280) == 0x10)
    #expect(s.ctrlHum == 0x01)
    // DS001 table 7: 26.3 Hz output, measurement 37.5 ms typical / 43.2 ms max (table 13).
    let odr = try #require(s.outputDataRate(for: .bmp280))
    #expect(abs(odr - 26.3) < 0.05)
    #expect(abs(s.typicalMeasurementTime(for: .bmp280) - 0.0375) < 1e-12)
    #expect(abs(s.maximumMeasurementTime(for: .bmp280) - 0.0432) < 0.0001)
  }

  @Test func writeSequence() throws {
    let bme = try BMP280Settings.rideLogger.registerWrites(for: .bme280)
    #expect(bme.map(\.register) == [.ctrlMeas, .ctrlHum, .config, .ctrlMeas])
    #expect(bme.map(\.value) == [0x54, 0x01, 0x10, 0x57])
    let bmp = try BMP280Settings.rideLogger.registerWrites(for: .bmp280)
    #expect(bmp.map(\.register) == [.ctrlMeas, .config, .ctrlMeas])
    #expect(bmp.map(\.value) == [0x54, 0x10, 0x57])
  }

  @Test func otherDatasheetUseCases() throws {
    // DS001 table 7 and its ODRs: handheld dynamic (normal, ×4/×1, IIR 16, 0.5 ms) 83.3 Hz;
    // elevator (normal, ×4/×1, IIR 4, 125 ms) 7.3 Hz.
    let dynamic = BMP280Settings(
      temperatureOversampling: .x1, pressureOversampling: .x4, filter: .x16, standby: .ms0_5,
      mode: .normal)
    #expect(abs(try #require(dynamic.outputDataRate(for: .bmp280)) - 83.3) < 0.05)
    let elevator = BMP280Settings(
      temperatureOversampling: .x1, pressureOversampling: .x4, filter: .x4, standby: .ms125,
      mode: .normal)
    #expect(abs(try #require(elevator.outputDataRate(for: .bmp280)) - 7.3) < 0.05)
    #expect(try elevator.config(for: .bmp280) == 0b010_010_00)
    let weather = BMP280Settings(
      temperatureOversampling: .x1, pressureOversampling: .x1, filter: .off, standby: .ms0_5,
      mode: .forced)
    #expect(weather.ctrlMeas == 0b001_001_01)
    #expect(weather.outputDataRate(for: .bmp280) == nil)
  }

  @Test func standbyCodesDifferBetweenChips() throws {
    #expect(try BMP280Standby.ms2000.code(for: .bmp280) == 0b110)
    #expect(try BMP280Standby.ms4000.code(for: .bmp280) == 0b111)
    #expect(try BMP280Standby.ms10.code(for: .bme280) == 0b110)
    #expect(try BMP280Standby.ms20.code(for: .bme280) == 0b111)
    #expect(throws: BMP280Error.self) { try BMP280Standby.ms10.code(for: .bmp280) }
    #expect(throws: BMP280Error.self) { try BMP280Standby.ms4000.code(for: .bme280) }
    #expect(BMP280Standby(code: 0b110, chip: .bmp280) == .ms2000)
    #expect(BMP280Standby(code: 0b110, chip: .bme280) == .ms10)
  }

  @Test(arguments: BMP280Chip.allCases)
  func everySettingRoundTrips(chip: BMP280Chip) throws {
    var checked = 0
    for t in BMP280Oversampling.allCases {
      for p in BMP280Oversampling.allCases {
        for h in BMP280Oversampling.allCases {
          for f in BMP280Filter.allCases {
            for sb in BMP280Standby.allCases {
              for mode in BMP280Mode.allCases {
                let s = BMP280Settings(
                  temperatureOversampling: t, pressureOversampling: p, humidityOversampling: h,
                  filter: f, standby: sb, mode: mode)
                guard let config = try? s.config(for: chip) else { continue }
                let back = BMP280Settings(
                  ctrlMeas: s.ctrlMeas, config: config, ctrlHum: s.ctrlHum, chip: chip)
                var expected = s
                if !chip.hasHumidity { expected.humidityOversampling = .skipped }
                #expect(back == expected)
                #expect(config & 1 == 0)  // spi3w_en stays off: I2C
                checked += 1
              }
            }
          }
        }
      }
    }
    #expect(checked == 6 * 6 * 6 * 5 * 8 * 3)
  }

  @Test func decodingReservedCodes() {
    // 0b110/0b111 oversampling read back as ×16; mode 0b10 as forced (DS001 tables 10, 21-22).
    let s = BMP280Settings(ctrlMeas: 0b111_110_10, config: 0b000_111_00, chip: .bmp280)
    #expect(s.temperatureOversampling == .x16)
    #expect(s.pressureOversampling == .x16)
    #expect(s.mode == .forced)
    #expect(s.filter == .x16)
  }
}
