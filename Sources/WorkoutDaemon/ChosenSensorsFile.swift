import BoardLinux
import Foundation
import LinuxSupport
import SensorProtocols

#if canImport(Glibc)
  import Glibc
#endif

/// The sensors chosen with `workoutctl sensors add|remove`, kept in the state directory as
/// `sensors.json`. For each role it lists, it overrides the configuration file: a BLE address,
/// an ANT+ sensor, or neither for a sensor removed. Versioned: a file this binary cannot read (a
/// newer format, or damaged) is left as it is, reported, and not written over. Version 2 added
/// ANT+ sensors; a file without one is still written as version 1, so that an older workoutd
/// installed again reads it.
struct ChosenSensorsFile {
  static let version = 2
  static let readable = 1...version

  struct Entry: Codable, Hashable, Sendable {
    var role: SensorRole
    /// A BLE sensor's address; nil with `ant` nil: no sensor in this role, whatever the
    /// configuration file says.
    var address: String?
    var addressType: BluetoothAddress.Kind?
    var ant: ANTSensor?

    init(role: SensorRole, address: String? = nil, addressType: BluetoothAddress.Kind? = nil, ant: ANTSensor? = nil) {
      self.role = role
      self.address = address
      self.addressType = addressType
      self.ant = ant
    }

    init(role: SensorRole, _ choice: SensorChoice?) {
      switch choice {
      case .ble(let address): self.init(role: role, address: address.description, addressType: address.kind)
      case .ant(let sensor): self.init(role: role, ant: sensor)
      case nil: self.init(role: role)
      }
    }
  }

  struct Contents: Codable {
    var version: Int
    var sensors: [Entry]
  }

  enum Loaded: Sendable {
    case entries([Entry])
    /// Why it cannot be used (said in the log and in refusals).
    case unreadable(String)
  }

  let path: String

  func load() -> Loaded {
    guard let data = FileManager.default.contents(atPath: path) else {
      return FileManager.default.fileExists(atPath: path)
        ? .unreadable("\(path) cannot be read") : .entries([])
    }
    struct Version: Decodable { var version: Int }
    guard let version = try? JSONDecoder().decode(Version.self, from: data) else {
      return .unreadable("\(path) is not a sensors file (no version)")
    }
    guard Self.readable.contains(version.version) else {
      return .unreadable(
        "\(path) is version \(version.version), written by a newer workoutd (this one reads up to \(Self.version))")
    }
    do {
      return .entries(try JSONDecoder().decode(Contents.self, from: data).sensors)
    } catch {
      return .unreadable("\(path) is damaged: \(error)")
    }
  }

  /// Written to a temporary name, synced, renamed over the old one and the directory synced
  /// (`DurableFile`): a power cut leaves the old file or the new one, never half of one.
  func save(_ entries: [Entry]) throws(DurableFileError) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    let version = entries.contains { $0.ant != nil } ? Self.version : 1
    guard let data = try? encoder.encode(Contents(version: version, sensors: entries)) else {
      throw DurableFileError("cannot encode \(path)", errno: EINVAL)
    }
    let file = try DurableFile.begin(path: path, temporarySuffix: ".tmp")
    try file.write(Array(data) + [10])
    try file.commit()
  }
}
