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

private final class Journal: Sendable {
  private let entries = Mutex<[String]>([])
  func add(_ entry: String) { entries.withLock { $0.append(entry) } }
  var all: [String] { entries.withLock { $0 } }
  func clear() { entries.withLock { $0.removeAll() } }
}

private final class RecordingSink: InputSink {
  private let inputs = Mutex<[EngineInput]>([])
  func post(_ input: EngineInput) { inputs.withLock { $0.append(input) } }
  func post(_ input: EngineInput, at moment: Moment) { post(input) }
  var all: [EngineInput] { inputs.withLock { $0 } }
}

@Suite("BLE sensors chosen with workoutctl: the roster and sensors.json")
final class SensorRosterTests {
  let strap = BluetoothAddress("A0:9E:1A:12:34:56")!
  let meter = BluetoothAddress("C1:00:00:00:00:01")!
  /// Each test's state directory (a suite instance per test), removed when the test ends.
  let dir = NSTemporaryDirectory() + "roster-" + UUID().uuidString

  init() throws {
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(atPath: dir) }

  private func roster(
    _ dir: String, configured: DaemonConfiguration.Sensors = .init(), journal: Journal
  ) -> SensorRoster {
    SensorRoster(
      configured: configured, stateDirectory: dir, log: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() },
      makeSource: { RecordingSource($0, journal) })
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
      #"{"version": 2, "sensors": [], "groups": {}}"#, "not json", #"{"version": 1, "sensors": [{"role": "x"}]}"#,
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
}
