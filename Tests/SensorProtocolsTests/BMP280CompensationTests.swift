import Testing
import WorkoutTestSupport

@testable import SensorProtocols

// The worked example of the Bosch BMP280 datasheet (BST-BMP280-DS001, §3.12 "Calculating
// pressure and temperature", example table): calibration words, raw values and results.
// The datasheet itself is not redistributable; the numbers are quoted, as the datasheet's, in
// androidthings/contrib-drivers bmx280/src/test/java/com/google/android/things/contrib/driver/
// bmx280/Bmx280Test.java @ 15911b4c (Apache-2.0, Copyright 2016 Google Inc.), and appear in many
// independent driver tests. Collected with their provenance in the team's corpus
// (shared/corpus/bmp280/vectors.json); copied here so the test never reads it at run time.
enum DatasheetExample {
  static let calibration = BMP280Calibration(
    digT1: 27504, digT2: 26435, digT3: -1000,
    digP1: 36477, digP2: -10685, digP3: 3024, digP4: 2855, digP5: 140, digP6: -7,
    digP7: 15500, digP8: -14600, digP9: 6000)
  static let adcT: Int32 = 519888
  static let adcP: Int32 = 415148
  /// The datasheet's results: 25.08 °C (int32: 2508), t_fine 128422, 100653.27 Pa.
  static let centiCelsius: Int32 = 2508
  static let tFine: Int32 = 128422
  static let pascals = 100653.27
  /// Q24.8 pressure: the datasheet's figure is quoted as 25767236; the datasheet's own 64-bit
  /// formula, emulated with C semantics, gives 25767233; Bosch's current API (`/` instead of
  /// `>>`) gives 25767240. Any of these is "the datasheet value" to within rounding.
  static let q24_8Range: ClosedRange<UInt32> = 25_767_233...25_767_240
  /// The datasheet formula's exact result (corpus "computed_here.int64_P_Q24_8").
  static let q24_8Formula: UInt32 = 25_767_233
  /// The double-precision formulas' exact results (corpus "computed_here.double", which agree
  /// with Bosch's BMP2 API in double mode).
  static let celsiusDouble = 25.0824779308
  static let pascalsDouble = 100653.2581448147

  /// The little-endian register image of the calibration at 0x88…0x9F, and the raw values as
  /// they appear in 0xF7…0xFC (corpus "derived_register_images").
  static let calibrationImage: [UInt8] = hexBytes(
    "70 6b 43 67 18 fc 7d 8e 43 d6 d0 0b 27 0b 8c 00 f9 ff 8c 3c f8 c6 70 17")
  static let burst: [UInt8] = hexBytes("65 5a c0 7e ed 00")
}

func hexBytes(_ hex: String) -> [UInt8] {
  hex.split(separator: " ").map { UInt8($0, radix: 16)! }
}

@Suite("BMP280 compensation: the datasheet worked example")
struct BMP280CompensationTests {
  let cal = DatasheetExample.calibration

  @Test func int32Temperature() {
    let t = cal.temperatureInt32(adc: DatasheetExample.adcT)
    #expect(t.centiCelsius == DatasheetExample.centiCelsius)
    #expect(t.tFine == DatasheetExample.tFine)
  }

  @Test func int64Pressure() throws {
    let q = try #require(
      cal.pressureInt64(adc: DatasheetExample.adcP, tFine: DatasheetExample.tFine))
    #expect(DatasheetExample.q24_8Range.contains(q))
    #expect(q == DatasheetExample.q24_8Formula)
    #expect(abs(Double(q) / 256 - DatasheetExample.pascals) < 0.03)
  }

  @Test func doubleTemperatureAndPressure() throws {
    let t = cal.temperatureDouble(adc: DatasheetExample.adcT)
    #expect(abs(t.celsius - DatasheetExample.celsiusDouble) < 1e-9)
    #expect(abs(t.celsius - 25.08) < 0.01)
    #expect(t.tFine == DatasheetExample.tFine)
    let p = try #require(cal.pressureDouble(adc: DatasheetExample.adcP, tFine: t.tFine))
    #expect(abs(p - DatasheetExample.pascals) <= 0.05)
    #expect(abs(p - DatasheetExample.pascalsDouble) < 1e-6)
  }

  @Test func registerImageParsesIntoTheCalibration() throws {
    let parsed = try BMP280Calibration(registers: DatasheetExample.calibrationImage)
    #expect(parsed == cal)
    #expect(parsed.registerImage == DatasheetExample.calibrationImage)
    // A read of 26 bytes up to 0xA1 (dig_H1 included) parses the same.
    let longer = try BMP280Calibration(registers: DatasheetExample.calibrationImage + [0x00, 0x4B])
    #expect(longer == cal)
  }

  @Test func burstParsesIntoTheRawValues() throws {
    let raw = try BMP280RawSample(burst: DatasheetExample.burst, humidity: false)
    #expect(raw.pressure == DatasheetExample.adcP)
    #expect(raw.temperature == DatasheetExample.adcT)
    #expect(raw.humidity == nil)
  }

  @Test func compensatorEndToEnd() throws {
    let chip = try BMP280Chip(chipID: 0x58)
    let compensator = BMP280Compensator(
      chip: chip, calibration: try BMP280Calibration(registers: DatasheetExample.calibrationImage))
    let m = try compensator.measurement(burst: DatasheetExample.burst)
    #expect(m.temperature == 25.08)
    #expect(m.tFine == DatasheetExample.tFine)
    #expect(m.pressure == Double(DatasheetExample.q24_8Formula) / 256)
    #expect(m.humidity == nil)
  }

  /// Int and double paths agree across the sensor's whole range (300…1100 hPa, −40…85 °C), not
  /// just at the example: pressure within 1 Pa (the int64 path's resolution is 1/256 Pa; the
  /// datasheet gives both as versions of one polynomial) and temperature within 0.01 °C.
  @Test func integerAndDoublePathsAgreeAcrossTheRange() throws {
    var worst = 0.0
    for adcT in stride(from: Int32(380_000), through: 660_000, by: 7_001) {
      let ti = cal.temperatureInt32(adc: adcT)
      let td = cal.temperatureDouble(adc: adcT)
      #expect(abs(Double(ti.centiCelsius) / 100 - td.celsius) <= 0.01)
      // t_fine is in 1/5120 °C; the int32 formula rounds its square term, so the two t_fines
      // drift apart by a few counts towards the ends of the range (13 at most here): allow
      // 0.005 °C.
      #expect(abs(ti.tFine - td.tFine) <= 25)
      for adcP in stride(from: Int32(150_000), through: 700_000, by: 13_003) {
        let pi = try #require(cal.pressureInt64(adc: adcP, tFine: ti.tFine))
        let pd = try #require(cal.pressureDouble(adc: adcP, tFine: ti.tFine))
        worst = max(worst, abs(Double(pi) / 256 - pd))
      }
    }
    #expect(worst < 1.0, "int64 vs double pressure differ by \(worst) Pa")
    print("BMP280 int64 vs double pressure, worst difference over the range: \(worst) Pa")
  }

  @Test func pressureFallsAsTheRawValueRises() throws {
    // adc_P is inversely related to pressure (DS001 §3.11.3: p = 1048576 − adc_P …).
    var previous = UInt32.max
    for adcP in stride(from: Int32(200_000), through: 650_000, by: 5_000) {
      let p = try #require(cal.pressureInt64(adc: adcP, tFine: DatasheetExample.tFine))
      #expect(p < previous)
      previous = p
    }
  }

  @Test func zeroDivisorGivesNoPressure() {
    var broken = cal
    broken.digP1 = 0  // var1 becomes 0: the datasheet returns 0 to avoid dividing by zero
    #expect(broken.pressureInt64(adc: DatasheetExample.adcP, tFine: DatasheetExample.tFine) == nil)
    #expect(broken.pressureDouble(adc: DatasheetExample.adcP, tFine: DatasheetExample.tFine) == nil)
  }

  /// Garbage from a bad bus read must give garbage numbers, never a trap: seeded random
  /// calibration images and raw values through every formula.
  @Test func garbageNeverTraps() {
    var rng = SeededRandom(seed: 0xB0_5C_11)
    var computed = 0
    for _ in 0..<2_000 {
      let image = (0..<24).map { _ in UInt8.random(in: 0...255, using: &rng) }
      let h = (0..<7).map { _ in UInt8.random(in: 0...255, using: &rng) }
      guard let c = try? BMP280Calibration(registers: image) else { continue }
      let hc = try! BME280HumidityCalibration(
        h1: UInt8.random(in: 0...255, using: &rng), registers: h)
      let adc = Int32.random(in: Int32.min...Int32.max, using: &rng)
      let adc2 = Int32.random(in: 0...0xFFFFF, using: &rng)
      let t = c.temperatureInt32(adc: adc)
      _ = c.pressureInt64(adc: adc2, tFine: t.tFine)
      _ = c.pressureInt64(adc: adc, tFine: Int32.random(in: Int32.min...Int32.max, using: &rng))
      let td = c.temperatureDouble(adc: adc)
      _ = c.pressureDouble(adc: adc2, tFine: td.tFine)
      let rh = hc.humidityInt32(adc: adc, tFine: t.tFine)
      #expect(rh <= 102_400)
      let rhd = hc.humidityDouble(adc: adc2, tFine: t.tFine)
      #expect((0...100).contains(rhd))
      computed += 1
    }
    #expect(computed > 1_900)
  }
}
