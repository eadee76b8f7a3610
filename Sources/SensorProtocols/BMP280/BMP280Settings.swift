/// Oversampling of one channel: `osrs_t`, `osrs_p` (BST-BMP280-DS001 §4.3.4, tables 21–22) and
/// the BME280's `osrs_h` (BST-BME280-DS002 §5.4.3). Each step halves the noise power and costs
/// about 2 ms of measurement time.
public enum BMP280Oversampling: UInt8, Sendable, Hashable, CaseIterable, Codable {
  /// The channel is not measured; its data registers read 0x80000 (0x8000 for humidity).
  case skipped = 0
  case x1 = 1
  case x2 = 2
  case x4 = 3
  case x8 = 4
  case x16 = 5

  /// Decodes a 3-bit field; 0b101, 0b110 and 0b111 all mean ×16 (DS001 table 21).
  public init(field: UInt8) {
    self = BMP280Oversampling(rawValue: min(field & 0b111, 5)) ?? .x16
  }

  /// How many conversions are averaged (0 when skipped).
  public var factor: Int { self == .skipped ? 0 : 1 << (rawValue - 1) }
}

/// Power mode, `ctrl_meas` bits 1:0 (DS001 §3.6, §4.3.4 table 10).
public enum BMP280Mode: UInt8, Sendable, Hashable, CaseIterable, Codable {
  /// No measurements; registers accessible. The mode after power-on and reset.
  case sleep = 0b00
  /// One measurement, then back to sleep (0b10 is also forced mode when read back).
  case forced = 0b01
  /// Measures continuously, pausing `standby` between measurements.
  case normal = 0b11

  public init(field: UInt8) {
    switch field & 0b11 {
    case 0b00: self = .sleep
    case 0b11: self = .normal
    default: self = .forced
    }
  }
}

/// IIR filter coefficient, `config` bits 4:2 (DS001 §3.3.3, table 6 and §4.3.5 table 13).
/// It smooths short pressure disturbances (wind, a door); coefficient 16 needs 22 samples to
/// reach 75 % of a step.
public enum BMP280Filter: UInt8, Sendable, Hashable, CaseIterable, Codable {
  case off = 0
  case x2 = 1
  case x4 = 2
  case x8 = 3
  case x16 = 4

  /// Decodes a 3-bit field; values above 4 also mean 16.
  public init(field: UInt8) {
    self = BMP280Filter(rawValue: min(field & 0b111, 4)) ?? .x16
  }

  /// Samples to reach at least 75 % of a step response (DS001 table 6).
  public var samplesToSettle: Int {
    switch self {
    case .off: 1
    case .x2: 2
    case .x4: 5
    case .x8: 11
    case .x16: 22
    }
  }
}

/// Inactive time between measurements in normal mode, `config` bits 7:5.
///
/// The two chips differ in the last two codes: 0b110/0b111 are 2000/4000 ms on a BMP280
/// (DS001 §3.6.3 table 11) but 10/20 ms on a BME280 (DS002 §3.3.4 table 27).
public enum BMP280Standby: Sendable, Hashable, CaseIterable, Codable {
  case ms0_5
  case ms62_5
  case ms125
  case ms250
  case ms500
  case ms1000
  /// BMP280 only.
  case ms2000
  /// BMP280 only.
  case ms4000
  /// BME280 only.
  case ms10
  /// BME280 only.
  case ms20

  public var seconds: Double {
    switch self {
    case .ms0_5: 0.0005
    case .ms62_5: 0.0625
    case .ms125: 0.125
    case .ms250: 0.25
    case .ms500: 0.5
    case .ms1000: 1.0
    case .ms2000: 2.0
    case .ms4000: 4.0
    case .ms10: 0.010
    case .ms20: 0.020
    }
  }

  /// The 3-bit `t_sb` code on this chip.
  public func code(for chip: BMP280Chip) throws(BMP280Error) -> UInt8 {
    switch (self, chip) {
    case (.ms0_5, _): return 0b000
    case (.ms62_5, _): return 0b001
    case (.ms125, _): return 0b010
    case (.ms250, _): return 0b011
    case (.ms500, _): return 0b100
    case (.ms1000, _): return 0b101
    case (.ms2000, .bmp280): return 0b110
    case (.ms4000, .bmp280): return 0b111
    case (.ms10, .bme280): return 0b110
    case (.ms20, .bme280): return 0b111
    case (.ms2000, .bme280), (.ms4000, .bme280), (.ms10, .bmp280), (.ms20, .bmp280):
      throw .unsupportedSetting("standby \(self.seconds * 1000) ms on a \(chip)")
    }
  }

  /// Decodes a 3-bit `t_sb` code for this chip.
  public init(code: UInt8, chip: BMP280Chip) {
    switch (code & 0b111, chip) {
    case (0b000, _): self = .ms0_5
    case (0b001, _): self = .ms62_5
    case (0b010, _): self = .ms125
    case (0b011, _): self = .ms250
    case (0b100, _): self = .ms500
    case (0b101, _): self = .ms1000
    case (0b110, .bmp280): self = .ms2000
    case (0b110, .bme280): self = .ms10
    case (_, .bmp280): self = .ms4000
    case (_, .bme280): self = .ms20
    }
  }
}

/// How the chip measures: oversampling, filter, standby and mode, encoded into `ctrl_hum`,
/// `config` and `ctrl_meas`.
public struct BMP280Settings: Sendable, Hashable, Codable {
  public var temperatureOversampling: BMP280Oversampling
  public var pressureOversampling: BMP280Oversampling
  /// BME280 only; ignored on a BMP280.
  public var humidityOversampling: BMP280Oversampling
  public var filter: BMP280Filter
  public var standby: BMP280Standby
  public var mode: BMP280Mode

  public init(
    temperatureOversampling: BMP280Oversampling, pressureOversampling: BMP280Oversampling,
    humidityOversampling: BMP280Oversampling = .x1, filter: BMP280Filter,
    standby: BMP280Standby, mode: BMP280Mode
  ) {
    self.temperatureOversampling = temperatureOversampling
    self.pressureOversampling = pressureOversampling
    self.humidityOversampling = humidityOversampling
    self.filter = filter
    self.standby = standby
    self.mode = mode
  }

  /// The logger's default: the datasheet's "indoor navigation" use case (DS001 §3.4 table 7):
  /// normal mode, pressure ×16 ("ultra high resolution", 0.16 Pa), temperature ×2, IIR filter
  /// 16, standby 0.5 ms: about 26 Hz output, 1.6 cm RMS altitude noise, 650 µA. A ride logger
  /// wants exactly that (the smallest height noise, a response to a step well under a second:
  /// 22 samples at 26 Hz), and 0.65 mA is nothing next to a Pi. Humidity ×1 on a BME280 (it
  /// needs no more: DS002 §3.5 recommends ×1 throughout). The daemon reads it at its own pace
  /// (1 Hz); normal mode always has a fresh, filtered value waiting.
  public static let rideLogger = BMP280Settings(
    temperatureOversampling: .x2, pressureOversampling: .x16, humidityOversampling: .x1,
    filter: .x16, standby: .ms0_5, mode: .normal)

  /// `ctrl_meas` (0xF4): osrs_t[7:5] | osrs_p[4:2] | mode[1:0] (DS001 §4.3.4).
  public var ctrlMeas: UInt8 {
    temperatureOversampling.rawValue << 5 | pressureOversampling.rawValue << 2 | mode.rawValue
  }

  /// `ctrl_hum` (0xF2): osrs_h[2:0] (DS002 §5.4.3).
  public var ctrlHum: UInt8 { humidityOversampling.rawValue }

  /// `config` (0xF5): t_sb[7:5] | filter[4:2] | spi3w_en[0] = 0 (I2C) (DS001 §4.3.5).
  public func config(for chip: BMP280Chip) throws(BMP280Error) -> UInt8 {
    try standby.code(for: chip) << 5 | filter.rawValue << 2
  }

  /// Decodes registers read back from the chip (to check that a configuration took).
  public init(ctrlMeas: UInt8, config: UInt8, ctrlHum: UInt8 = 0, chip: BMP280Chip) {
    self.init(
      temperatureOversampling: BMP280Oversampling(field: ctrlMeas >> 5),
      pressureOversampling: BMP280Oversampling(field: ctrlMeas >> 2),
      humidityOversampling: chip.hasHumidity ? BMP280Oversampling(field: ctrlHum) : .skipped,
      filter: BMP280Filter(field: config >> 2),
      standby: BMP280Standby(code: config >> 5, chip: chip),
      mode: BMP280Mode(field: ctrlMeas))
  }

  /// The register writes that apply these settings, in order:
  /// 1. `ctrl_meas` with the mode set to sleep, because writes to `config` in normal mode may be
  ///    ignored (DS001 §4.3.5);
  /// 2. `ctrl_hum` (BME280), which only takes effect after the next `ctrl_meas` write
  ///    (DS002 §5.4.3);
  /// 3. `config`;
  /// 4. `ctrl_meas` with the requested mode.
  public func registerWrites(
    for chip: BMP280Chip
  ) throws(BMP280Error)
    -> [(register: BMP280Register, value: UInt8)]
  {
    var writes: [(register: BMP280Register, value: UInt8)] = []
    writes.append((.ctrlMeas, ctrlMeas & ~0b11))
    if chip.hasHumidity { writes.append((.ctrlHum, ctrlHum)) }
    writes.append((.config, try config(for: chip)))
    writes.append((.ctrlMeas, ctrlMeas))
    return writes
  }

  /// Longest time one measurement takes, seconds: 1.25 ms + 2.3 ms per temperature, pressure
  /// and humidity oversample, + 0.575 ms for each of pressure and humidity when measured
  /// (DS001 §3.8.1 and appendix; DS002 §9.1). Wait this long after starting a forced
  /// measurement before reading.
  public func maximumMeasurementTime(for chip: BMP280Chip) -> Double {
    var ms = 1.25 + 2.3 * Double(temperatureOversampling.factor)
    if pressureOversampling != .skipped {
      ms += 2.3 * Double(pressureOversampling.factor) + 0.575
    }
    if chip.hasHumidity && humidityOversampling != .skipped {
      ms += 2.3 * Double(humidityOversampling.factor) + 0.575
    }
    return ms / 1000
  }

  /// Typical time of one measurement, seconds: 1 ms + 2 ms per oversample, + 0.5 ms for each of
  /// pressure and humidity when measured (DS001 §3.8.1; DS002 §9.1).
  public func typicalMeasurementTime(for chip: BMP280Chip) -> Double {
    var ms = 1.0 + 2.0 * Double(temperatureOversampling.factor)
    if pressureOversampling != .skipped {
      ms += 2.0 * Double(pressureOversampling.factor) + 0.5
    }
    if chip.hasHumidity && humidityOversampling != .skipped {
      ms += 2.0 * Double(humidityOversampling.factor) + 0.5
    }
    return ms / 1000
  }

  /// Output data rate in normal mode, Hz: one typical measurement plus the standby time per
  /// sample, as the datasheet computes it (DS001 §3.8.2 table 14: 26.3 Hz for the indoor
  /// navigation settings). Nil outside normal mode.
  public func outputDataRate(for chip: BMP280Chip) -> Double? {
    guard mode == .normal else { return nil }
    return 1 / (typicalMeasurementTime(for: chip) + standby.seconds)
  }
}
