/// A Bluetooth device address and its LE kind (Core v5.4, Vol 6, Part B, 1.3): what a sensor is
/// named by in the configuration and in `workoutctl sensors`.
public struct BluetoothAddress: Sendable, Hashable, CustomStringConvertible {
  public enum Kind: String, Sendable, Hashable, Codable {
    /// An IEEE-assigned address (most straps and power meters).
    case `public`
    /// A random static address, or a resolvable private one once the peer is bonded.
    case random
  }

  /// The six bytes as written: "AA:BB:CC:DD:EE:FF" is [0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF].
  public let bytes: [UInt8]
  public let kind: Kind

  public init?(bytes: [UInt8], kind: Kind) {
    guard bytes.count == 6 else { return nil }
    self.bytes = bytes
    self.kind = kind
  }

  /// Parses "AA:BB:CC:DD:EE:FF" (either case); with no kind given, an address whose two most
  /// significant bits are 11 is taken as random static (Vol 6, Part B, 1.3.2.1), else public.
  public init?(_ text: String, kind: Kind? = nil) {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 6 else { return nil }
    var bytes: [UInt8] = []
    for part in parts {
      guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
      bytes.append(byte)
    }
    self.bytes = bytes
    self.kind = kind ?? (bytes[0] & 0xC0 == 0xC0 ? .random : .public)
  }

  public var description: String {
    bytes.map { byte in
      let digits = String(byte, radix: 16, uppercase: true)
      return digits.count == 1 ? "0" + digits : digits
    }.joined(separator: ":")
  }
}
