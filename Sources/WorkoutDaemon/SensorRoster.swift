import BoardLinux
import Foundation
import LinuxSupport
import Logging
import SensorProtocols
import Synchronization
import WorkoutControl
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// What a BLE sensor is to the service: one sensor in each role.
enum SensorRole: String, CaseIterable, Codable, Sendable, Hashable {
  case heartRate = "heart_rate"
  case power = "power"
  case speedCadence = "speed_cadence"

  var device: DeviceKind {
    switch self {
    case .heartRate: .heartRateStrap
    case .power: .powerMeter
    case .speedCadence: .speedCadenceSensor
    }
  }

  /// The role a scanned sensor plays: a power meter that also offers speed/cadence is a power
  /// meter (its power is what it is for).
  init?(advertised services: [SensorService]) {
    if services.contains(.cyclingPower) {
      self = .power
    } else if services.contains(.heartRate) {
      self = .heartRate
    } else if services.contains(.speedAndCadence) {
      self = .speedCadence
    } else {
      return nil
    }
  }
}

/// The sensors chosen with `workoutctl sensors add|remove`, kept in the state directory as
/// `sensors.json`. For each role it lists, it overrides the configuration file: an address, or
/// null for a sensor removed. Versioned: a file this binary cannot read (a newer format, or
/// damaged) is left as it is, reported, and not written over.
struct ChosenSensorsFile {
  static let version = 1

  struct Entry: Codable, Hashable, Sendable {
    var role: SensorRole
    /// nil: no sensor in this role, whatever the configuration file says.
    var address: String?
    var addressType: BluetoothAddress.Kind?
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
    guard version.version == Self.version else {
      return .unreadable(
        "\(path) is version \(version.version), written by a newer workoutd (this one reads \(Self.version))")
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
    guard let data = try? encoder.encode(Contents(version: Self.version, sensors: entries)) else {
      throw DurableFileError("cannot encode \(path)", errno: EINVAL)
    }
    let file = try DurableFile.begin(path: path, temporarySuffix: ".tmp")
    try file.write(Array(data) + [10])
    try file.commit()
  }
}

/// The BLE sensors the service runs: those the configuration names and those chosen with
/// `workoutctl sensors add` (which win for their roles), each a `StrapSource` on its own
/// thread. Sensors are added, replaced and removed while the service runs; the choice is kept
/// in `sensors.json` for the next start. Also answers `sensors scan`, and remembers what the
/// last scan heard so that `sensors add ADDRESS` knows what the sensor is.
final class SensorRoster: Sendable {
  struct Chosen: Sendable, Hashable {
    var address: BluetoothAddress
    /// "configuration" or "workoutctl".
    var origin: String
  }

  private struct State: ~Copyable {
    var chosen: [SensorRole: Chosen] = [:]
    var fileEntries: [ChosenSensorsFile.Entry] = []
    var fileProblem: String?
    var sources: [SensorRole: any DeviceSource] = [:]
    var sink: (any InputSink)?
    var heard: [BluetoothAddress: [SensorService]] = [:]
  }

  private let state: Mutex<State>
  private let file: ChosenSensorsFile
  private let scanner: SensorScanService
  private let makeSource: @Sendable (StrapSettings) -> any DeviceSource
  private let log: Logger
  private let wheelCircumference: Double
  private let adapter: UInt16?

  init(
    configured: DaemonConfiguration.Sensors, stateDirectory: String, log: Logger,
    makeSource: @escaping @Sendable (StrapSettings) -> any DeviceSource = { StrapSource(settings: $0) }
  ) {
    file = ChosenSensorsFile(path: stateDirectory + "/sensors.json")
    scanner = SensorScanService(adapter: configured.adapter)
    self.makeSource = makeSource
    self.log = log
    wheelCircumference = configured.wheelCircumference
    adapter = configured.adapter
    var initial = State()
    let fromConfiguration: [(SensorRole, BluetoothAddress?)] = [
      (.heartRate, configured.heartRate), (.power, configured.power), (.speedCadence, configured.speedCadence),
    ]
    for case (let role, let address?) in fromConfiguration {
      initial.chosen[role] = Chosen(address: address, origin: "configuration")
    }
    switch file.load() {
    case .entries(let entries):
      initial.fileEntries = entries
      for entry in entries {
        if let text = entry.address, let address = BluetoothAddress(text, kind: entry.addressType) {
          initial.chosen[entry.role] = Chosen(address: address, origin: "workoutctl")
        } else if entry.address == nil {
          initial.chosen[entry.role] = nil
        } else {
          log(.warning, "\(file.path): \(entry.role.rawValue) = \"\(entry.address ?? "")\" is not an address; ignored")
        }
      }
    case .unreadable(let problem):
      initial.fileProblem = problem
      log(.warning, "sensors chosen with workoutctl are not used: \(problem); the configuration file's are")
    }
    state = Mutex(initial)
  }

  private func settings(_ address: BluetoothAddress, _ role: SensorRole) -> StrapSettings {
    var settings = StrapSettings(address: address)
    settings.device = role.device
    settings.wheelCircumference = wheelCircumference
    settings.adapter = adapter
    return settings
  }

  /// What runs, for the start-up log and `sensors list`.
  var chosen: [SensorRole: Chosen] { state.withLock { $0.chosen } }

  func start(sink: any InputSink) {
    let started: [(SensorRole, any DeviceSource)] = state.withLock { state in
      state.sink = sink
      var started: [(SensorRole, any DeviceSource)] = []
      for role in SensorRole.allCases {
        guard let chosen = state.chosen[role] else { continue }
        let source = makeSource(settings(chosen.address, role))
        state.sources[role] = source
        started.append((role, source))
      }
      return started
    }
    for (role, source) in started {
      log(.info, "starting \(source.name) (\(role.rawValue))")
      source.start(sink: sink)
    }
  }

  func stop() {
    let sources = state.withLock { state in
      state.sink = nil
      defer { state.sources.removeAll() }
      return Array(state.sources.values)
    }
    for source in sources { source.stop() }
  }

  // MARK: - Control

  static let commands: Set<ControlCommand> = [.scanSensors, .addSensor, .removeSensor, .listSensors]

  func handle(_ request: ControlRequest, stop: StopSignal) -> ControlReply {
    switch request.command {
    case .scanSensors:
      let (reply, outcome) = scanner.scan(request, stop: stop)
      if let outcome {
        state.withLock { state in
          for device in outcome.devices where !device.sensorServices.isEmpty {
            state.heard[device.address] = device.sensorServices
          }
        }
      }
      return reply
    case .addSensor: return add(request)
    case .removeSensor: return remove(request)
    case .listSensors: return ControlReply(ok: true, sensors: list())
    default: return ControlReply(ok: false, message: "not a sensor command: \(request.command.rawValue)")
    }
  }

  func list() -> [SensorEntryReport] {
    state.withLock { state in
      SensorRole.allCases.compactMap { role in
        state.chosen[role].map {
          SensorEntryReport(
            role: role.rawValue, address: $0.address.description, addressType: $0.address.kind.rawValue,
            origin: $0.origin, device: role.device.rawValue)
        }
      }
    }
  }

  /// Remembers what a scan heard (tests; `sensors scan` does it itself).
  func remember(_ address: BluetoothAddress, _ services: [SensorService]) {
    state.withLock { $0.heard[address] = services }
  }

  private func add(_ request: ControlRequest) -> ControlReply {
    guard let text = request.address else { return ControlReply(ok: false, message: "sensors add needs an address") }
    let kind = request.addressType.flatMap(BluetoothAddress.Kind.init(rawValue:))
    if request.addressType != nil && kind == nil {
      return ControlReply(
        ok: false, message: "the address type is \"public\" or \"random\", not \"\(request.addressType!)\"")
    }
    guard var address = BluetoothAddress(text, kind: kind) else {
      return ControlReply(ok: false, message: "\"\(text)\" is not a Bluetooth address like A0:9E:1A:12:34:56")
    }
    var role: SensorRole?
    if let named = request.role {
      guard let parsed = SensorRole(rawValue: named) else {
        return ControlReply(
          ok: false,
          message: "the role is one of \(SensorRole.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(named)\""
        )
      }
      role = parsed
    }
    let outcome: Result<(SensorRole, (any DeviceSource)?, (any DeviceSource)?, (any InputSink)?), AddRefusal> =
      state.withLock { state in
        if let problem = state.fileProblem {
          return .failure(AddRefusal("\(problem); move it away to choose sensors with workoutctl again"))
        }
        // A scan heard it: what it is, and its address type as it advertised.
        if let heard = state.heard.first(where: { $0.key.bytes == address.bytes }) {
          if kind == nil { address = heard.key }
          if role == nil { role = SensorRole(advertised: heard.value) }
        }
        guard let role else {
          return .failure(
            AddRefusal(
              "what \(address) is is not known: scan for it first (workoutctl sensors scan, with the sensor awake) or give its role (--role heart_rate, power or speed_cadence)"
            ))
        }
        var entries = state.fileEntries.filter { $0.role != role }
        entries.append(.init(role: role, address: address.description, addressType: address.kind))
        // One sensor, one role: taken from any other role it had.
        var vacated: [SensorRole] = []
        for (other, chosen) in state.chosen where other != role && chosen.address.bytes == address.bytes {
          entries.removeAll { $0.role == other }
          entries.append(.init(role: other, address: nil, addressType: nil))
          vacated.append(other)
        }
        do {
          try file.save(entries.sorted { $0.role.rawValue < $1.role.rawValue })
        } catch {
          return .failure(AddRefusal("cannot save the choice in \(file.path): \(error)"))
        }
        state.fileEntries = entries
        state.chosen[role] = Chosen(address: address, origin: "workoutctl")
        var old = state.sources.removeValue(forKey: role)
        for other in vacated {
          state.chosen[other] = nil
          if let source = state.sources.removeValue(forKey: other) { old = old ?? source }
        }
        var new: (any DeviceSource)?
        if state.sink != nil {
          new = makeSource(settings(address, role))
          state.sources[role] = new
        }
        return .success((role, old, new, state.sink))
      }
    switch outcome {
    case .failure(let refusal):
      return ControlReply(ok: false, message: refusal.text)
    case .success(let (role, old, new, sink)):
      old?.stop()
      if let new, let sink { new.start(sink: sink) }
      log(.notice, "sensor \(address) (\(address.kind.rawValue)) added as \(role.rawValue) by workoutctl")
      return ControlReply(
        ok: true, message: "\(role.rawValue): \(address) (\(address.kind.rawValue)), connecting", sensors: list())
    }
  }

  private struct AddRefusal: Error {
    var text: String
    init(_ text: String) { self.text = text }
  }

  private func remove(_ request: ControlRequest) -> ControlReply {
    guard let text = request.address, let address = BluetoothAddress(text) else {
      return ControlReply(ok: false, message: "sensors remove needs an address like A0:9E:1A:12:34:56")
    }
    let outcome: Result<(SensorRole, (any DeviceSource)?, (any InputSink)?), AddRefusal> = state.withLock { state in
      if let problem = state.fileProblem {
        return .failure(AddRefusal("\(problem); move it away to choose sensors with workoutctl again"))
      }
      guard let role = state.chosen.first(where: { $0.value.address.bytes == address.bytes })?.key else {
        let known = state.chosen.values.map(\.address.description).sorted().joined(separator: ", ")
        return .failure(AddRefusal("\(address) is not one of the sensors (\(known.isEmpty ? "none" : known))"))
      }
      var entries = state.fileEntries.filter { $0.role != role }
      entries.append(.init(role: role, address: nil, addressType: nil))
      do {
        try file.save(entries.sorted { $0.role.rawValue < $1.role.rawValue })
      } catch {
        return .failure(AddRefusal("cannot save the choice in \(file.path): \(error)"))
      }
      state.fileEntries = entries
      state.chosen[role] = nil
      return .success((role, state.sources.removeValue(forKey: role), state.sink))
    }
    switch outcome {
    case .failure(let refusal):
      return ControlReply(ok: false, message: refusal.text)
    case .success(let (role, source, sink)):
      source?.stop()
      sink?.post(.deviceRemoved(role.device))
      log(.notice, "sensor \(address) (\(role.rawValue)) removed by workoutctl")
      return ControlReply(ok: true, message: "\(role.rawValue): \(address) removed", sensors: list())
    }
  }
}
