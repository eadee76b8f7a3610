import Foundation
import SensorProtocols

#if canImport(Glibc)
  import Glibc
#endif

/// The file `[ant] network_key_file` names: the ANT+ network key as 16 hexadecimal digits
/// (spaces, colons, commas and "0x" between them allowed, as the key is usually printed). The
/// ANT+ key is licensed to ANT+ adopters and must not be published with workoutd, so the rider
/// supplies it; like ssh with a private key, a file others can read is refused.
struct ANTNetworkKeyFile {
  let path: String

  struct Problem: Error, CustomStringConvertible {
    var description: String
  }

  func load() throws(Problem) -> ANTNetworkKey {
    var status = stat()
    guard stat(path, &status) == 0 else {
      throw Problem(description: "\(path): \(String(cString: strerror(errno))) (the ANT+ network key's file)")
    }
    guard status.st_mode & S_IFMT == S_IFREG else { throw Problem(description: "\(path) is not a file") }
    if status.st_mode & S_IROTH != 0 {
      throw Problem(
        description:
          "\(path) can be read by every user: the ANT+ network key is licensed, keep it to the service (chmod 600, owned by workoutd)"
      )
    }
    guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
      throw Problem(description: "\(path) cannot be read by the service (owned by workoutd, mode 600?)")
    }
    guard let key = Self.parse(text) else {
      throw Problem(description: "\(path) must hold the 8-byte network key as 16 hexadecimal digits")
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
