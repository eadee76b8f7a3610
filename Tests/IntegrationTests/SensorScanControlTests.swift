import Foundation
import LinuxSupport
import Testing
import WorkoutControl
import WorkoutTestSupport

/// `workoutctl sensors scan` through the real service. The scan itself, over the kernel's
/// management channel with bluetoothd running, is the board VM's (70-workoutd-ble-strap.sh);
/// here: what a board without Bluetooth says, and that the service goes on after it.
@Suite(.serialized)
struct SensorScanControlTests {
  func ctl(_ arguments: [String], _ dir: ServiceDirectory) throws -> (status: Int32, output: String) {
    try run(binaryDirectory + "/workoutctl", arguments + ["--state-dir", dir.state, "--runtime-dir", dir.runtime])
  }

  @Test func theSimulatedBoardSaysItHasNoBluetooth() throws {
    let dir = ServiceDirectory()
    let service = try ServiceProcess(dir, arguments: ["--speed", "1"])
    try service.waitUntilReady()
    let (status, output) = try ctl(["sensors", "scan", "--seconds", "1"], dir)
    #expect(status == 1)
    #expect(output.contains("this board has no Bluetooth to scan with"), "\(output)")
    #expect(try service.status().state == .notStarted)
  }

  @Test func aLinuxBoardWithoutBluetoothInItsKernelSaysSoAndGoesOn() throws {
    // This machine's kernel has no AF_BLUETOOTH (checked: the test is about that case).
    let probe = socket(31, Int32(SOCK_RAW.rawValue), 1)
    if probe >= 0 {
      close(probe)
      print("this kernel has Bluetooth sockets: the no-Bluetooth case is not reachable here")
      return
    }
    let dir = ServiceDirectory()
    let config = dir.path + "/workoutd.toml"
    try """
    [service]
    board = "linux"
    [gps]
    enabled = false
    [sensors]
    adapter = "hci0"
    """.write(toFile: config, atomically: true, encoding: .utf8)
    let service = try ServiceProcess(dir, arguments: ["--config", config])
    try service.waitUntilReady()
    let (status, output) = try ctl(["sensors", "scan", "--seconds", "1"], dir)
    #expect(status == 1)
    #expect(output.contains("cannot open the Bluetooth management channel"), "\(output)")
    #expect(output.contains("no Bluetooth in this kernel"), "\(output)")
    // A second scan is not refused as "already running": the first one finished.
    let (again, text) = try ctl(["sensors", "scan", "--seconds", "1", "--json"], dir)
    #expect(again == 1)
    #expect(!text.contains("already running"), "\(text)")
    #expect(try service.status().state == .notStarted)
    #expect(service.log.contains("sensor scan failed"), "the failure is logged")

    // Choosing a strap works without a radio: kept, started (and absent, with no Bluetooth).
    let (added, said) = try ctl(["sensors", "add", "A0:9E:1A:12:34:56", "--role", "heart_rate"], dir)
    #expect(added == 0, "\(said)")
    #expect(said.contains("heart_rate: A0:9E:1A:12:34:56 (public), connecting"), "\(said)")
    #expect(FileManager.default.fileExists(atPath: dir.state + "/sensors.json"))
    try waitFor("the strap's condition in status", timeout: 10) {
      try service.status().devices["heartRateStrap"]?.hasPrefix("absent") == true
    }
    let (_, listed) = try ctl(["sensors", "list"], dir)
    #expect(listed.contains("heart_rate    A0:9E:1A:12:34:56 (public)  from the workoutctl"), "\(listed)")
    let (removed, text2) = try ctl(["sensors", "remove", "a0:9e:1a:12:34:56"], dir)
    #expect(removed == 0, "\(text2)")
    try waitFor("the strap to leave status", timeout: 10) { try service.status().devices["heartRateStrap"] == nil }
    let (_, none) = try ctl(["sensors", "list"], dir)
    #expect(none.contains("no sensors"), "\(none)")
    let (refused, why) = try ctl(["sensors", "add", "A0:9E:1A:12:34:56"], dir)
    #expect(refused == 1)
    #expect(why.contains("scan for it first"), "\(why)")
  }

  @Test func aBadAdapterNameIsAConfigurationError() throws {
    let dir = ServiceDirectory()
    let config = dir.path + "/workoutd.toml"
    try """
    [service]
    board = "linux"
    [sensors]
    adapter = "bluetooth0"
    """.write(toFile: config, atomically: true, encoding: .utf8)
    let (status, output) = try run(
      binaryDirectory + "/workoutd",
      ["--config", config, "--check-config", "--state-dir", dir.state, "--runtime-dir", dir.runtime])
    #expect(status != 0)
    #expect(output.contains("adapter"), "\(output)")
    #expect(output.contains("must name a Bluetooth controller like \"hci0\""), "\(output)")
  }
}
