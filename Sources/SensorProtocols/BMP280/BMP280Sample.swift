/// The uncompensated ADC values of one measurement, parsed from the data burst at 0xF7.
///
/// A channel that was skipped (its oversampling set to 0), or that has not been measured since
/// power-on or reset, reads as the reset value (0x80000 for the 20-bit pressure and temperature,
/// 0x8000 for the 16-bit humidity) and is nil here (DS001 §3.3.1–3.3.2; DS002 §5.4.9, §3.4.1).
public struct BMP280RawSample: Sendable, Hashable {
  /// 20-bit `adc_T`.
  public var temperature: Int32?
  /// 20-bit `adc_P`.
  public var pressure: Int32?
  /// 16-bit `adc_H` (BME280 only).
  public var humidity: Int32?

  /// The value a skipped 20-bit channel reads as.
  public static let skipped20 = Int32(0x80000)
  /// The value a skipped humidity channel reads as.
  public static let skipped16 = Int32(0x8000)

  public init(temperature: Int32?, pressure: Int32?, humidity: Int32? = nil) {
    self.temperature = temperature
    self.pressure = pressure
    self.humidity = humidity
  }

  /// Parses the burst read from 0xF7: press_msb, press_lsb, press_xlsb[7:4], temp_msb, temp_lsb,
  /// temp_xlsb[7:4] (DS001 §4.3.6–4.3.7), then hum_msb, hum_lsb when `humidity` is true
  /// (DS002 §5.4.9). Extra bytes after those are ignored.
  public init(burst bytes: some Collection<UInt8>, humidity: Bool) throws(BMP280Error) {
    let b = Array(bytes)
    let needed = humidity ? BMP280Layout.dataLengthWithHumidity : BMP280Layout.dataLength
    guard b.count >= needed else { throw .shortRead(.data, expected: needed, got: b.count) }
    func twenty(_ i: Int) -> Int32? {
      let value = Int32(b[i]) << 12 | Int32(b[i + 1]) << 4 | Int32(b[i + 2] >> 4)
      return value == Self.skipped20 ? nil : value
    }
    var h: Int32? = nil
    if humidity {
      let value = Int32(b[6]) << 8 | Int32(b[7])
      h = value == Self.skipped16 ? nil : value
    }
    self.init(temperature: twenty(3), pressure: twenty(0), humidity: h)
  }
}

/// One compensated measurement.
public struct BMP280Measurement: Sendable, Hashable {
  /// °C, 0.01 °C resolution.
  public var temperature: Double
  /// Pa; nil when pressure was skipped.
  public var pressure: Double?
  /// %RH (BME280); nil on a BMP280 or when humidity was skipped.
  public var humidity: Double?
  /// The fine temperature the formulas share.
  public var tFine: Int32
}

/// Everything needed to turn a raw sample into a measurement: the chip and its trimming.
///
/// It uses the datasheet's integer formulas (int32 temperature, int64 pressure, int32
/// humidity), which give bit-identical results on every platform; the double versions are
/// available on the calibration types.
public struct BMP280Compensator: Sendable, Hashable {
  public var chip: BMP280Chip
  public var calibration: BMP280Calibration
  /// Present for a BME280.
  public var humidityCalibration: BME280HumidityCalibration?

  public init(
    chip: BMP280Chip, calibration: BMP280Calibration,
    humidityCalibration: BME280HumidityCalibration? = nil
  ) {
    self.chip = chip
    self.calibration = calibration
    self.humidityCalibration = chip.hasHumidity ? humidityCalibration : nil
  }

  /// Parses the data burst for this chip and compensates it.
  public func measurement(
    burst bytes: some Collection<UInt8>
  ) throws(BMP280Error)
    -> BMP280Measurement
  {
    try measurement(BMP280RawSample(burst: bytes, humidity: humidityCalibration != nil))
  }

  /// Compensates a raw sample. Temperature is required: pressure and humidity both depend on it.
  public func measurement(_ raw: BMP280RawSample) throws(BMP280Error) -> BMP280Measurement {
    guard let adcT = raw.temperature else { throw .measurementNotAvailable(.temperature) }
    let t = calibration.temperatureInt32(adc: adcT)
    var pressure: Double? = nil
    if let adcP = raw.pressure, let q24_8 = calibration.pressureInt64(adc: adcP, tFine: t.tFine) {
      pressure = Double(q24_8) / 256.0
    }
    var humidity: Double? = nil
    if let adcH = raw.humidity, let hc = humidityCalibration {
      humidity = Double(hc.humidityInt32(adc: adcH, tFine: t.tFine)) / 1024.0
    }
    return BMP280Measurement(
      temperature: Double(t.centiCelsius) / 100.0, pressure: pressure, humidity: humidity,
      tFine: t.tFine)
  }
}
