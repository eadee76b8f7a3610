import Foundation
import SensorProtocols
import Testing

@testable import BoardLinux
@testable import WorkoutDaemon

#if canImport(Glibc)
  import Glibc
#endif

@Suite("ANT+ sensors in [sensors], and the network key's file")
struct ANTConfigurationTests {
  private let noSystemd: [String: String] = [:]
  private let keyed = "[ant]\nnetwork_key_file = \"/etc/workoutd/ant-network-key\"\n"

  @Test func anANTSensorIsNamedByItsDeviceNumberOrAny() throws {
    let file = try DaemonConfiguration.parse(
      keyed
        + "[sensors]\nheart_rate = \"ant:any\"\npower = \"ANT:5151/5\"\nspeed_cadence = \"ant:cadence:17\"\n",
      file: "t", environment: noSystemd)
    #expect(file.ant.networkKeyFile == "/etc/workoutd/ant-network-key")
    #expect(file.sensors.choice(.heartRate) == .ant(ANTSensor(profile: .heartRate)))
    #expect(
      file.sensors.choice(.power) == .ant(ANTSensor(profile: .bicyclePower, deviceNumber: 5151, transmissionType: 5)))
    #expect(file.sensors.choice(.speedCadence) == .ant(ANTSensor(profile: .cadence, deviceNumber: 17)))
    #expect(file.sensors.heartRate == nil, "no BLE address in an ANT+ sensor's role")
    // Written back as read.
    #expect(
      ["ant:any", "ant:5151/5", "ant:cadence:17"] == SensorRole.allCases.map { file.sensors.choice($0)!.description })
    // A BLE sensor beside them.
    let mixed = try DaemonConfiguration.parse(
      keyed + "[sensors]\nheart_rate = \"A0:9E:1A:12:34:56\"\npower = \"ant:any\"\n", file: "t", environment: noSystemd)
    #expect(mixed.sensors.choice(.heartRate)?.ble?.description == "A0:9E:1A:12:34:56")
    #expect(mixed.sensors.choice(.power)?.ant?.profile == .bicyclePower)
  }

  @Test(arguments: [
    ("ant:", "must be an ANT+ sensor like"), ("ant:0", "must be an ANT+ sensor like"),
    ("ant:65536", "must be an ANT+ sensor like"), ("ant:12/256", "must be an ANT+ sensor like"),
    ("ant:speed:17", "must be an ANT+ sensor like"), ("ant:heart_rate:any:1", "must be an ANT+ sensor like"),
    ("ant:12/1/2", "must be an ANT+ sensor like"), ("ant:-3", "must be an ANT+ sensor like"),
  ])
  func aBadANTSensorIsRefusedWithTheSyntax(_ text: String, _ words: String) {
    do {
      _ = try DaemonConfiguration.parse(
        keyed + "[sensors]\nheart_rate = \"\(text)\"\n", file: "w.toml", environment: noSystemd)
      Issue.record("\(text) was accepted")
    } catch {
      #expect("\(error)".contains("[sensors] heart_rate \(words)"), "\(error)")
    }
  }

  @Test func anANTSensorNeedsTheNetworkKeysFile() {
    do {
      _ = try DaemonConfiguration.parse("[sensors]\npower = \"ant:any\"\n", file: "w.toml", environment: noSystemd)
      Issue.record("an ANT+ sensor without a network key was accepted")
    } catch {
      #expect("\(error)".contains("[ant] network_key_file must name the file with the ANT+ network key"), "\(error)")
    }
    #expect(throws: Never.self) { try DaemonConfiguration.parse(keyed, file: "t", environment: noSystemd) }
  }

  @Test func theKeyIsSixteenHexDigitsAsItIsUsuallyPrinted() {
    let key = [UInt8]([0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF])
    for text in [
      "0123456789abcdef\n", "01 23 45 67 89 AB CD EF", "0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF",
      "01:23:45:67:89:ab:cd:ef",
    ] {
      #expect(ANTNetworkKeyFile.parse(text)?.bytes == key, "\(text)")
    }
    for text in ["", "0123456789abcde", "0123456789abcdef01", "0123456789abcdeg"] {
      #expect(ANTNetworkKeyFile.parse(text) == nil, "\(text)")
    }
  }

  @Test func aKeyFileOthersCanReadIsRefusedAndAMissingOneSaysSo() throws {
    let path = NSTemporaryDirectory() + "ant-key-" + UUID().uuidString
    defer { unlink(path) }
    #expect(throws: PrivateFile.Problem.self) { try ANTNetworkKeyFile(path: path).load() }
    try "0123456789abcdef\n".write(toFile: path, atomically: false, encoding: .utf8)
    chmod(path, 0o644)
    do {
      _ = try ANTNetworkKeyFile(path: path).load()
      Issue.record("a key every user can read was used")
    } catch {
      #expect(error.description.contains("can be read by every user"))
      #expect(!error.description.contains("0123"), "the key is never said")
    }
    chmod(path, 0o600)
    #expect(try ANTNetworkKeyFile(path: path).load().bytes.first == 0x01)
    try "not a key".write(toFile: path, atomically: false, encoding: .utf8)
    #expect(throws: PrivateFile.Problem.self) { try ANTNetworkKeyFile(path: path).load() }
  }
}
