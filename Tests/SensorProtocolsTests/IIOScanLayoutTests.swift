import Testing

@testable import SensorProtocols

/// The IIO buffer's record as the kernel lays it out, from the scan elements' `type` files.
struct IIOScanLayoutTests {
  @Test(arguments: [
    ("le:s16/16>>0", IIOScanFormat(bigEndian: false, signed: true, bits: 16, storageBits: 16)),
    ("be:s12/16>>4\n", IIOScanFormat(bigEndian: true, signed: true, bits: 12, storageBits: 16, shift: 4)),
    ("le:u24/32>>0", IIOScanFormat(bigEndian: false, signed: false, bits: 24, storageBits: 32)),
    ("le:s64/64>>0", IIOScanFormat(bigEndian: false, signed: true, bits: 64, storageBits: 64)),
    ("be:u16/16X4>>0", IIOScanFormat(bigEndian: true, signed: false, bits: 16, storageBits: 16, repeatCount: 4)),
    ("le:s16/16", IIOScanFormat(bigEndian: false, signed: true, bits: 16, storageBits: 16)),
  ])
  func typeFilesParse(text: String, format: IIOScanFormat) throws {
    #expect(try IIOScanFormat(parsing: text) == format)
  }

  @Test(arguments: [
    "", "xe:s16/16>>0", "le:q16/16>>0", "le:s16/12>>0", "le:s17/16>>0", "le:s16/24>>0", "le:s12/16>>8", "le:s16/16X0",
  ])
  func badTypeFilesAreErrorsNamingTheText(text: String) {
    #expect(throws: IIOFormatError.self) { try IIOScanFormat(parsing: text) }
  }

  @Test func valuesAreShiftedMaskedAndSignExtended() throws {
    // 12 bits, big-endian, shifted by 4 (the ADXL345 family's layout): 0xFFF0 is -1.
    let twelve = try IIOScanFormat(parsing: "be:s12/16>>4")
    #expect(twelve.value(in: [0xFF, 0xF0], at: 0) == -1)
    #expect(twelve.value(in: [0x7F, 0xF5], at: 0) == 2047, "the low bits are not data")
    let sixteen = try IIOScanFormat(parsing: "le:s16/16>>0")
    #expect(sixteen.value(in: [0x00, 0x40], at: 0) == 16384)
    #expect(sixteen.value(in: [0x00, 0x80], at: 0) == -32768)
    let unsigned = try IIOScanFormat(parsing: "le:u16/16>>0")
    #expect(unsigned.value(in: [0xFF, 0xFF], at: 0) == 65535)
  }

  /// The BMI160 with gyroscope, accelerometer and timestamp enabled: six le:s16 values in index
  /// order, padding, then the s64 timestamp aligned to 8: 24 bytes.
  @Test func aBMI160RecordIsSixValuesAndATimestamp() throws {
    let s16 = try IIOScanFormat(parsing: "le:s16/16>>0")
    let names = ["anglvel_x", "anglvel_y", "anglvel_z", "accel_x", "accel_y", "accel_z"]
    var channels = names.enumerated().map { IIOScanChannel(name: $0.element, index: $0.offset, format: s16) }
    channels.append(IIOScanChannel(name: "timestamp", index: 6, format: try IIOScanFormat(parsing: "le:s64/64>>0")))
    let layout = IIOScanLayout(channels.reversed())
    #expect(layout.recordSize == 24)
    #expect(layout.channels.map(\.offset) == [0, 2, 4, 6, 8, 10, 16])
    var record = [UInt8](repeating: 0, count: 24)
    record[10] = 0x00
    record[11] = 0x40  // accel_z +16384
    record[0] = 0xFE
    record[1] = 0xFF  // anglvel_x -2
    for (index, byte) in [0x00, 0xCA, 0x9A, 0x3B].enumerated() { record[16 + index] = UInt8(byte) }  // 1 s in ns
    #expect(layout.value("accel_z", in: record) == 16384)
    #expect(layout.value("anglvel_x", in: record) == -2)
    #expect(layout.value("timestamp", in: record) == 1_000_000_000)
    #expect(layout.value("magn_x", in: record) == nil)
    #expect(layout.value("accel_z", in: Array(record.prefix(20))) == nil, "a short record")
    // Looked up once, and read in place where the record lies among others.
    let timestamp = try #require(layout.placed("timestamp"))
    #expect(timestamp.offset == 16 && layout.placed("magn_x") == nil)
    let records = [UInt8](repeating: 0xEE, count: 24) + record
    records.withUnsafeBytes { bytes in
      #expect(timestamp.channel.format.value(in: bytes, at: 24 + timestamp.offset) == 1_000_000_000)
      #expect(s16.value(in: bytes, at: 24 + 10) == 16384)
      #expect(s16.value(in: bytes, at: 24 + 0) == -2)
    }
  }

  /// An element longer than the one before it is aligned to its own length, and the record to
  /// its largest element.
  @Test func elementsAlignToTheirLengthAndTheRecordToTheLargest() throws {
    let layout = IIOScanLayout([
      IIOScanChannel(name: "a", index: 0, format: try IIOScanFormat(parsing: "le:u8/8>>0")),
      IIOScanChannel(name: "b", index: 1, format: try IIOScanFormat(parsing: "le:u32/32>>0")),
      IIOScanChannel(name: "c", index: 2, format: try IIOScanFormat(parsing: "le:u16/16>>0")),
    ])
    #expect(layout.channels.map(\.offset) == [0, 4, 8])
    #expect(layout.recordSize == 12)
  }
}
