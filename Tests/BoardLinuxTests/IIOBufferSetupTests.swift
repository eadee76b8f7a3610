import Foundation
import LinuxSupport
import Testing

@testable import BoardLinux

/// `IIOBufferSetup` on trees laid out as sysfs and configfs are for a BMI160 with no interrupt
/// wired: what it writes where. The kernel's answers (the hrtimer trigger appearing once made,
/// EBUSY on a running buffer) are the board VM's to show.
final class IIOBufferSetupTests {
  let root: String
  var devices: String { root + "/sys/bus/iio/devices" }
  var device: String { devices + "/iio:device0" }
  var configfs: String { root + "/config" }

  init() throws {
    var template = Array((NSTemporaryDirectory() + "/iio-setup-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
    root = String(cString: made)
    for (attribute, value) in [
      "name": "bmi160", "in_accel_sampling_frequency": "25.000000", "in_anglvel_sampling_frequency": "25.000000",
      "current_timestamp_clock": "realtime", "trigger/current_trigger": "", "buffer/enable": "1",
      "buffer/length": "2", "buffer/watermark": "1",
    ] {
      try write(device + "/" + attribute, value)
    }
    for channel in ["anglvel_x", "anglvel_y", "anglvel_z", "accel_x", "accel_y", "accel_z", "temp", "timestamp"] {
      try write(device + "/scan_elements/in_\(channel)_en", channel == "temp" ? "1" : "0")
    }
    // What the kernel makes when the trigger is made in configfs.
    try write(devices + "/trigger0/name", "workoutd-iio-device0")
    try write(devices + "/trigger0/sampling_frequency", "0")
  }

  deinit { try? FileManager.default.removeItem(atPath: root) }

  func write(_ path: String, _ value: String) throws {
    let url = URL(fileURLWithPath: path)
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try (value + "\n").write(to: url, atomically: false, encoding: .utf8)
  }

  func read(_ path: String) throws -> String {
    try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .newlines)
  }

  var setup: IIOBufferSetup {
    var setup = IIOBufferSetup()
    setup.devices = devices
    setup.configfs = configfs
    return setup
  }

  @Test func aDeviceWithoutATriggerGetsAnHRTimerOneAndItsBufferOn() throws {
    try FileManager.default.createDirectory(
      atPath: configfs + "/iio/triggers/hrtimer", withIntermediateDirectories: true)
    let done = try setup.run(device: "iio:device0")
    #expect(FileManager.default.fileExists(atPath: configfs + "/iio/triggers/hrtimer/workoutd-iio-device0"))
    #expect(try read(devices + "/trigger0/sampling_frequency") == "100")
    #expect(try read(device + "/trigger/current_trigger") == "workoutd-iio-device0")
    #expect(try read(device + "/in_accel_sampling_frequency") == "100")
    #expect(try read(device + "/in_anglvel_sampling_frequency") == "100")
    for channel in ["anglvel_x", "anglvel_y", "anglvel_z", "accel_x", "accel_y", "accel_z", "timestamp"] {
      #expect(try read(device + "/scan_elements/in_\(channel)_en") == "1", "\(channel)")
    }
    #expect(try read(device + "/scan_elements/in_temp_en") == "0", "only what the service reads")
    #expect(try read(device + "/current_timestamp_clock") == "monotonic")
    #expect(try read(device + "/buffer/length") == "256")
    #expect(try read(device + "/buffer/watermark") == "25")
    #expect(try read(device + "/buffer/enable") == "1")
    #expect(done.contains("trigger workoutd-iio-device0"), "\(done)")
    // Again (the unit restarted): the same, the trigger made once.
    #expect(try setup.run(device: "iio:device0") == done)
  }

  @Test func theDriversOwnTriggerIsKept() throws {
    try write(device + "/trigger/current_trigger", "bmi160-dev0")
    _ = try setup.run(device: "iio:device0")
    #expect(try read(device + "/trigger/current_trigger") == "bmi160-dev0")
    #expect(!FileManager.default.fileExists(atPath: configfs + "/iio"), "no trigger made")
  }

  @Test func noConfigfsIsAnErrorNamingTheModule() throws {
    do {
      _ = try setup.run(device: "iio:device0")
      Issue.record("set up with no way to make a trigger")
    } catch {
      #expect(error.description.contains("iio-trig-hrtimer"), "\(error)")
    }
    #expect(throws: IIODeviceError.self) { try self.setup.run(device: "iio:device9") }
  }

  @Test func aDeviceWithNoAccelerometerIsRefused() throws {
    try FileManager.default.createDirectory(
      atPath: configfs + "/iio/triggers/hrtimer", withIntermediateDirectories: true)
    for axis in ["x", "y", "z"] {
      try FileManager.default.removeItem(atPath: device + "/scan_elements/in_accel_\(axis)_en")
    }
    do {
      _ = try setup.run(device: "iio:device0")
      Issue.record("a gyroscope alone was set up")
    } catch {
      #expect(error.description.contains("no accelerometer"), "\(error)")
    }
  }
}
