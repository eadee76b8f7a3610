// Compensation formulas of the BMP280 (BST-BMP280-DS001 §3.11.3 integer, §8.1 double) and the
// BME280 humidity (BST-BME280-DS002 §4.2.3 integer, §8.1 double), written from the datasheet.
//
// The integer versions follow the datasheet's C semantics: `>>` on signed values is an
// arithmetic shift (floor), which is what Swift's `>>` does on signed integers. Products and sums
// use wrapping operators: with a real chip's trimming nothing overflows, and with garbage bytes
// from a bad bus read the result is garbage but the service does not trap.

extension BMP280Calibration {
  /// Temperature in 0.01 °C and `t_fine`, the fine temperature the pressure and humidity
  /// formulas need (DS001 §3.11.3, `bmp280_compensate_T_int32`).
  /// Example: `(centiCelsius: 2508, tFine: 128422)` for the datasheet's adc_T 519888.
  public func temperatureInt32(adc: Int32) -> (centiCelsius: Int32, tFine: Int32) {
    let t1 = Int32(digT1)
    let t2 = Int32(digT2)
    let t3 = Int32(digT3)
    let var1 = (((adc >> 3) &- (t1 << 1)) &* t2) >> 11
    let d = (adc >> 4) &- t1
    let var2 = (((d &* d) >> 12) &* t3) >> 14
    let tFine = var1 &+ var2
    return ((tFine &* 5 &+ 128) >> 8, tFine)
  }

  /// Pressure in Pa as unsigned Q24.8 (24 integer and 8 fractional bits: 24674867 is
  /// 24674867/256 = 96386.2 Pa), DS001 §3.11.3 `bmp280_compensate_P_int64`.
  /// Nil where the datasheet returns 0 to avoid dividing by zero, or when the result is out of
  /// the unsigned 32-bit range (only with bad calibration or raw data).
  public func pressureInt64(adc: Int32, tFine: Int32) -> UInt32? {
    let p1 = Int64(digP1)
    let p2 = Int64(digP2)
    let p3 = Int64(digP3)
    let p4 = Int64(digP4)
    let p5 = Int64(digP5)
    let p6 = Int64(digP6)
    let p7 = Int64(digP7)
    let p8 = Int64(digP8)
    let p9 = Int64(digP9)
    var var1 = Int64(tFine) &- 128_000
    var var2 = var1 &* var1 &* p6
    var2 = var2 &+ ((var1 &* p5) << 17)
    var2 = var2 &+ (p4 << 35)
    var1 = ((var1 &* var1 &* p3) >> 8) &+ ((var1 &* p2) << 12)
    var1 = (((Int64(1) << 47) &+ var1) &* p1) >> 33
    if var1 == 0 { return nil }
    var p = 1_048_576 &- Int64(adc)
    let quotient = (((p << 31) &- var2) &* 3125).dividedReportingOverflow(by: var1)
    if quotient.overflow { return nil }
    p = quotient.partialValue
    var1 = (p9 &* (p >> 13) &* (p >> 13)) >> 25
    var2 = (p8 &* p) >> 19
    p = ((p &+ var1 &+ var2) >> 8) &+ (p7 << 4)
    return UInt32(exactly: p)
  }

  /// Temperature in °C and `t_fine` (the datasheet casts the fine temperature to int32,
  /// truncating), DS001 §8.1 `bmp280_compensate_T_double`.
  public func temperatureDouble(adc: Int32) -> (celsius: Double, tFine: Int32) {
    let a = Double(adc)
    let t1 = Double(digT1)
    let var1 = (a / 16384.0 - t1 / 1024.0) * Double(digT2)
    let d = a / 131072.0 - t1 / 8192.0
    let var2 = d * d * Double(digT3)
    return ((var1 + var2) / 5120.0, truncatedToInt32(var1 + var2))
  }

  /// Pressure in Pa, DS001 §8.1 `bmp280_compensate_P_double`. Nil where the datasheet returns 0
  /// to avoid dividing by zero.
  public func pressureDouble(adc: Int32, tFine: Int32) -> Double? {
    var var1 = Double(tFine) / 2.0 - 64000.0
    var var2 = var1 * var1 * Double(digP6) / 32768.0
    var2 = var2 + var1 * Double(digP5) * 2.0
    var2 = var2 / 4.0 + Double(digP4) * 65536.0
    var1 = (Double(digP3) * var1 * var1 / 524288.0 + Double(digP2) * var1) / 524288.0
    var1 = (1.0 + var1 / 32768.0) * Double(digP1)
    if var1 == 0.0 { return nil }
    var p = 1048576.0 - Double(adc)
    p = (p - var2 / 4096.0) * 6250.0 / var1
    var1 = Double(digP9) * p * p / 2147483648.0
    var2 = p * Double(digP8) / 32768.0
    return p + (var1 + var2 + Double(digP7)) / 16.0
  }
}

extension BME280HumidityCalibration {
  /// Relative humidity in %RH as unsigned Q22.10 (47445 is 47445/1024 = 46.333 %RH), clamped to
  /// 0…100 %RH, BST-BME280-DS002 §4.2.3 `bme280_compensate_H_int32`.
  public func humidityInt32(adc: Int32, tFine: Int32) -> UInt32 {
    let h1 = Int32(digH1)
    let h2 = Int32(digH2)
    let h3 = Int32(digH3)
    let h4 = Int32(digH4)
    let h5 = Int32(digH5)
    let h6 = Int32(digH6)
    var v = tFine &- 76800
    let offset = (((adc << 14) &- (h4 << 20) &- (h5 &* v)) &+ 16384) >> 15
    let gain =
      ((((((v &* h6) >> 10) &* (((v &* h3) >> 11) &+ 32768)) >> 10) &+ 2_097_152) &* h2 &+ 8192)
      >> 14
    v = offset &* gain
    v = v &- (((((v >> 15) &* (v >> 15)) >> 7) &* h1) >> 4)
    v = min(max(v, 0), 419_430_400)  // 0…100 %RH in Q22.10 before the final >> 12
    return UInt32(v >> 12)
  }

  /// Relative humidity in %RH, clamped to 0…100, BST-BME280-DS002 §8.1
  /// `bme280_compensate_H_double`.
  public func humidityDouble(adc: Int32, tFine: Int32) -> Double {
    var h = Double(tFine) - 76800.0
    h =
      (Double(adc) - (Double(digH4) * 64.0 + Double(digH5) / 16384.0 * h))
      * (Double(digH2) / 65536.0
        * (1.0 + Double(digH6) / 67108864.0 * h * (1.0 + Double(digH3) / 67108864.0 * h)))
    h = h * (1.0 - Double(digH1) * h / 524288.0)
    return min(max(h, 0.0), 100.0)
  }
}

/// C's `(int32_t)x` for a double (truncation toward zero), saturating instead of undefined
/// behaviour outside the range.
@inline(__always)
func truncatedToInt32(_ x: Double) -> Int32 {
  guard x.isFinite else { return 0 }
  if x >= 2147483647.0 { return .max }
  if x <= -2147483648.0 { return .min }
  return Int32(x.rounded(.towardZero))
}
