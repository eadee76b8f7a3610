import BoardLinux
import Foundation
import LinuxSupport
import Testing
import WorkoutCore

/// The Raspberry Pi's throttling flags in words, and `SupplyMonitor` on a tree laid out as the
/// Pi kernel's firmware attribute and mainline's rpi_volt hwmon are.
final class SupplyMonitorTests {
  let root: String

  init() throws {
    var template = Array((NSTemporaryDirectory() + "/supply-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
    root = String(cString: made)
  }

  deinit { try? FileManager.default.removeItem(atPath: root) }

  private func write(_ path: String, _ value: String) throws {
    let full = root + "/" + path
    try FileManager.default.createDirectory(
      atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try (value + "\n").write(toFile: full, atomically: false, encoding: .utf8)
  }

  @Test func theFlagsInWords() throws {
    #expect(ThrottleFlags(parsing: "0") == [])
    #expect(ThrottleFlags(parsing: "0")?.detail == "supply good")
    // vcgencmd's classic weak-supply reading: under-voltage and throttled now and since boot.
    let weak = try #require(ThrottleFlags(parsing: "0x50005"))
    #expect(weak.isFault)
    #expect(
      weak.detail
        == "under-voltage: the supply is below about 4.63 V; throttled (since boot: under-voltage, throttled)")
    let recovered = try #require(ThrottleFlags(parsing: "10000"))
    #expect(!recovered.isFault)
    #expect(recovered.detail == "supply good (since boot: under-voltage)")
    let hot = try #require(ThrottleFlags(parsing: "a000a"))
    #expect(!hot.isFault, "a hot Pi's limits are its detail, not the supply's fault")
    #expect(
      hot.detail
        == "supply good; ARM frequency capped, soft temperature limit (since boot: ARM frequency capped, soft temperature limit)"
    )
    #expect(ThrottleFlags(parsing: "") == nil)
    #expect(ThrottleFlags(parsing: "0x") == nil)
    #expect(ThrottleFlags(parsing: "under") == nil)
  }

  private func monitor() -> SupplyMonitor {
    var settings = SupplyMonitorSettings()
    settings.firmware = root + "/soc:firmware/get_throttled"
    settings.hwmon = root + "/hwmon"
    settings.interval = 0.02
    settings.backoff = Backoff(initial: 0.02, maximum: 0.05)
    return SupplyMonitor(settings: settings)
  }

  @Test func underVoltageIsAFaultOncePerChange() throws {
    try write("soc:firmware/get_throttled", "0")
    let supply = monitor()
    let sink = Collector()
    supply.start(sink: sink)
    defer { supply.stop() }
    #expect(sink.wait { $0.statuses.count == 1 })
    try write("soc:firmware/get_throttled", "50005")
    #expect(sink.wait { $0.statuses.count == 2 })
    usleep(100_000)
    try write("soc:firmware/get_throttled", "50000")
    #expect(sink.wait { $0.statuses.count == 3 })
    usleep(100_000)
    #expect(
      sink.statuses == [
        DeviceStatus(device: .powerSupply, condition: .available, detail: "supply good"),
        DeviceStatus(
          device: .powerSupply, condition: .failing,
          detail: "under-voltage: the supply is below about 4.63 V; throttled (since boot: under-voltage, throttled)"),
        DeviceStatus(
          device: .powerSupply, condition: .available,
          detail: "supply good (since boot: under-voltage, throttled)"),
      ])
  }

  @Test func mainlinesHwmonAlarmIsReadWhereTheFirmwareAttributeIsMissing() throws {
    try write("hwmon/hwmon0/name", "cpu_thermal")
    try write("hwmon/hwmon1/name", "rpi_volt")
    try write("hwmon/hwmon1/in0_lcrit_alarm", "1")
    let supply = monitor()
    let sink = Collector()
    supply.start(sink: sink)
    defer { supply.stop() }
    #expect(sink.wait { !$0.statuses.isEmpty })
    #expect(sink.statuses.first?.condition == .failing)
    #expect(sink.statuses.first?.detail == "under-voltage: the supply is below about 4.63 V")
  }

  @Test func notAPiSaysNothingAndMalformedFlagsAreFailing() throws {
    let supply = monitor()
    let sink = Collector()
    supply.start(sink: sink)
    usleep(150_000)
    #expect(sink.all.isEmpty, "no firmware attribute, no rpi_volt: not a Pi")
    try write("soc:firmware/get_throttled", "bogus")
    #expect(sink.wait { !$0.statuses.isEmpty })
    supply.stop()
    #expect(
      sink.statuses == [
        DeviceStatus(
          device: .powerSupply, condition: .failing,
          detail: "\(root)/soc:firmware/get_throttled reads \"bogus\", not hexadecimal flags; retrying")
      ])
  }
}
