/// The 8 data bytes of an ANT+ broadcast: a device profile's data page. Little-endian fields.
struct ANTPageBytes {
  let b: [UInt8]

  /// Exactly 8 bytes, or `truncated` (id 0: a page, not a serial message).
  init(_ payload: some Collection<UInt8>) throws(ANTDecodeError) {
    b = Array(payload)
    guard b.count >= 8 else { throw .truncated(id: 0, needed: 8, available: b.count) }
  }

  subscript(_ i: Int) -> UInt8 { b[i] }
  func u16(_ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
  func u24(_ i: Int) -> UInt32 { UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 }
  /// Byte 0 bits 0–6: the page number.
  var pageNumber: UInt8 { b[0] & 0x7F }
  /// Byte 0 bit 7: the page change toggle, flipped every fourth message by profiles that page.
  var toggle: Bool { b[0] & 0x80 != 0 }

  /// Pages 1–3 of the profiles that page their background data this way (heart rate, speed
  /// and cadence); nil for any other page.
  var background: ANTBackgroundPage? {
    switch pageNumber {
    case 1: .operatingTime(seconds: u24(1) * 2)
    case 2: .manufacturer(id: b[1], serialUpper: u16(2))
    case 3: .product(hardware: b[1], software: b[2], model: b[3])
    default: nil
    }
  }

  /// What a paging profile's page holds: a legacy sensor's (byte 0 not a page number) and
  /// page 0 are the default page, pages 1–3 the shared background, the rest `specific`'s.
  func content<Content>(
    legacy: Bool, default: Content, background: (ANTBackgroundPage) -> Content, specific: (UInt8) -> Content
  ) -> Content {
    if legacy || pageNumber == 0 { return `default` }
    if let page = self.background { return background(page) }
    return specific(pageNumber)
  }
}

/// The background pages the heart-rate and speed/cadence profiles share (ANT+ Heart Rate
/// 5.3, Bike Speed and Cadence 5.3: pages 1–3, bytes 1–3).
public enum ANTBackgroundPage: Sendable, Hashable {
  /// Page 1: cumulative operating time, 24 bits of 2 s units, in seconds.
  case operatingTime(seconds: UInt32)
  /// Page 2: manufacturer ID and the serial number's upper 16 bits.
  case manufacturer(id: UInt8, serialUpper: UInt16)
  /// Page 3: hardware version, software version, model number.
  case product(hardware: UInt8, software: UInt8, model: UInt8)
}

/// A battery's state as ANT+ sensors report it: in the Common Data Page 82 "Battery Status"
/// (ANT+ Common Pages, section 6.9) and in the heart-rate and speed/cadence profiles' own
/// battery pages, which share the "descriptive bit field" and fractional-voltage bytes.
public struct ANTBatteryStatus: Sendable, Hashable {
  /// Descriptive bit field bits 4–6 (Common Pages, Table 6-21).
  public enum Level: UInt8, Sendable, Hashable {
    case new = 1
    case good = 2
    case ok = 3
    case low = 4
    case critical = 5
    case invalid = 7
  }

  /// Battery status; nil for the reserved values 0 and 6.
  public var status: Level?
  /// Volts: the coarse voltage (bits 0–3, whole volts) plus the fractional byte in 1/256 V;
  /// nil when the coarse field is 0xF, "invalid".
  public var voltage: Double?
  /// Percent, from a page that carries it (heart-rate page 7); 0xFF there is "not used".
  public var percent: Int?

  /// From the fractional-voltage byte and the descriptive bit field.
  init(fractionalVoltage: UInt8, descriptive: UInt8, percent: UInt8 = 0xFF) {
    status = Level(rawValue: (descriptive >> 4) & 0x07)
    let coarse = descriptive & 0x0F
    voltage = coarse == 0x0F ? nil : Double(coarse) + Double(fractionalVoltage) / 256
    self.percent = percent <= 100 ? Int(percent) : nil
  }
}

/// Tells a paged sensor from a legacy one by the page change toggle (byte 0 bit 7), which
/// paged sensors flip every fourth message (Heart Rate profile 5.2; Bike Speed and Cadence
/// profile, "Data Page Toggle"). Until it has flipped, byte 0 is not known to be a page number.
struct ANTToggleWatch: Sendable {
  private var first: Bool?
  private(set) var flipped = false

  /// Notes one page's byte 0; returns whether page numbers are trusted.
  mutating func observe(_ byte0: UInt8) -> Bool {
    let toggle = byte0 & 0x80 != 0
    if let first { flipped = flipped || first != toggle } else { first = toggle }
    return flipped
  }
}
