import Foundation
import SensorProtocols

/// The file `[ant] network_key_file` names: the ANT+ network key as 16 hexadecimal digits
/// (spaces, colons, commas and "0x" between them allowed, as the key is usually printed). The
/// ANT+ key is licensed to ANT+ adopters and must not be published with workoutd, so the rider
/// supplies it; like ssh with a private key, a file others can read is refused.
struct ANTNetworkKeyFile {
  let path: String

  func load() throws(PrivateFile.Problem) -> ANTNetworkKey {
    let text = try PrivateFile(path: path, holds: "the ANT+ network key, which is licensed").read()
    guard let key = Self.parse(text) else {
      throw PrivateFile.Problem(description: "\(path) must hold the 8-byte network key as 16 hexadecimal digits")
    }
    return key
  }

  static func parse(_ text: String) -> ANTNetworkKey? {
    let separators = Set(" \t\r\n:,-".unicodeScalars)
    let digits = text.lowercased().replacingOccurrences(of: "0x", with: " ").unicodeScalars.filter {
      !separators.contains($0)
    }.map(Character.init)
    guard digits.count == 16, digits.allSatisfy(\.isHexDigit) else { return nil }
    let bytes = stride(from: 0, to: 16, by: 2).map { UInt8(String(digits[$0..<$0 + 2]), radix: 16)! }
    return ANTNetworkKey(bytes)
  }
}
