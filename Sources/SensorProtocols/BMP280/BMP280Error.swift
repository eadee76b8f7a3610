/// What can be wrong with bytes read from a BMP280/BME280.
public enum BMP280Error: Error, Sendable, Hashable, CustomStringConvertible {
  /// The `id` register (0xD0) holds something other than 0x58 (BMP280) or 0x60 (BME280).
  case wrongChip(id: UInt8)
  /// A read returned fewer bytes than the block needs.
  case shortRead(BMP280Block, expected: Int, got: Int)
  /// The calibration image cannot be right (a failed read, or a chip whose NVM was not copied).
  case invalidCalibration(String)
  /// The channel was skipped (oversampling 0) or no measurement has finished since power-on or
  /// reset: its data registers hold the reset value 0x80000 (0x8000 for humidity)
  /// (DS001 §3.3.1–3.3.2, table 4; DS002 §3.4.1, §5.4.9).
  case measurementNotAvailable(BMP280Channel)
  /// A setting the chip has no encoding for (a BME280-only standby time on a BMP280, say).
  case unsupportedSetting(String)

  public var description: String {
    switch self {
    case .wrongChip(let id):
      let found = "chip id " + Self.hex(id) + " at register 0xD0"
      let expected = "expected 0x58 (BMP280) or 0x60 (BME280)"
      if let guess = Self.knownChip(id) {
        return "\(found) is \(guess), not a BMP280/BME280; \(expected)"
      }
      return "\(found) is not a BMP280/BME280; \(expected)"
    case .shortRead(let block, let expected, let got):
      return "short read of the \(block.rawValue): expected \(expected) bytes, got \(got)"
    case .invalidCalibration(let why):
      return "invalid calibration: \(why)"
    case .measurementNotAvailable(let channel):
      return "no \(channel.rawValue) measurement available (data registers hold the reset value)"
    case .unsupportedSetting(let what):
      return "unsupported setting: \(what)"
    }
  }

  /// Other parts that answer at the same I2C addresses (0x76/0x77), by the id they report at
  /// 0xD0, so a wrong part is named rather than just refused.
  private static func knownChip(_ id: UInt8) -> String? {
    switch id {
    case 0x55: "a BMP180/BMP085"
    case 0x56, 0x57: "a BMP280 engineering sample"
    case 0x61: "a BME680/BME688"
    case 0x00, 0xFF: "what an empty bus reads (no device answering?)"
    default: nil
    }
  }

  static func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return "0x" + (digits.count < 2 ? "0" + digits : digits)
  }
}

/// The blocks of bytes the decoder parses.
public enum BMP280Block: String, Sendable, Hashable {
  case calibration = "calibration (0x88…0x9F)"
  case humidityCalibration = "humidity calibration (0xE1…0xE7)"
  case data = "data burst (0xF7…)"
}

/// A measured quantity.
public enum BMP280Channel: String, Sendable, Hashable {
  case temperature
  case pressure
  case humidity
}
