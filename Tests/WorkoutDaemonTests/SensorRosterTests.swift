import Foundation
import LinuxSupport
import Logging
import SensorProtocols
import Synchronization
import Testing
import WorkoutControl
import WorkoutCore

@testable import BoardLinux
@testable import WorkoutDaemon

/// A sensor source that only says when it is started and stopped (the roster's bookkeeping is
/// what is tested; StrapSource itself is BoardLinuxTests', and the real radio the board VM's).
private final class RecordingSource: DeviceSource, Sendable {
  let settings: StrapSettings
  let journal: Journal
  init(_ settings: StrapSettings, _ journal: Journal) {
    self.settings = settings
    self.journal = journal
  }
  var name: String { "BLE sensor \(settings.address)" }
  func start(sink: any InputSink) { journal.add("start \(settings.device.rawValue) \(settings.address)") }
  func stop() { journal.add("stop \(settings.device.rawValue) \(settings.address)") }
}

/// The ANT stick's source, saying which sensors it was made for; `pair` plays a wildcard
/// channel finding its sensor.
private final class RecordingStick: DeviceSource, Sendable {
  let sensors: [ANTSensor]
  let paired: @Sendable (ANTSensor) -> Void
  let journal: Journal
  init(_ sensors: [ANTSensor], _ paired: @escaping @Sendable (ANTSensor) -> Void, _ journal: Journal) {
    self.sensors = sensors
    self.paired = paired
    self.journal = journal
  }
  var name: String { "ANT stick" }
  func start(sink: any InputSink) { journal.add("start stick \(sensors.map(\.text))") }
  func stop() { journal.add("stop stick \(sensors.map(\.text))") }
}

private final class Journal: Sendable {
  private let entries = Mutex<[String]>([])
  func add(_ entry: String) { entries.withLock { $0.append(entry) } }
  var all: [String] { entries.withLock { $0 } }
  func clear() { entries.withLock { $0.removeAll() } }
  private let sticks = Mutex<[RecordingStick]>([])
  func stick(_ stick: RecordingStick) { sticks.withLock { $0.append(stick) } }
  var lastStick: RecordingStick? { sticks.withLock { $0.last } }
}

private final class RecordingSink: InputSink {
  private let inputs = Mutex<[EngineInput]>([])
  func post(_ input: EngineInput) { inputs.withLock { $0.append(input) } }
  func post(_ input: EngineInput, at moment: Moment) { post(input) }
  var all: [EngineInput] { inputs.withLock { $0 } }
}

@Suite("BLE and ANT+ sensors chosen with workoutctl: the roster and sensors.json")
final class SensorRosterTests {
  let strap = BluetoothAddress("A0:9E:1A:12:34:56")!
  let meter = BluetoothAddress("C1:00:00:00:00:01")!
  /// Each test's state directory (a suite instance per test), removed when the test ends.
  let dir = NSTemporaryDirectory() + "roster-" + UUID().uuidString

  init() throws {
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(atPath: dir) }

  /// With an ANT stick unless `antStick` is false; its scan hears `heard`.
  private func roster(
    _ dir: String, configured: DaemonConfiguration.Sensors = .init(), journal: Journal, antStick: Bool = true,
    heard: [ANTSensor] = []
  ) -> SensorRoster {
    SensorRoster(
      configured: configured, stateDirectory: dir, log: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() },
      makeSource: { RecordingSource($0, journal) },
      ant: antStick
        ? SensorRoster.ANTRadio(
          makeStick: { sensors, paired in
            let stick = RecordingStick(sensors, paired, journal)
            journal.stick(stick)
            return stick
          },
          scan: { _, _ in
            journal.add("ant scan")
            return .success(heard.map(ANTStickParts.report))
          }) : nil)
  }

  private func ask(
    _ roster: SensorRoster, _ command: ControlCommand, _ address: String? = nil, role: String? = nil
  )
    -> ControlReply
  {
    roster.handle(ControlRequest(command: command, address: address, role: role), stop: StopSignal())
  }

  @Test("configured sensors start; add (role from the last scan) connects at once and is kept; remove forgets it")
  func addAndRemove() throws {
    let journal = Journal()
    var configured = DaemonConfiguration.Sensors()
    configured.heartRate = strap
    let sensors = roster(dir, configured: configured, journal: journal)
    let sink = RecordingSink()
    sensors.start(sink: sink)
    #expect(journal.all == ["start heartRateStrap A0:9E:1A:12:34:56"])

    // Not scanned and no role: refused, with what to do.
    let unknown = ask(sensors, .addSensor, "C1:00:00:00:00:01")
    #expect(!unknown.ok)
    #expect(unknown.message?.contains("scan for it first") == true)
    #expect(!FileManager.default.fileExists(atPath: dir + "/sensors.json"))

    sensors.remember(meter, [.cyclingPower, .speedAndCadence])
    let added = ask(sensors, .addSensor, "c1:00:00:00:00:01")
    #expect(added.ok, "\(added.message ?? "")")
    #expect(added.message == "power: C1:00:00:00:00:01 (random), connecting")
    #expect(journal.all.last == "start powerMeter C1:00:00:00:00:01")
    #expect(
      ask(sensors, .listSensors).sensors?.map { "\($0.role) \($0.address) \($0.origin)" } == [
        "heart_rate A0:9E:1A:12:34:56 configuration", "power C1:00:00:00:00:01 workoutctl",
      ])

    // Kept: a new start (the configuration unchanged) runs both.
    let again = Journal()
    roster(dir, configured: configured, journal: again).start(sink: sink)
    #expect(Set(again.all) == ["start heartRateStrap A0:9E:1A:12:34:56", "start powerMeter C1:00:00:00:00:01"])

    // Removing the configured strap: stopped, forgotten by the engine, and kept removed.
    journal.clear()
    let removed = ask(sensors, .removeSensor, "A0:9E:1A:12:34:56")
    #expect(removed.ok)
    #expect(journal.all == ["stop heartRateStrap A0:9E:1A:12:34:56"])
    #expect(sink.all.contains(.deviceRemoved(.heartRateStrap)))
    let third = Journal()
    roster(dir, configured: configured, journal: third).start(sink: sink)
    #expect(third.all == ["start powerMeter C1:00:00:00:00:01"], "the configuration's strap stays removed")
    let notOne = ask(sensors, .removeSensor, "A0:9E:1A:12:34:56")
    #expect(!notOne.ok)
    #expect(notOne.message?.contains("is not one of the sensors (C1:00:00:00:00:01)") == true)

    let saved = try String(contentsOfFile: dir + "/sensors.json", encoding: .utf8)
    #expect(saved.contains("\"version\" : 1"))
    #expect(!FileManager.default.fileExists(atPath: dir + "/sensors.json.tmp"))
  }

  @Test("one sensor per role (a new one replaces the old), and one role per sensor")
  func roles() throws {
    let journal = Journal()
    let sensors = roster(dir, journal: journal)
    sensors.start(sink: RecordingSink())
    #expect(ask(sensors, .addSensor, "A0:9E:1A:12:34:56", role: "heart_rate").ok)
    #expect(ask(sensors, .addSensor, "A0:9E:1A:00:00:02", role: "heart_rate").ok)
    #expect(
      journal.all == [
        "start heartRateStrap A0:9E:1A:12:34:56", "stop heartRateStrap A0:9E:1A:12:34:56",
        "start heartRateStrap A0:9E:1A:00:00:02",
      ])
    // The same sensor given another role leaves the first.
    #expect(ask(sensors, .addSensor, "A0:9E:1A:00:00:02", role: "speed_cadence").ok)
    #expect(ask(sensors, .listSensors).sensors?.map(\.role) == ["speed_cadence"])
    let bad = ask(sensors, .addSensor, "A0:9E:1A:00:00:02", role: "cadence")
    #expect(bad.message == "the role is one of heart_rate, power, speed_cadence, not \"cadence\"")
    #expect(!ask(sensors, .addSensor, "A0:9E:1A:00:00", role: "power").ok)
  }

  @Test(
    "a sensors.json this binary cannot read is reported and left alone: the configuration's sensors run, choices are refused",
    arguments: [
      #"{"version": 3, "sensors": [], "groups": {}}"#, "not json", #"{"version": 1, "sensors": [{"role": "x"}]}"#,
    ])
  func unreadable(_ text: String) throws {
    try text.write(toFile: dir + "/sensors.json", atomically: true, encoding: .utf8)
    let journal = Journal()
    var configured = DaemonConfiguration.Sensors()
    configured.heartRate = strap
    let sensors = roster(dir, configured: configured, journal: journal)
    sensors.start(sink: RecordingSink())
    #expect(journal.all == ["start heartRateStrap A0:9E:1A:12:34:56"])
    let refused = ask(sensors, .addSensor, "C1:00:00:00:00:01", role: "power")
    #expect(!refused.ok)
    #expect(refused.message?.contains("move it away") == true, "\(refused.message ?? "")")
    #expect(!ask(sensors, .removeSensor, "A0:9E:1A:12:34:56").ok)
    #expect(try String(contentsOfFile: dir + "/sensors.json", encoding: .utf8) == text, "not written over")
  }

  @Test("a sensor added before the service started its devices starts with them")
  func addBeforeStart() throws {
    let journal = Journal()
    let sensors = roster(dir, journal: journal)
    #expect(ask(sensors, .addSensor, "A0:9E:1A:12:34:56", role: "heart_rate").ok)
    #expect(journal.all.isEmpty)
    sensors.start(sink: RecordingSink())
    #expect(journal.all == ["start heartRateStrap A0:9E:1A:12:34:56"])
    sensors.stop()
    #expect(journal.all.last == "stop heartRateStrap A0:9E:1A:12:34:56")
  }

  @Test("ANT+ sensors share one stick: made again when its sensors change, BLE sensors untouched")
  func antSensorsShareTheStick() throws {
    let journal = Journal()
    var configured = DaemonConfiguration.Sensors()
    configured.heartRate = strap
    configured.ant[.power] = ANTSensor(profile: .bicyclePower, deviceNumber: 5151, transmissionType: 5)
    let sensors = roster(dir, configured: configured, journal: journal)
    sensors.start(sink: RecordingSink())
    #expect(journal.all == ["start heartRateStrap A0:9E:1A:12:34:56", "start stick [\"ant:5151/5\"]"])

    // An ANT+ strap in the BLE strap's place: the strap stops, the stick is made for both.
    journal.clear()
    let added = ask(sensors, .addSensor, "ant:4242", role: "heart_rate")
    #expect(added.message == "heart_rate: ant:4242 (ant+), connecting", "\(added.message ?? "")")
    #expect(
      journal.all == [
        "stop heartRateStrap A0:9E:1A:12:34:56", "stop stick [\"ant:5151/5\"]",
        "start stick [\"ant:4242\", \"ant:5151/5\"]",
      ])
    // The profile says the role; a speed-only sensor is a speed/cadence one.
    journal.clear()
    #expect(ask(sensors, .addSensor, "ant:speed:17").ok)
    #expect(journal.all.last == "start stick [\"ant:4242\", \"ant:5151/5\", \"ant:speed:17\"]")
    #expect(
      ask(sensors, .listSensors).sensors?.map { "\($0.role) \($0.address) \($0.addressType) \($0.origin)" } == [
        "heart_rate ant:4242 ant+ workoutctl", "power ant:5151/5 ant+ configuration",
        "speed_cadence ant:speed:17 ant+ workoutctl",
      ])
    #expect(!ask(sensors, .addSensor, "ant:4242").ok, "no role and no profile")
    #expect(!ask(sensors, .addSensor, "ant:speed:17", role: "power").ok, "a speed sensor is no power meter")
    #expect(!ask(sensors, .addSensor, "ant:70000", role: "power").ok)

    // Removed by its number: the stick goes on with the others.
    journal.clear()
    #expect(ask(sensors, .removeSensor, "ant:17").ok)
    #expect(
      journal.all == [
        "stop stick [\"ant:4242\", \"ant:5151/5\", \"ant:speed:17\"]", "start stick [\"ant:4242\", \"ant:5151/5\"]",
      ])
    let saved = try String(contentsOfFile: dir + "/sensors.json", encoding: .utf8)
    #expect(saved.contains("\"version\" : 2"))

    // Kept for the next start; a BLE-only file stays version 1 (see addAndRemove).
    let again = Journal()
    roster(dir, configured: configured, journal: again).start(sink: RecordingSink())
    #expect(again.all == ["start stick [\"ant:4242\", \"ant:5151/5\"]"])
  }

  @Test("a wildcard's sensor, once found, is kept: the next start pairs with it, not the first in range")
  func wildcardPairingIsKept() throws {
    let journal = Journal()
    var configured = DaemonConfiguration.Sensors()
    configured.ant[.heartRate] = ANTSensor(profile: .heartRate)
    let sensors = roster(dir, configured: configured, journal: journal)
    sensors.start(sink: RecordingSink())
    #expect(journal.all == ["start stick [\"ant:any\"]"])
    let found = ANTSensor(profile: .heartRate, deviceNumber: 4242, transmissionType: 1)
    journal.lastStick?.paired(found)
    #expect(journal.all == ["start stick [\"ant:any\"]"], "the stick runs on: it has the sensor")
    #expect(ask(sensors, .listSensors).sensors?.map { "\($0.address) \($0.origin)" } == ["ant:4242/1 paired"])
    journal.lastStick?.paired(ANTSensor(profile: .heartRate, deviceNumber: 7, transmissionType: 1))
    #expect(ask(sensors, .listSensors).sensors?.map(\.address) == ["ant:4242/1"], "paired once")

    let again = Journal()
    roster(dir, configured: configured, journal: again).start(sink: RecordingSink())
    #expect(again.all == ["start stick [\"ant:4242/1\"]"])
  }

  @Test("sensors scan lists the ANT+ sensors beside BLE's, the stick's own sensors paused meanwhile")
  func scanListsANTSensors() throws {
    let journal = Journal()
    var configured = DaemonConfiguration.Sensors()
    configured.ant[.heartRate] = ANTSensor(profile: .heartRate, deviceNumber: 4242, transmissionType: 1)
    let sensors = roster(
      dir, configured: configured, journal: journal,
      heard: [
        ANTSensor(profile: .heartRate, deviceNumber: 4242, transmissionType: 1),
        ANTSensor(profile: .speed, deviceNumber: 17, transmissionType: 1),
      ])
    sensors.start(sink: RecordingSink())
    journal.clear()
    let scanned = sensors.handle(ControlRequest(command: .scanSensors, seconds: 1), stop: StopSignal())
    #expect(scanned.ok, "whatever Bluetooth says: \(scanned.message ?? "")")
    let ant = scanned.scan?.devices.filter { $0.addressType == "ant+" }
    #expect(ant?.map(\.address) == ["ant:heart_rate:4242/1", "ant:speed:17/1"])
    #expect(ant?.map(\.sensors) == [["heart rate"], ["speed"]])
    #expect(scanned.scan?.antStick == "2 ANT+ sensors heard")
    #expect(
      journal.all == ["stop stick [\"ant:4242/1\"]", "ant scan", "start stick [\"ant:4242/1\"]"],
      "the stick is the scan's meanwhile")
    // What the scan lists is what add takes, its role from the profile.
    #expect(sensors.handle(ControlRequest(command: .addSensor, address: "ant:speed:17/1"), stop: StopSignal()).ok)
    #expect(ask(sensors, .listSensors).sensors?.map(\.role) == ["heart_rate", "speed_cadence"])
  }

  @Test("without [ant], an ANT+ sensor is refused by add, and one in sensors.json is a fault that says why")
  func noStickNoANTSensors() throws {
    let journal = Journal()
    let sink = RecordingSink()
    let without = roster(dir, journal: journal, antStick: false)
    without.start(sink: sink)
    let refused = ask(without, .addSensor, "ant:4242", role: "heart_rate")
    #expect(refused.message?.contains("set [ant] network_key_file") == true, "\(refused.message ?? "")")

    try
      #"{"version": 2, "sensors": [{"role": "power", "ant": {"profile": "power", "deviceNumber": 5151, "transmissionType": 5}}]}"#
      .write(toFile: dir + "/sensors.json", atomically: true, encoding: .utf8)
    roster(dir, journal: journal, antStick: false).start(sink: sink)
    let fault = sink.all.compactMap { input -> DeviceStatus? in
      if case .device(let status) = input, status.device == .antStick { status } else { nil }
    }
    #expect(fault.map(\.condition) == [.failing])
    #expect(fault.first?.detail.contains("[ant] network_key_file is not set") == true)
  }
}
