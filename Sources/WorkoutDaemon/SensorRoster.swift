import BoardLinux
import Foundation
import LinuxSupport
import Logging
import SensorProtocols
import Synchronization
import WorkoutControl
import WorkoutCore

/// The sensors the service runs: those the configuration names and those chosen with
/// `workoutctl sensors add` (which win for their roles). Each BLE sensor is a `StrapSource` on
/// its own thread; the ANT+ sensors share one stick, a source of its own with a channel for
/// each. Sensors are added, replaced and removed while the service runs; the choice is kept in
/// `sensors.json` for the next start, and so is the sensor an ANT+ wildcard paired with. Also
/// answers `sensors scan`, and remembers what the last scan heard so that `sensors add ADDRESS`
/// knows what the sensor is.
final class SensorRoster: Sendable {
  struct Chosen: Sendable, Hashable {
    var choice: SensorChoice
    /// "configuration", "workoutctl", or "paired" (an ANT+ wildcard's sensor, found).
    var origin: String
  }

  /// The board's ANT stick, where `[ant]` is configured.
  struct ANTRadio: Sendable {
    /// Makes the stick's source for these sensors, telling `paired` each sensor a wildcard
    /// channel finds.
    var makeStick:
      @Sendable (_ sensors: [ANTSensor], _ paired: @escaping @Sendable (ANTSensor) -> Void) -> any DeviceSource
    /// The ANT+ sensors in range, with the stick to itself.
    var scan: @Sendable (_ seconds: Double, _ signal: StopSignal) -> Result<[SensorScanReport.Device], ANTScanError>
  }

  private struct Running {
    var choice: SensorChoice
    var source: any DeviceSource
  }

  private struct RunningStick {
    var sensors: [ANTSensor]
    var source: any DeviceSource
  }

  private struct State: ~Copyable {
    var chosen: [SensorRole: Chosen] = [:]
    var fileEntries: [ChosenSensorsFile.Entry] = []
    var fileProblem: String?
    var straps: [SensorRole: Running] = [:]
    var stick: RunningStick?
    var sink: (any InputSink)?
    var heard: [BluetoothAddress: [SensorService]] = [:]
  }

  private let state: Mutex<State>
  private let file: ChosenSensorsFile
  private let scanner: SensorScanService
  private let makeSource: @Sendable (StrapSettings) -> any DeviceSource
  private let ant: ANTRadio?
  private let log: Logger
  private let wheelCircumference: Double
  private let adapter: UInt16?

  init(
    configured: DaemonConfiguration.Sensors, stateDirectory: String, log: Logger,
    makeSource: @escaping @Sendable (StrapSettings) -> any DeviceSource = { StrapSource(settings: $0) },
    ant: ANTRadio? = nil
  ) {
    file = ChosenSensorsFile(path: stateDirectory + "/sensors.json")
    scanner = SensorScanService(adapter: configured.adapter)
    self.makeSource = makeSource
    self.ant = ant
    self.log = log
    wheelCircumference = configured.wheelCircumference
    adapter = configured.adapter
    var initial = State()
    for role in SensorRole.allCases {
      if let choice = configured.choice(role) { initial.chosen[role] = Chosen(choice: choice, origin: "configuration") }
    }
    switch file.load() {
    case .entries(let entries):
      initial.fileEntries = entries
      for entry in entries {
        if let ant = entry.ant {
          initial.chosen[entry.role] = Chosen(choice: .ant(ant), origin: "workoutctl")
        } else if let text = entry.address, let address = BluetoothAddress(text, kind: entry.addressType) {
          initial.chosen[entry.role] = Chosen(choice: .ble(address), origin: "workoutctl")
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

  /// What runs, for the start-up log and `sensors list`.
  var chosen: [SensorRole: Chosen] { state.withLock { $0.chosen } }

  func start(sink: any InputSink) {
    let changes = state.withLock { state in
      state.sink = sink
      return reconcile(&state)
    }
    apply(changes)
  }

  func stop() {
    let sources = state.withLock { state in
      state.sink = nil
      defer {
        state.straps.removeAll()
        state.stick = nil
      }
      return state.straps.values.map(\.source) + (state.stick.map { [$0.source] } ?? [])
    }
    for source in sources { source.stop() }
  }

  // MARK: - Running what is chosen

  private struct Changes {
    var stopped: [any DeviceSource] = []
    var started: [(any DeviceSource, String)] = []
    var sink: (any InputSink)?
  }

  /// Brings what runs in line with what is chosen (while the devices run): a BLE sensor whose
  /// choice changed is replaced; the stick is made again when its list of ANT+ sensors changed.
  private func reconcile(_ state: inout State) -> Changes {
    var changes = Changes(sink: state.sink)
    guard state.sink != nil else { return changes }
    for role in SensorRole.allCases {
      let wanted = state.chosen[role]?.choice.ble
      if let running = state.straps[role], running.choice.ble != wanted {
        changes.stopped.append(running.source)
        state.straps[role] = nil
      }
      if let wanted, state.straps[role] == nil {
        let source = makeSource(settings(wanted, role))
        state.straps[role] = Running(choice: .ble(wanted), source: source)
        changes.started.append((source, role.rawValue))
      }
    }
    let antSensors = SensorRole.allCases.compactMap { state.chosen[$0]?.choice.ant }
    if state.stick?.sensors != antSensors {
      if let old = state.stick { changes.stopped.append(old.source) }
      state.stick = nil
      if !antSensors.isEmpty {
        let source =
          ant?.makeStick(antSensors) { [weak self] in self?.paired($0) }
          ?? UnusableDevice(
            name: "ANT stick",
            status: DeviceStatus(
              device: .antStick, condition: .failing,
              detail: "ANT+ sensors are chosen (in sensors.json) but [ant] network_key_file is not set"))
        state.stick = RunningStick(sensors: antSensors, source: source)
        changes.started.append((source, antSensors.map(\.description).joined(separator: ", ")))
      }
    }
    return changes
  }

  private func apply(_ changes: Changes) {
    for source in changes.stopped { source.stop() }
    guard let sink = changes.sink else { return }
    for (source, what) in changes.started {
      log(.info, "starting \(source.name) (\(what))")
      source.start(sink: sink)
    }
  }

  private func settings(_ address: BluetoothAddress, _ role: SensorRole) -> StrapSettings {
    var settings = StrapSettings(address: address)
    settings.device = role.device
    settings.wheelCircumference = wheelCircumference
    settings.adapter = adapter
    return settings
  }

  /// A wildcard channel found its sensor: kept in `sensors.json`, so that the next start pairs
  /// with the same one and not the first one in range. The stick runs on as it is.
  private func paired(_ sensor: ANTSensor) {
    let role = SensorRole(sensor.profile)
    /// nil: not a wildcard's sensor; otherwise why it could not be kept, or nil.
    let outcome = state.withLock { state -> String?? in
      guard let chosen = state.chosen[role], let wildcard = chosen.choice.ant, wildcard.isWildcard,
        wildcard.profile == sensor.profile
      else { return nil }
      state.chosen[role] = Chosen(choice: .ant(sensor), origin: "paired")
      if let index = state.stick?.sensors.firstIndex(of: wildcard) { state.stick?.sensors[index] = sensor }
      if let problem = state.fileProblem { return .some(problem) }
      let entries = state.fileEntries.filter { $0.role != role } + [.init(role: role, .ant(sensor))]
      do {
        try file.save(entries.sorted { $0.role.rawValue < $1.role.rawValue })
      } catch {
        return .some("\(error)")
      }
      state.fileEntries = entries
      return .some(nil)
    }
    switch outcome {
    case .none: break
    case .some(.none): log(.notice, "\(role.rawValue): paired with \(sensor) (kept in \(file.path))")
    case .some(.some(let problem)):
      log(.warning, "\(role.rawValue): paired with \(sensor), but it cannot be kept in \(file.path): \(problem)")
    }
  }

  // MARK: - Control

  static let commands: Set<ControlCommand> = [.scanSensors, .addSensor, .removeSensor, .listSensors]

  func handle(_ request: ControlRequest, stop: StopSignal) -> ControlReply {
    switch request.command {
    case .scanSensors: return scan(request, stop: stop)
    case .addSensor: return add(request)
    case .removeSensor: return remove(request)
    case .listSensors: return ControlReply(ok: true, sensors: list())
    default: return ControlReply(ok: false, message: "not a sensor command: \(request.command.rawValue)")
    }
  }

  /// BLE's discovery and, with the stick, ANT+'s scan at once. The scan resets the stick, so
  /// its source (the ANT+ sensors chosen) stops meanwhile and starts again after.
  private func scan(_ request: ControlRequest, stop: StopSignal) -> ControlReply {
    var antResult: Result<[SensorScanReport.Device], ANTScanError>?
    var antThread: DeviceThread?
    if let ant {
      let paused = state.withLock { state in
        defer { state.stick = nil }
        return state.stick?.source
      }
      paused?.stop()
      let result = Mutex<Result<[SensorScanReport.Device], ANTScanError>?>(nil)
      let seconds = request.scanSeconds
      do {
        antThread = try DeviceThread.start(name: "antScan") { result.withLock { $0 = ant.scan(seconds, stop) } }
      } catch {
        antResult = .failure(ANTScanError(description: "cannot start the scan: \(error)"))
      }
      let (reply, outcome) = scanner.scan(request, stop: stop)
      antThread?.join()
      antResult = antResult ?? result.withLock { $0 }
      apply(state.withLock { reconcile(&$0) })
      return merged(reply, outcome, ant: antResult, request: request)
    }
    let (reply, outcome) = scanner.scan(request, stop: stop)
    return merged(reply, outcome, ant: nil, request: request)
  }

  private func merged(
    _ reply: ControlReply, _ outcome: ScanOutcome?, ant: Result<[SensorScanReport.Device], ANTScanError>?,
    request: ControlRequest
  ) -> ControlReply {
    if let outcome {
      state.withLock { state in
        for device in outcome.devices where !device.sensorServices.isEmpty {
          state.heard[device.address] = device.sensorServices
        }
      }
    }
    guard let ant else { return reply }
    var reply = reply
    var scan =
      reply.scan
      ?? SensorScanReport(
        controller: "no Bluetooth (\(reply.message ?? "the scan failed"))", seconds: request.scanSeconds,
        sharedDiscovery: false, devices: [])
    switch ant {
    case .success(let devices):
      scan.devices += devices
      scan.antStick = "\(devices.count) ANT+ sensor\(devices.count == 1 ? "" : "s") heard"
    case .failure(let error):
      scan.antStick = "no ANT+ scan: \(error)"
    }
    reply.ok = true
    reply.message = nil
    reply.scan = scan
    return reply
  }

  func list() -> [SensorEntryReport] {
    state.withLock { state in
      SensorRole.allCases.compactMap { role in
        state.chosen[role].map {
          SensorEntryReport(
            role: role.rawValue, address: $0.choice.description, addressType: $0.choice.addressType,
            origin: $0.origin, device: role.device.rawValue)
        }
      }
    }
  }

  /// Remembers what a scan heard (tests; `sensors scan` does it itself).
  func remember(_ address: BluetoothAddress, _ services: [SensorService]) {
    state.withLock { $0.heard[address] = services }
  }

  private struct Refusal: Error {
    var text: String
    init(_ text: String) { self.text = text }
  }

  private static let roleList = SensorRole.allCases.map(\.rawValue).joined(separator: ", ")

  private func add(_ request: ControlRequest) -> ControlReply {
    guard let text = request.address else { return ControlReply(ok: false, message: "sensors add needs an address") }
    var role: SensorRole?
    if let named = request.role {
      guard let parsed = SensorRole(rawValue: named) else {
        return ControlReply(ok: false, message: "the role is one of \(Self.roleList), not \"\(named)\"")
      }
      role = parsed
    }
    let outcome: Result<(SensorRole, SensorChoice, Changes), Refusal> = state.withLock { state in
      if let problem = state.fileProblem {
        return .failure(Refusal("\(problem); move it away to choose sensors with workoutctl again"))
      }
      let choice: SensorChoice
      switch Self.choice(
        text, addressType: request.addressType, role: role, heard: state.heard, antAvailable: ant != nil)
      {
      case .failure(let refusal): return .failure(refusal)
      case .success(let (found, foundRole)):
        choice = found
        role = role ?? foundRole
      }
      guard let role else {
        return .failure(
          Refusal(
            "what \(choice) is is not known: scan for it first (workoutctl sensors scan, with the sensor awake) or give its role (--role heart_rate, power or speed_cadence)"
          ))
      }
      var entries = state.fileEntries.filter { $0.role != role }
      entries.append(.init(role: role, choice))
      // One sensor, one role: taken from any other role it had.
      var vacated: [SensorRole] = []
      for (other, chosen) in state.chosen where other != role && chosen.choice.isSameSensor(as: choice) {
        entries.removeAll { $0.role == other }
        entries.append(.init(role: other, nil))
        vacated.append(other)
      }
      do {
        try file.save(entries.sorted { $0.role.rawValue < $1.role.rawValue })
      } catch {
        return .failure(Refusal("cannot save the choice in \(file.path): \(error)"))
      }
      state.fileEntries = entries
      state.chosen[role] = Chosen(choice: choice, origin: "workoutctl")
      for other in vacated { state.chosen[other] = nil }
      return .success((role, choice, reconcile(&state)))
    }
    switch outcome {
    case .failure(let refusal):
      return ControlReply(ok: false, message: refusal.text)
    case .success(let (role, choice, changes)):
      apply(changes)
      log(.notice, "sensor \(choice) (\(choice.addressType)) added as \(role.rawValue) by workoutctl")
      return ControlReply(
        ok: true, message: "\(role.rawValue): \(choice) (\(choice.addressType)), connecting", sensors: list())
    }
  }

  /// The sensor `text` names, and its role when what it is is known (an ANT+ profile, or what
  /// the last scan heard of a BLE address).
  private static func choice(
    _ text: String, addressType: String?, role: SensorRole?, heard: [BluetoothAddress: [SensorService]],
    antAvailable: Bool
  ) -> Result<(SensorChoice, SensorRole?), Refusal> {
    if text.lowercased().hasPrefix("ant:") {
      guard antAvailable else {
        return .failure(
          Refusal(
            "ANT+ sensors need a USB ANT stick and its network key: set [ant] network_key_file (README: ANT+ sensors)"))
      }
      guard ANTSensor.namesProfile(text) || role != nil else {
        return .failure(
          Refusal(
            "what \(text) is is not known: give its role (--role \(roleList)) or its profile (ant:heart_rate:4242)"))
      }
      guard let sensor = ANTSensor(text: text, role: role) else {
        return .failure(
          Refusal("\"\(text)\" is not an ANT+ sensor for \(role?.rawValue ?? "any role"): \(ANTSensor.syntax)"))
      }
      return .success((.ant(sensor), SensorRole(sensor.profile)))
    }
    let kind = addressType.flatMap(BluetoothAddress.Kind.init(rawValue:))
    if let addressType, kind == nil {
      return .failure(Refusal("the address type is \"public\" or \"random\", not \"\(addressType)\""))
    }
    guard var address = BluetoothAddress(text, kind: kind) else {
      return .failure(
        Refusal(
          "\"\(text)\" is not a Bluetooth address like A0:9E:1A:12:34:56, nor an ANT+ sensor (\(ANTSensor.syntax))"))
    }
    // A scan heard it: what it is, and its address type as it advertised.
    var role: SensorRole?
    if let heard = heard.first(where: { $0.key.bytes == address.bytes }) {
      if kind == nil { address = heard.key }
      role = SensorRole(advertised: heard.value)
    }
    return .success((.ble(address), role))
  }

  private func remove(_ request: ControlRequest) -> ControlReply {
    let removing: SensorChoice
    var profileNamed = false
    if let text = request.address, let address = BluetoothAddress(text) {
      removing = .ble(address)
    } else if let text = request.address,
      let sensor = ANTSensor(text: text, role: nil) ?? ANTSensor(text: text, role: .heartRate)
    {
      removing = .ant(sensor)
      profileNamed = ANTSensor.namesProfile(text)
    } else {
      return ControlReply(
        ok: false, message: "sensors remove needs an address like A0:9E:1A:12:34:56 or an ANT+ sensor like ant:4242")
    }
    let outcome: Result<(SensorRole, Changes), Refusal> = state.withLock { state in
      if let problem = state.fileProblem {
        return .failure(Refusal("\(problem); move it away to choose sensors with workoutctl again"))
      }
      guard
        let role = state.chosen.first(where: { Self.matches($0.value.choice, removing, profileNamed) })?.key
      else {
        let known = state.chosen.values.map(\.choice.description).sorted().joined(separator: ", ")
        return .failure(Refusal("\(removing) is not one of the sensors (\(known.isEmpty ? "none" : known))"))
      }
      var entries = state.fileEntries.filter { $0.role != role }
      entries.append(.init(role: role, nil))
      do {
        try file.save(entries.sorted { $0.role.rawValue < $1.role.rawValue })
      } catch {
        return .failure(Refusal("cannot save the choice in \(file.path): \(error)"))
      }
      state.fileEntries = entries
      state.chosen[role] = nil
      return .success((role, reconcile(&state)))
    }
    switch outcome {
    case .failure(let refusal):
      return ControlReply(ok: false, message: refusal.text)
    case .success(let (role, changes)):
      apply(changes)
      changes.sink?.post(.deviceRemoved(role.device))
      log(.notice, "sensor \(removing) (\(role.rawValue)) removed by workoutctl")
      return ControlReply(ok: true, message: "\(role.rawValue): \(removing) removed", sensors: list())
    }
  }

  /// Whether a sensor given to `sensors remove` is this chosen one: an ANT+ sensor by its
  /// device number ("ant:any" a wildcard not paired yet), and by its profile when one is named.
  private static func matches(_ chosen: SensorChoice, _ removing: SensorChoice, _ profileNamed: Bool) -> Bool {
    switch (chosen, removing) {
    case (.ant(let a), .ant(let b)): a.deviceNumber == b.deviceNumber && (!profileNamed || a.profile == b.profile)
    default: chosen.isSameSensor(as: removing)
    }
  }
}
