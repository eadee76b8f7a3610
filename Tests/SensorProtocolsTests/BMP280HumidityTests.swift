import Testing

@testable import SensorProtocols

/// BME280 humidity. The datasheets have no worked example for humidity, so these tests rest on:
/// - the calibration packing, checked on hand-assembled bytes (including negative 12-bit values);
/// - vectors computed independently, before this code existed, by a Python transcription of
///   BST-BME280-DS002 §4.2.3 (`bme280_compensate_H_int32`, with every intermediate checked to fit
///   in int32) and §8.1 (the double formula), for an illustrative calibration (typical magnitudes
///   of real parts: dig_H1 75, dig_H2 362, dig_H3 0 or 12, dig_H4 313, dig_H5 50, dig_H6 30);
/// - a double-precision formula written out again here (from the datasheet's §8.1 text), which
///   the integer path must track everywhere;
/// - properties: 0…100 %RH clamping, monotonic in adc_H.
@Suite("BME280 humidity")
struct BMP280HumidityTests {
  static let typical = BME280HumidityCalibration(
    digH1: 75, digH2: 362, digH3: 0, digH4: 313, digH5: 50, digH6: 30)
  static let withH3 = BME280HumidityCalibration(
    digH1: 75, digH2: 362, digH3: 12, digH4: 313, digH5: 50, digH6: 30)

  @Test func packedCalibrationBytes() throws {
    // 0xE1…0xE7 for dig_H2 362 (0x016A), dig_H3 12, dig_H4 313 (0x139), dig_H5 50 (0x032),
    // dig_H6 30: E4 = 0x13 (H4[11:4]), E5 = 0x29 (H5[3:0] = 2 high, H4[3:0] = 9 low), E6 = 0x03.
    let parsed = try BME280HumidityCalibration(h1: 75, registers: hexBytes("6a 01 0c 13 29 03 1e"))
    #expect(parsed == Self.withH3)
    #expect(parsed.registerImage == hexBytes("6a 01 0c 13 29 03 1e"))
  }

  @Test func negativeTwelveBitValues() throws {
    // dig_H4 = 0xF3A = −198 as 12-bit two's complement; dig_H5 = 0xFE2 = −30; dig_H6 = 0xE2 = −30.
    let parsed = try BME280HumidityCalibration(h1: 0, registers: hexBytes("72 01 0c f3 2a fe e2"))
    #expect(parsed.digH2 == 370)
    #expect(parsed.digH4 == -198)
    #expect(parsed.digH5 == -30)
    #expect(parsed.digH6 == -30)
    #expect(parsed.registerImage == hexBytes("72 01 0c f3 2a fe e2"))
    // Largest positive and most negative 12-bit values.
    let extremes = try BME280HumidityCalibration(h1: 0, registers: hexBytes("00 80 ff 7f ff 80 80"))
    #expect(extremes.digH2 == -32768)
    #expect(extremes.digH3 == 255)
    #expect(extremes.digH4 == 2047)
    #expect(extremes.digH5 == -2033)  // 0x80F: E6 = 0x80 → bits 11:4, E5[7:4] = 0xF → bits 3:0
    #expect(extremes.digH6 == -128)
  }

  @Test(arguments: [
    // (calibration, adc_H, t_fine, expected Q22.10 from the independent transcription)
    (0, Int32(30000), Int32(128422), UInt32(56317)),
    (0, 26000, 50000, 33650),
    (0, 34000, 200000, 80194),
    (1, 30000, 128422, 56329),
    (1, 26000, 50000, 33652),
    (1, 34000, 200000, 80285),
  ])
  func independentVectors(which: Int, adc: Int32, tFine: Int32, expected: UInt32) {
    let cal = which == 0 ? Self.typical : Self.withH3
    #expect(cal.humidityInt32(adc: adc, tFine: tFine) == expected)
  }

  /// DS002 §8.1 written out again, to check the library's two paths against.
  static func referenceDouble(_ c: BME280HumidityCalibration, adc: Int32, tFine: Int32) -> Double {
    let x = Double(tFine) - 76800
    let offset = Double(adc) - (Double(c.digH4) * 64 + Double(c.digH5) / 16384 * x)
    let scale =
      Double(c.digH2) / 65536
      * (1 + Double(c.digH6) / 67_108_864 * x * (1 + Double(c.digH3) / 67_108_864 * x))
    let raw = offset * scale
    return min(100, max(0, raw * (1 - Double(c.digH1) * raw / 524_288)))
  }

  @Test(arguments: [typical, withH3])
  func integerPathTracksTheDoubleFormula(cal: BME280HumidityCalibration) {
    var worst = 0.0
    for tFine in stride(from: Int32(-20_000), through: 220_000, by: 12_000) {  // about −4…86 °C
      for adc in stride(from: Int32(0), through: 65_535, by: 257) {
        let q = cal.humidityInt32(adc: adc, tFine: tFine)
        let d = Self.referenceDouble(cal, adc: adc, tFine: tFine)
        worst = max(worst, abs(Double(q) / 1024 - d))
        #expect(cal.humidityDouble(adc: adc, tFine: tFine) == d)
      }
    }
    // The int32 path truncates to 1/1024 %RH at several steps: a few thousandths of a percent.
    #expect(worst < 0.01, "int32 vs double differ by \(worst) %RH")
  }

  @Test(arguments: [typical, withH3])
  func clampedToZeroAndHundred(cal: BME280HumidityCalibration) {
    for tFine in [Int32(-30_000), 0, 128_422, 250_000] {
      #expect(cal.humidityInt32(adc: 0, tFine: tFine) == 0)
      #expect(cal.humidityInt32(adc: 65_535, tFine: tFine) == 100 * 1024)
      #expect(cal.humidityDouble(adc: 0, tFine: tFine) == 0)
      #expect(cal.humidityDouble(adc: 65_535, tFine: tFine) == 100)
    }
  }

  @Test(arguments: [typical, withH3])
  func monotonicInTheRawValue(cal: BME280HumidityCalibration) {
    for tFine in [Int32(0), 128_422, 200_000] {
      var previous: UInt32 = 0
      var falls: [Int32] = []
      var rises = 0
      for adc in Int32(0)...65_535 {
        let q = cal.humidityInt32(adc: adc, tFine: tFine)
        if q < previous { falls.append(adc) }
        if q > previous { rises += 1 }
        previous = q
      }
      #expect(falls.isEmpty, "humidity falls at adc_H \(falls.prefix(5))")
      #expect(rises > 1000)
    }
  }

  @Test func bme280EndToEnd() throws {
    // Datasheet temperature/pressure example plus a humidity reading of 0x7530 (30000).
    let compensator = BMP280Compensator(
      chip: .bme280, calibration: DatasheetExample.calibration, humidityCalibration: Self.typical)
    let m = try compensator.measurement(burst: DatasheetExample.burst + [0x75, 0x30])
    #expect(m.temperature == 25.08)
    #expect(m.humidity == 56317.0 / 1024)
    // Humidity skipped (0x8000): no humidity, the rest intact.
    let skipped = try compensator.measurement(burst: DatasheetExample.burst + [0x80, 0x00])
    #expect(skipped.humidity == nil)
    #expect(skipped.pressure != nil)
    // A BMP280 ignores a humidity calibration it cannot use.
    let bmp = BMP280Compensator(
      chip: .bmp280, calibration: DatasheetExample.calibration, humidityCalibration: Self.typical)
    #expect(bmp.humidityCalibration == nil)
    #expect(try bmp.measurement(burst: DatasheetExample.burst).humidity == nil)
  }
}
