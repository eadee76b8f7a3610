import BoardLinux
import Foundation
import LinuxSupport
import Testing
import WorkoutCore

/// `PowerSupplyReader` and `BatteryGauge` on a directory tree laid out as
/// /sys/class/power_supply is: one directory per supply, one file per attribute.
final class BatteryGaugeTests {
  let root: String

  init() throws {
    var template = Array((NSTemporaryDirectory() + "/power-supply-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
    root = String(cString: made)
  }

  deinit {
    try? FileManager.default.removeItem(atPath: root)
    try? FileManager.default.removeItem(atPath: staging)
  }

  /// Beside the class directory: supplies are made here and renamed in (or out), so a gauge
  /// reading meanwhile sees a supply whole or not at all, as the kernel's sysfs shows it.
  var staging: String { root + ".staging" }

  private func supply(_ name: String, _ attributes: [String: String]) throws {
    let directory = root + "/" + name
    if FileManager.default.fileExists(atPath: directory) {
      for (attribute, value) in attributes {
        try (value + "\n").write(toFile: directory + "/" + attribute, atomically: true, encoding: .utf8)
      }
      return
    }
    let made = staging + "/" + name
    try FileManager.default.createDirectory(atPath: made, withIntermediateDirectories: true)
    for (attribute, value) in attributes {
      try (value + "\n").write(toFile: made + "/" + attribute, atomically: false, encoding: .utf8)
    }
    guard rename(made, directory) == 0 else { throw SystemError.last("rename") }
  }

  private func unplug(_ name: String) throws {
    try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
    guard rename(root + "/" + name, staging + "/gone-" + name) == 0 else { throw SystemError.last("rename") }
  }

  private func sbs(capacity: String = "72") throws {
    try supply(
      "sbs-1-000b",
      [
        "type": "Battery", "present": "1", "status": "Discharging", "capacity": capacity,
        "voltage_now": "11100000", "current_now": "-1250000", "time_to_empty_avg": "19800",
        // Attributes the reader does not ask for are left alone.
        "technology": "Li-ion", "manufacturer": "",
      ])
  }

  @Test func theReaderReadsTheTreeAsTheClassLaysItOut() throws {
    try supply("AC", ["type": "Mains", "online": "1"])
    try supply("hid-f0:1b:6c:12:34:56-battery", ["type": "Battery", "scope": "Device", "capacity": "40"])
    try sbs()
    let reader = PowerSupplyReader(root: root)
    #expect(try reader.supplies().map(\.name) == ["AC", "hid-f0:1b:6c:12:34:56-battery", "sbs-1-000b"])
    #expect(
      try reader.reading(.auto)
        == BatteryReading(
          supply: "sbs-1-000b", level: 72, voltage: 11.1, current: -1.25, status: .discharging, timeToEmpty: 19800,
          externalPower: true))
  }

  @Test func noClassDirectoryIsNoBattery() throws {
    let reader = PowerSupplyReader(root: root + "/none")
    #expect(try reader.supplies().isEmpty)
    #expect(try reader.reading(.auto) == nil)
  }

  @Test func aVanishedSupplyIsLost() throws {
    #expect(
      throws: PowerSupplyProblem(condition: .lost, description: "the power supply sbs-1-000b went away")
    ) { try PowerSupplyReader(root: root).read("sbs-1-000b", PowerSupplyClass.batteryAttributes) }
  }

  @Test func aBoardWithoutABatterySaysSoOnceAndTheReadingsComeWhenOneIsPlugged() throws {
    try supply("AC", ["type": "Mains", "online": "1"])
    var settings = BatteryGaugeSettings()
    settings.root = root
    settings.interval = 0.02
    let gauge = BatteryGauge(settings: settings)
    let sink = Collector()
    gauge.start(sink: sink)
    defer { gauge.stop() }
    #expect(sink.wait { $0.statuses.count == 1 })
    usleep(100_000)
    #expect(
      sink.statuses == [DeviceStatus(device: .battery, condition: .available, detail: "no battery information")],
      "once, however many times it looked")
    try sbs()
    #expect(sink.wait { !$0.batteries.isEmpty })
    #expect(sink.statuses.last == DeviceStatus(device: .battery, condition: .available, detail: "battery sbs-1-000b"))
    #expect(sink.batteries.first?.level == 72)
  }

  @Test func malformedValuesAreFailingAndRecoverWhenTheyMakeSenseAgain() throws {
    try sbs(capacity: "n/a")
    var settings = BatteryGaugeSettings()
    settings.supply = .named("sbs-1-000b")
    settings.root = root
    settings.interval = 0.02
    settings.backoff = Backoff(initial: 0.02, maximum: 0.05)
    let gauge = BatteryGauge(settings: settings)
    let sink = Collector()
    gauge.start(sink: sink)
    defer { gauge.stop() }
    #expect(sink.wait { !$0.statuses.isEmpty })
    #expect(
      sink.statuses.first
        == DeviceStatus(
          device: .battery, condition: .failing,
          detail: "sbs-1-000b: capacity reads \"n/a\", not a whole number; retrying"))
    try sbs(capacity: "64")
    #expect(sink.wait { !$0.batteries.isEmpty })
    #expect(sink.batteries.first?.level == 64)
    #expect(sink.statuses.map(\.condition) == [.failing, .available])
    try unplug("sbs-1-000b")
    #expect(sink.wait { $0.statuses.count == 3 })
    #expect(sink.statuses.last?.condition == .lost, "a named battery that was there and went is lost")
  }
}

extension Collector {
  var batteries: [BatteryReading] {
    all.compactMap { if case .reading(.battery(let reading)) = $0 { reading } else { nil } }
  }
}
