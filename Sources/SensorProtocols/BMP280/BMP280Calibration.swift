/// The factory trimming parameters of a BMP280/BME280 temperature and pressure sensor,
/// `dig_T1…dig_P9`, as read from 0x88…0x9F (BST-BMP280-DS001 §3.11.2, table 17).
public struct BMP280Calibration: Sendable, Hashable, Codable {
  public var digT1: UInt16
  public var digT2: Int16
  public var digT3: Int16
  public var digP1: UInt16
  public var digP2: Int16
  public var digP3: Int16
  public var digP4: Int16
  public var digP5: Int16
  public var digP6: Int16
  public var digP7: Int16
  public var digP8: Int16
  public var digP9: Int16

  public init(
    digT1: UInt16, digT2: Int16, digT3: Int16,
    digP1: UInt16, digP2: Int16, digP3: Int16, digP4: Int16, digP5: Int16, digP6: Int16,
    digP7: Int16, digP8: Int16, digP9: Int16
  ) {
    self.digT1 = digT1
    self.digT2 = digT2
    self.digT3 = digT3
    self.digP1 = digP1
    self.digP2 = digP2
    self.digP3 = digP3
    self.digP4 = digP4
    self.digP5 = digP5
    self.digP6 = digP6
    self.digP7 = digP7
    self.digP8 = digP8
    self.digP9 = digP9
  }

  /// Parses the bytes read from 0x88 (at least 24; a longer read, e.g. 26 bytes up to 0xA1,
  /// is fine: only the first 24 are used). Each word is little-endian, LSB at the lower address
  /// (DS001 §3.11.2, table 17).
  public init(registers bytes: some Collection<UInt8>) throws(BMP280Error) {
    let b = Array(bytes)
    guard b.count >= BMP280Layout.calibrationLength else {
      throw .shortRead(.calibration, expected: BMP280Layout.calibrationLength, got: b.count)
    }
    let block = b[0..<BMP280Layout.calibrationLength]
    if block.allSatisfy({ $0 == 0x00 }) || block.allSatisfy({ $0 == 0xFF }) {
      throw .invalidCalibration(
        "every byte of 0x88…0x9F is \(BMP280Error.hex(b[0])): nothing was read from the chip")
    }
    func u16(_ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    func s16(_ i: Int) -> Int16 { Int16(bitPattern: u16(i)) }
    self.init(
      digT1: u16(0), digT2: s16(2), digT3: s16(4),
      digP1: u16(6), digP2: s16(8), digP3: s16(10), digP4: s16(12), digP5: s16(14),
      digP6: s16(16), digP7: s16(18), digP8: s16(20), digP9: s16(22))
    // dig_P1 is the divisor of the pressure formula (DS001 §3.11.3 guards var1 == 0); a zero
    // there, or a zero dig_T1, is no real part's trimming.
    if digP1 == 0 { throw .invalidCalibration("dig_P1 is 0 (pressure would divide by zero)") }
    if digT1 == 0 { throw .invalidCalibration("dig_T1 is 0") }
  }

  /// The 24-byte register image these parameters are read from (the inverse of
  /// `init(registers:)`; for the simulated chip and for tests).
  public var registerImage: [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(BMP280Layout.calibrationLength)
    func put(_ word: UInt16) {
      out.append(UInt8(truncatingIfNeeded: word))
      out.append(UInt8(truncatingIfNeeded: word >> 8))
    }
    put(digT1)
    for word in [digT2, digT3] { put(UInt16(bitPattern: word)) }
    put(digP1)
    for word in [digP2, digP3, digP4, digP5, digP6, digP7, digP8, digP9] {
      put(UInt16(bitPattern: word))
    }
    return out
  }
}

/// The BME280's humidity trimming parameters `dig_H1…dig_H6` (BST-BME280-DS002 §4.2.2, table 16).
///
/// `dig_H1` is alone at 0xA1; the rest are 7 bytes at 0xE1…0xE7 with two 12-bit values packed
/// around a shared byte: dig_H4 = 0xE4[7:0] as bits 11:4 and 0xE5[3:0] as bits 3:0; dig_H5 =
/// 0xE5[7:4] as bits 3:0 and 0xE6[7:0] as bits 11:4. Both are signed 12-bit numbers: the sign is
/// bit 7 of their most significant byte (0xE4 and 0xE6).
public struct BME280HumidityCalibration: Sendable, Hashable, Codable {
  public var digH1: UInt8
  public var digH2: Int16
  public var digH3: UInt8
  public var digH4: Int16
  public var digH5: Int16
  public var digH6: Int8

  public init(digH1: UInt8, digH2: Int16, digH3: UInt8, digH4: Int16, digH5: Int16, digH6: Int8) {
    self.digH1 = digH1
    self.digH2 = digH2
    self.digH3 = digH3
    self.digH4 = digH4
    self.digH5 = digH5
    self.digH6 = digH6
  }

  /// Parses `dig_H1` (the byte at 0xA1) and the bytes read from 0xE1 (at least 7).
  public init(h1 digH1: UInt8, registers bytes: some Collection<UInt8>) throws(BMP280Error) {
    let b = Array(bytes)
    guard b.count >= BMP280Layout.humidityCalibrationLength else {
      throw .shortRead(
        .humidityCalibration, expected: BMP280Layout.humidityCalibrationLength, got: b.count)
    }
    // b[0] = 0xE1 … b[6] = 0xE7
    let h2 = Int16(bitPattern: UInt16(b[0]) | UInt16(b[1]) << 8)
    // Sign-extend the most significant byte, then shift it into bits 11:4 (multiplying keeps the
    // sign) and put the low nibble into bits 3:0.
    let h4 = Int16(Int8(bitPattern: b[3])) * 16 | Int16(b[4] & 0x0F)
    let h5 = Int16(Int8(bitPattern: b[5])) * 16 | Int16(b[4] >> 4)
    self.init(
      digH1: digH1, digH2: h2, digH3: b[2], digH4: h4, digH5: h5, digH6: Int8(bitPattern: b[6]))
  }

  /// The 7 bytes at 0xE1…0xE7 these parameters are read from (`dig_H1` is separate, at 0xA1).
  /// Only the low 12 bits of `digH4`/`digH5` are representable.
  public var registerImage: [UInt8] {
    let h2 = UInt16(bitPattern: digH2)
    let h4 = UInt16(bitPattern: digH4) & 0x0FFF
    let h5 = UInt16(bitPattern: digH5) & 0x0FFF
    return [
      UInt8(truncatingIfNeeded: h2), UInt8(truncatingIfNeeded: h2 >> 8), digH3,
      UInt8(truncatingIfNeeded: h4 >> 4),
      UInt8(truncatingIfNeeded: (h5 & 0x0F) << 4 | (h4 & 0x0F)),
      UInt8(truncatingIfNeeded: h5 >> 4),
      UInt8(bitPattern: digH6),
    ]
  }
}
