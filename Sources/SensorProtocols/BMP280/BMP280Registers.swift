// Register map of the Bosch BMP280 and BME280 (the BME280 is a BMP280 plus a humidity sensor;
// its temperature/pressure registers and formulas are the same).
// Sources: BST-BMP280-DS001 §4.2 (memory map) and §3.11.2 (trimming parameters);
// BST-BME280-DS002 §5.3 (memory map) and §4.2.2 (humidity trimming parameters).
// Pure: no I/O. The I2C layer reads and writes these addresses and hands the bytes here.

/// A register address of the BMP280/BME280 (`RawRepresentable`, like swift-system's wrappers).
public struct BMP280Register: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// `calib00…calib23`: dig_T1…dig_P9, 24 bytes little-endian from 0x88 to 0x9F (DS001 §3.11.2).
  public static let calibration = BMP280Register(rawValue: 0x88)
  /// BME280 `dig_H1` (unsigned char) at 0xA1 (DS002 §4.2.2). 0xA0 is reserved.
  public static let humidityH1 = BMP280Register(rawValue: 0xA1)
  /// BME280 `dig_H2…dig_H6`: 7 bytes from 0xE1 to 0xE7 (DS002 §4.2.2).
  public static let humidityCalibration = BMP280Register(rawValue: 0xE1)
  /// `id`: chip identification number (DS001 §4.3.1; DS002 §5.4.1).
  public static let chipID = BMP280Register(rawValue: 0xD0)
  /// `reset`: writing 0xB6 resets the device as at power-on (DS001 §4.3.2).
  public static let reset = BMP280Register(rawValue: 0xE0)
  /// BME280 `ctrl_hum`: humidity oversampling; takes effect only after the next write to
  /// `ctrl_meas` (DS002 §5.4.3).
  public static let ctrlHum = BMP280Register(rawValue: 0xF2)
  /// `status`: bit 3 measuring, bit 0 im_update (DS001 §4.3.3).
  public static let status = BMP280Register(rawValue: 0xF3)
  /// `ctrl_meas`: osrs_t[7:5], osrs_p[4:2], mode[1:0] (DS001 §4.3.4).
  public static let ctrlMeas = BMP280Register(rawValue: 0xF4)
  /// `config`: t_sb[7:5], filter[4:2], spi3w_en[0] (DS001 §4.3.5). Writes in normal mode may be
  /// ignored: write it in sleep mode.
  public static let config = BMP280Register(rawValue: 0xF5)
  /// `press_msb`: start of the data burst press[0xF7…0xF9], temp[0xFA…0xFC], BME280
  /// hum[0xFD…0xFE] (DS001 §4.3.6–4.3.7; DS002 §5.4.9). Read it in one burst so all values
  /// belong to the same measurement (DS001 §3.9, data readout).
  public static let data = BMP280Register(rawValue: 0xF7)

  public var description: String {
    let hex = String(rawValue, radix: 16, uppercase: true)
    return "0x" + (hex.count < 2 ? "0" + hex : hex)
  }
}

/// Lengths and fixed values of the register map.
public enum BMP280Layout {
  /// Bytes of temperature/pressure calibration from 0x88 (0x88…0x9F).
  public static let calibrationLength = 24
  /// Bytes of BME280 humidity calibration from 0xE1 (0xE1…0xE7).
  public static let humidityCalibrationLength = 7
  /// Data burst from 0xF7 without humidity (0xF7…0xFC).
  public static let dataLength = 6
  /// Data burst from 0xF7 with BME280 humidity (0xF7…0xFE).
  public static let dataLengthWithHumidity = 8
  /// The value written to `reset` to reset the device (DS001 §4.3.2).
  public static let resetCommand: UInt8 = 0xB6
  /// Start-up time after power-on or reset before registers can be read, seconds
  /// (DS001 §1 table 2, t_startup 2 ms).
  public static let startupTime = 0.002
}

/// The chips this decoder understands, by the value of their `id` register (0xD0).
public enum BMP280Chip: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// BMP280: temperature and pressure (DS001 §4.3.1: chip_id 0x58).
  case bmp280 = 0x58
  /// BME280: temperature, pressure and humidity (DS002 §5.4.1: chip_id 0x60).
  case bme280 = 0x60

  /// Identifies the chip from the byte read at 0xD0, or explains what else is there.
  public init(chipID: UInt8) throws(BMP280Error) {
    guard let chip = BMP280Chip(rawValue: chipID) else { throw .wrongChip(id: chipID) }
    self = chip
  }

  public var hasHumidity: Bool { self == .bme280 }

  /// How many bytes to read from `BMP280Register.data` in one burst.
  public var dataLength: Int {
    hasHumidity ? BMP280Layout.dataLengthWithHumidity : BMP280Layout.dataLength
  }

  public var description: String {
    switch self {
    case .bmp280: "BMP280"
    case .bme280: "BME280"
    }
  }
}

/// The `status` register (0xF3), DS001 §4.3.3.
public struct BMP280Status: RawRepresentable, Sendable, Hashable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// Bit 3: a conversion is running; the result registers are updated when it clears.
  public var measuring: Bool { rawValue & 0b1000 != 0 }
  /// Bit 0: the NVM calibration is being copied to the image registers (after power-on or
  /// reset); calibration must not be read until it clears.
  public var copyingCalibration: Bool { rawValue & 0b1 != 0 }
}
