import Foundation
import SensorProtocols
import TOMLKit
import WorkoutCore
import WorkoutExport

#if canImport(Glibc)
  import Glibc
#endif

/// Everything `workoutd` can be told, with a default for every key. Read from TOML
/// (`/etc/workoutd/workoutd.toml`), then command-line flags override it.
public struct DaemonConfiguration: Sendable, Equatable {
  public enum BoardKind: String, Sendable, CaseIterable {
    /// The simulated board: replays a recorded ride through the device seams.
    case sim
    /// The real board: gpsd, GPIO, I2C, BLE as configured.
    case linux
  }

  // [service]
  public var board: BoardKind = .sim
  public var stateDirectory: String
  public var runtimeDirectory: String
  /// The group that may use the control socket; nil means the service's own group.
  public var controlSocketGroup: String?
  public var logLevel: LogLevel = .info

  // [session]
  public var activity: ActivityType = .cycling
  public var countdown: Double = 3

  // [auto_pause]
  public var autoPauseEnabled = true
  public var autoPauseOverrides = AutoPauseOverrides()

  // [sim]
  /// The ride to replay; nil finds the bundled one.
  public var simRide: String?
  /// Times real time; nil is full speed (virtual time: as fast as the engine and store go).
  public var simSpeed: Double? = 1
  /// Exit once the ride has been replayed and its session has ended (for `make run`).
  public var simExitAtEnd = false

  // [gps]: gpsd, on the linux board.
  public var gps = GPS()

  public struct GPS: Sendable, Equatable {
    public var enabled = true
    public var host = "localhost"
    public var port = 2947
    /// Metres; fixes reporting a larger horizontal error are not used.
    public var maxHorizontalError = 20.0
    public var fixLostAfter = 5.0
    /// Step the system clock to GPS time once it is trusted (needs CAP_SYS_TIME).
    public var setSystemClock = false

    /// The fix filter's settings, for the gpsd source and the simulated board's receiver alike.
    public var fixQuality: FixQualitySettings { FixQualitySettings(maxHorizontalError: maxHorizontalError) }
  }

  // [buttons], [led], [barometer]: off unless configured.
  public var buttons = Buttons()
  public var led = OutputLine(line: "GPIO23")
  public var barometer = Barometer()

  public struct Buttons: Sendable, Equatable {
    public enum Source: String, Sendable, CaseIterable {
      /// GPIO lines through libgpiod.
      case gpio
      /// A Linux input device (the gpio-keys overlay).
      case input
    }
    public var enabled = false
    public var source = Source.gpio
    public var chip = raspberryPiGPIOChip
    /// Line names or offsets (gpio), or key names or codes (input).
    public var start = "GPIO17"
    public var lap = "GPIO27"
    public var stop = "GPIO22"
    public var bias = "pull-up"
    public var pressedLevel = LineLevel.low
    public var inputDevice = "gpio-keys"
    public var debounce = 0.030
    public var longPress = 2.0
  }

  /// An optional buzzer on a GPIO output line: a chirp for each transition and lap.
  public var buzzer = OutputLine(line: "GPIO24")

  /// The status LED or the buzzer: one GPIO output line.
  public struct OutputLine: Sendable, Equatable {
    public var enabled = false
    public var chip = raspberryPiGPIOChip
    public var line: String
    public var activeLow = false
  }

  public struct Barometer: Sendable, Equatable {
    public var enabled = false
    public var bus = raspberryPiI2CBus
    public var address = 0x76
    public var interval = 1.0
    /// Pa; nil calibrates from GPS at the start of each ride.
    public var seaLevelPressure: Double?
  }

  /// [sensors]: BLE sensors by address.
  public var sensors = Sensors()

  public struct Sensors: Sendable, Equatable {
    /// A heart-rate strap; nil for none.
    public var heartRate: BluetoothAddress?
    /// A cycling power meter; nil for none.
    public var power: BluetoothAddress?
    /// A speed/cadence pod; nil for none.
    public var speedCadence: BluetoothAddress?
    /// The Bluetooth controller scans use ("hci0" is 0); nil: the lowest-numbered powered one with LE.
    public var adapter: UInt16?
    /// Metres a wheel revolution covers, for speed and distance from a wheel sensor (CSC or a
    /// hub power meter); `wheel_circumference_mm` in the file, as tyre makers' tables give it.
    public var wheelCircumference = StrapReadings.defaultWheelCircumference
  }

  /// [export]: each session's files, written by the service when it ends.
  public var export = Export()

  public struct Export: Sendable, Equatable {
    public var enabled = true
    /// In the order written.
    public var formats: [ExportFormat] = [.fit, .gpx]
    /// nil: `exports` in the state directory.
    public var directory: String?
  }

  /// Where the service's exports go.
  public var exportDirectory: String { export.directory ?? stateDirectory + "/exports" }

  /// [usb_drive]: the board as a USB drive a laptop reads the rides from (see `UsbDrive`).
  public var usbDrive = UsbDriveSettings()

  /// [web]: a phone's browser as the board's screen (see `WebServer`).
  public var web = WebSettings()

  public struct UsbDriveSettings: Sendable, Equatable {
    public var enabled = false
    /// Which of the exports go onto the drive; FIT alone keeps the image (a copy) small.
    public var formats: [ExportFormat] = [.fit]
  }

  /// The drive's FAT image: in the state directory, where the service may write, and absolute
  /// (the kernel opens it by this path).
  public var usbDriveImage: String {
    let path = stateDirectory + "/usb-drive.img"
    if path.hasPrefix("/") { return path }
    return FileManager.default.currentDirectoryPath + "/" + path
  }

  /// [rider]: what the system zones and the training metrics are computed from.
  public var rider = Rider()

  public struct Rider: Sendable, Equatable {
    public var age: Int?
    /// count/min.
    public var restingHeartRate: Double?
    /// count/min; nil: Tanaka's from age.
    public var maxHeartRate: Double?
    /// Functional threshold power, W.
    public var ftp: Double?
    /// kg: with age and sex, calories from heart rate.
    public var weight: Double?
    public var sex: RiderProfile.Sex?

    /// What each workout records of the rider (all but FTP, which has its own event).
    public var profile: RiderProfile {
      RiderProfile(
        age: age, weight: weight, sex: sex, restingHeartRate: restingHeartRate, maxHeartRate: maxHeartRate)
    }
  }

  /// [zones]: the rider's own zones, else the system's from [rider] (when it has what they
  /// need); at most one configuration per quantity, checked by HealthKit's rules at parse.
  public var zones: [ZoneConfiguration] = []
  /// `[zones] heart_rate_target`, `power_target`: every workout's target zone ranges.
  public var targetZones: [TargetZone] = []
  /// `[session] activities`: a multisport workout's activities in order.
  public var activityPlan: [ActivityType] = []
  /// `[session] auto_lap_distance` or `auto_lap_time`.
  public var autoLap: AutoLap?
  /// `[metrics] average_power`: whether average power counts the seconds at 0 W.
  public var powerAveraging = PowerAveraging.withZeros

  public struct AutoPauseOverrides: Sendable, Equatable {
    public var stopSpeed: Double?
    public var resumeSpeed: Double?
    public var stopAfter: Double?
    public var resumeAfter: Double?
  }

  public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
    // systemd's StateDirectory= and RuntimeDirectory= tell us where ours are.
    stateDirectory = environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init) ?? "/var/lib/workoutd"
    runtimeDirectory =
      environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first.map(String.init) ?? "/run/workoutd"
  }

  public var databasePath: String { stateDirectory + "/workoutd.db" }
  public var controlSocketPath: String { runtimeDirectory + "/control.sock" }
  public var simWorldPath: String { stateDirectory + "/sim-world.json" }

  /// The engine settings these keys make.
  public var engineSettings: EngineSettings {
    var autoPause: AutoPauseSettings?
    if autoPauseEnabled, var settings = activity.defaultAutoPause {
      settings.stopSpeed = autoPauseOverrides.stopSpeed ?? settings.stopSpeed
      settings.resumeSpeed = autoPauseOverrides.resumeSpeed ?? settings.resumeSpeed
      settings.stopAfter = autoPauseOverrides.stopAfter ?? settings.stopAfter
      settings.resumeAfter = autoPauseOverrides.resumeAfter ?? settings.resumeAfter
      autoPause = settings
    }
    var settings = EngineSettings(
      activity: activity, countdown: countdown, autoPause: .some(autoPause),
      seaLevelPressure: barometer.seaLevelPressure)
    settings.fixLostAfter = gps.fixLostAfter
    settings.zones = zones
    settings.ftp = rider.ftp
    settings.rider = rider.profile
    settings.powerAveraging = powerAveraging
    settings.autoLap = autoLap
    settings.activityPlan = activityPlan
    settings.targetZones = targetZones
    return settings
  }
}

/// A configuration that cannot be used: every problem found, each naming the file and key.
/// The Raspberry Pi's GPIO chip, by label: Pi Zero/1/2/3, Pi 4, Pi 5.
public let raspberryPiGPIOChip = "pinctrl-bcm2835|pinctrl-bcm2711|pinctrl-rp1"
/// The Pi's I2C bus 1 (pins 3 and 5), by adapter name: Pi Zero to 4, Pi 5.
public let raspberryPiI2CBus = "bcm2835 (i2c@7e804000)|Synopsys DesignWare I2C adapter"

public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
  public var problems: [String]
  public var description: String { problems.joined(separator: "\n") }

  public init(problems: [String]) {
    self.problems = problems
  }
}

extension DaemonConfiguration {
  /// Reads `text` (the contents of `file`) over the defaults. Unknown sections or keys, wrong
  /// types and values out of range are all errors: a typo must not silently mean a default.
  public static func parse(
    _ text: String, file: String, environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(ConfigurationError) -> DaemonConfiguration {
    var configuration = DaemonConfiguration(environment: environment)
    let root: TOMLTable
    do {
      root = try TOMLTable(string: text)
    } catch let error as TOMLParseError {
      throw ConfigurationError(
        problems: ["\(file):\(error.source.begin.line):\(error.source.begin.column): \(error.description)"])
    } catch {
      throw ConfigurationError(problems: ["\(file): \(error)"])
    }
    var problems: [String] = []
    let known = [
      "service", "session", "auto_pause", "sim", "gps", "buttons", "led", "buzzer", "barometer", "sensors",
      "export", "usb_drive", "rider", "zones", "metrics", "web",
    ]
    for key in root.keys where !known.contains(key) {
      let what = root[key]?.table != nil ? "section [\(key)]" : "key \"\(key)\" outside any section"
      problems.append("\(file): unknown \(what) (known: \(known.map { "[\($0)]" }.joined(separator: ", ")))")
    }

    let service = Section("service", in: root, file: file)
    if let board = service.choice("board", BoardKind.self) { configuration.board = board }
    if let path = service.path("state_directory") { configuration.stateDirectory = path }
    if let path = service.path("runtime_directory") { configuration.runtimeDirectory = path }
    if let group = service.string("control_socket_group") {
      configuration.controlSocketGroup = group.isEmpty ? nil : group
      // Checked here, on the machine it runs on, so `--check-config` catches it and the
      // service stops before it touches a session.
      if !group.isEmpty, getgrnam(group) == nil {
        service.problem("control_socket_group", "names no group on this system (\"\(group)\"; see /etc/group)")
      }
    }
    if let level = service.string("log_level") {
      if let parsed = LogLevel.allCases.first(where: { $0.name == level }) {
        configuration.logLevel = parsed
      } else {
        service.problem("log_level", "must be one of \(LogLevel.allCases.map(\.name).joined(separator: ", "))")
      }
    }

    let session = Section("session", in: root, file: file)
    if let activity = session.choice("activity", ActivityType.self) { configuration.activity = activity }
    if let countdown = session.number("countdown_seconds", 0...60) { configuration.countdown = countdown }
    if let names = session.strings("activities") {
      for name in names {
        if let type = ActivityType(rawValue: name) {
          configuration.activityPlan.append(type)
        } else {
          let known = ActivityType.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
          session.problem("activities", "names no activity \"\(name)\" (known: \(known))")
        }
      }
      if let first = configuration.activityPlan.first, session.string("activity") == nil {
        // The workout starts as the plan's first activity.
        configuration.activity = first
      } else if let first = configuration.activityPlan.first, first != configuration.activity {
        session.problem(
          "activities", "starts with \"\(first.rawValue)\" but activity is \"\(configuration.activity.rawValue)\"")
      }
    }
    let lapDistance = session.number("auto_lap_distance", 100...100_000)
    let lapTime = session.number("auto_lap_time", 60...86_400)
    if lapDistance != nil, lapTime != nil {
      session.problem("auto_lap_time", "cannot go with auto_lap_distance: laps by distance or by time, not both")
    }
    configuration.autoLap = lapDistance.map { .distance(metres: $0) } ?? lapTime.map { .time(seconds: $0) }

    let autoPause = Section("auto_pause", in: root, file: file)
    if let enabled = autoPause.bool("enabled") { configuration.autoPauseEnabled = enabled }
    configuration.autoPauseOverrides.stopSpeed = autoPause.number("stop_speed", 0...10)
    configuration.autoPauseOverrides.resumeSpeed = autoPause.number("resume_speed", 0...10)
    configuration.autoPauseOverrides.stopAfter = autoPause.number("stop_after_seconds", 0...600)
    configuration.autoPauseOverrides.resumeAfter = autoPause.number("resume_after_seconds", 0...600)
    if let stop = configuration.autoPauseOverrides.stopSpeed, let resume = configuration.autoPauseOverrides.resumeSpeed,
      resume < stop
    {
      autoPause.problem("resume_speed", "must not be below stop_speed (\(stop)), or noise would flap the state")
    }

    let sim = Section("sim", in: root, file: file)
    if let ride = sim.path("ride") { configuration.simRide = ride }
    if let text = sim.peekString("speed") {
      if text == "max" { configuration.simSpeed = nil } else { sim.problem("speed", "must be a number or \"max\"") }
    } else if let speed = sim.number("speed", 0.01...1000) {
      configuration.simSpeed = speed
    }
    if let exitAtEnd = sim.bool("exit_at_end") { configuration.simExitAtEnd = exitAtEnd }

    let gps = Section("gps", in: root, file: file)
    if let enabled = gps.bool("enabled") { configuration.gps.enabled = enabled }
    if let host = gps.string("host") {
      if host.isEmpty { gps.problem("host", "must not be empty") } else { configuration.gps.host = host }
    }
    if let port = gps.wholeNumber("port", 1...65535) { configuration.gps.port = port }
    if let limit = gps.number("max_horizontal_error", 1...1000) { configuration.gps.maxHorizontalError = limit }
    if let lostAfter = gps.number("fix_lost_after_seconds", 1...600) { configuration.gps.fixLostAfter = lostAfter }
    if let set = gps.bool("set_system_clock") { configuration.gps.setSystemClock = set }

    let buttons = Section("buttons", in: root, file: file)
    if let enabled = buttons.bool("enabled") { configuration.buttons.enabled = enabled }
    if let source = buttons.choice("source", Buttons.Source.self) { configuration.buttons.source = source }
    if let chip = buttons.string("chip") { configuration.buttons.chip = chip }
    for (key, path) in [("start", \Buttons.start), ("lap", \Buttons.lap), ("stop", \Buttons.stop)] {
      if let line = buttons.string(key) { configuration.buttons[keyPath: path] = line }
    }
    if let bias = buttons.string("bias") {
      if ["pull-up", "pull-down", "disabled", "as-is"].contains(bias) {
        configuration.buttons.bias = bias
      } else {
        buttons.problem("bias", "must be \"pull-up\", \"pull-down\", \"disabled\" or \"as-is\"")
      }
    }
    if let level = buttons.choice("pressed_level", LineLevel.self) { configuration.buttons.pressedLevel = level }
    if let device = buttons.string("input_device") { configuration.buttons.inputDevice = device }
    if let debounce = buttons.number("debounce_ms", 0...500) { configuration.buttons.debounce = debounce / 1000 }
    if let longPress = buttons.number("long_press_seconds", 0.5...10) { configuration.buttons.longPress = longPress }

    let led = Section("led", in: root, file: file)
    led.read(into: &configuration.led)
    let buzzer = Section("buzzer", in: root, file: file)
    buzzer.read(into: &configuration.buzzer)

    let barometer = Section("barometer", in: root, file: file)
    if let enabled = barometer.bool("enabled") { configuration.barometer.enabled = enabled }
    if let bus = barometer.string("bus") { configuration.barometer.bus = bus }
    if let address = barometer.wholeNumber("address", 0x76...0x77, hexadecimal: true) {
      configuration.barometer.address = address
    }
    if let interval = barometer.number("interval_seconds", 0.05...60) { configuration.barometer.interval = interval }
    if let pressure = barometer.number("sea_level_pressure", 0...110_000) {
      if pressure == 0 {
        configuration.barometer.seaLevelPressure = nil
      } else if (87_000...108_500).contains(pressure) {
        configuration.barometer.seaLevelPressure = pressure
      } else {
        barometer.problem(
          "sea_level_pressure", "must be in Pa, 87000 to 108500, or 0 to calibrate from GPS (got \(pressure))")
      }
    }

    let sensors = Section("sensors", in: root, file: file)
    // "AA:BB:CC:DD:EE:FF", or with "/public" or "/random" when the address's kind is not the one
    // its first byte suggests.
    func address(_ key: String) -> BluetoothAddress? {
      guard let text = sensors.string(key), !text.isEmpty else { return nil }
      let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
      let kind = parts.count == 2 ? BluetoothAddress.Kind(rawValue: parts[1]) : nil
      if let address = BluetoothAddress(parts[0], kind: kind), parts.count == 1 || kind != nil { return address }
      sensors.problem(
        key,
        "must be a Bluetooth address like \"A0:9E:1A:12:34:56\", optionally with \"/public\" or \"/random\" (got \"\(text)\")"
      )
      return nil
    }
    configuration.sensors.heartRate = address("heart_rate")
    configuration.sensors.power = address("power")
    configuration.sensors.speedCadence = address("speed_cadence")
    let named = [configuration.sensors.heartRate, configuration.sensors.power, configuration.sensors.speedCadence]
      .compactMap { $0 }
    if Set(named.map(\.bytes)).count < named.count {
      sensors.problem(
        "addresses:", "one sensor is named for two roles (heart_rate, power, speed_cadence take one each)")
    }
    // 100 mm (a toy) to 4000 mm (a 50-inch fat-bike tyre is about 2.3 m; a typo is not a wheel).
    if let millimetres = sensors.number("wheel_circumference_mm", 100...4000) {
      configuration.sensors.wheelCircumference = millimetres / 1000
    }
    if let text = sensors.string("adapter"), !text.isEmpty {
      if text.hasPrefix("hci"), let index = UInt16(text.dropFirst(3)), index < 0xFFFF {
        configuration.sensors.adapter = index
      } else {
        sensors.problem("adapter", "must name a Bluetooth controller like \"hci0\" (got \"\(text)\")")
      }
    }

    let export = Section("export", in: root, file: file)
    if let enabled = export.bool("enabled") { configuration.export.enabled = enabled }
    if let formats = export.formats("formats", ifEmpty: "to export nothing, set enabled = false") {
      configuration.export.formats = formats
    }
    if let directory = export.path("directory") { configuration.export.directory = directory }

    let drive = Section("usb_drive", in: root, file: file)
    if let enabled = drive.bool("enabled") { configuration.usbDrive.enabled = enabled }
    if let formats = drive.formats("formats", ifEmpty: "to have no drive, set enabled = false") {
      configuration.usbDrive.formats = formats
    }
    if configuration.usbDrive.enabled {
      if !configuration.export.enabled {
        drive.problem("enabled", "needs [export] enabled: the drive holds the service's exports")
      }
      for format in configuration.usbDrive.formats where !configuration.export.formats.contains(format) {
        drive.problem("formats", "has \"\(format.rawValue)\", which [export] formats does not write")
      }
    }

    let web = Section("web", in: root, file: file)
    if let enabled = web.bool("enabled") { configuration.web.enabled = enabled }
    if let address = web.string("address") {
      if address.isEmpty || address.contains(where: { $0 == " " || $0 == "/" }) {
        web.problem("address", "must be an address to listen on, like \"0.0.0.0\", \"::\" or \"127.0.0.1\"")
      } else {
        configuration.web.address = address
      }
    }
    // 0: a free port the kernel chooses (the log says which), for tests.
    if let port = web.wholeNumber("port", 0...65535) { configuration.web.port = port }
    if let assets = web.path("assets") { configuration.web.assets = assets }
    if let clients = web.wholeNumber("max_clients", 2...64) { configuration.web.maximumClients = clients }

    let rider = Section("rider", in: root, file: file)
    configuration.rider.age = rider.number("age", 5...110).map { Int($0.rounded()) }
    configuration.rider.restingHeartRate = rider.number("resting_heart_rate", 25...120)
    configuration.rider.maxHeartRate = rider.number("max_heart_rate", 100...240)
    configuration.rider.ftp = rider.number("ftp", 30...600)
    configuration.rider.weight = rider.number("weight", 20...300)
    configuration.rider.sex = rider.choice("sex", RiderProfile.Sex.self)
    let zones = Section("zones", in: root, file: file)
    var model = SystemZones.PowerModel.sixZone
    if let name = zones.string("power_model") {
      switch name {
      case "six_zone": model = .sixZone
      case "coggan": model = .coggan
      default: zones.problem("power_model", "must be \"six_zone\" or \"coggan\" (Coggan's seven levels)")
      }
    }
    for (key, quantity) in [("heart_rate", ZoneQuantity.heartRate), ("power", .cyclingPower)] {
      if let text = zones.string(key) {
        do {
          configuration.zones.append(try ZoneConfiguration(parsing: text, quantity: quantity, source: .user))
        } catch {
          zones.problem(key, "is refused: \(error)")
        }
        continue
      }
      // The system's, from [rider], when it has what they need.
      let r = configuration.rider
      do {
        switch quantity {
        case .heartRate:
          if let resting = r.restingHeartRate, r.age != nil || r.maxHeartRate != nil {
            let maximum = r.maxHeartRate ?? SystemZones.tanakaMaximumHeartRate(age: r.age ?? 0)
            configuration.zones.append(try SystemZones.heartRate(age: r.age ?? 0, resting: resting, maximum: maximum))
          }
        case .cyclingPower:
          if let ftp = r.ftp { configuration.zones.append(try SystemZones.power(ftp: ftp, model: model)) }
        }
      } catch {
        rider.problem(quantity == .heartRate ? "resting_heart_rate" : "ftp", "cannot make the system zones: \(error)")
      }
    }

    for (key, quantity) in [("heart_rate_target", ZoneQuantity.heartRate), ("power_target", .cyclingPower)] {
      guard let text = zones.string(key) else { continue }
      do {
        let target = try TargetZone(parsing: text, quantity: quantity)
        if let configuration = configuration.zones.first(where: { $0.quantity == quantity }),
          target.upper > configuration.zones.count
        {
          zones.problem(key, "goes beyond the \(configuration.zones.count) zones configured")
        } else if !configuration.zones.contains(where: { $0.quantity == quantity }) {
          zones.problem(
            key,
            "needs \(quantity == .heartRate ? "heart-rate" : "power") zones ([zones] \(quantity == .heartRate ? "heart_rate" : "power"), or [rider] for the system's)"
          )
        } else {
          configuration.targetZones.append(target)
        }
      } catch {
        zones.problem(key, "is refused: \(error)")
      }
    }

    let metrics = Section("metrics", in: root, file: file)
    if let text = metrics.string("average_power") {
      switch text {
      case "with_zeros": configuration.powerAveraging = .withZeros
      case "without_zeros": configuration.powerAveraging = .withoutZeros
      default:
        metrics.problem(
          "average_power", "must be \"with_zeros\" (coasting counts, the default) or \"without_zeros\"")
      }
    }

    let sections = [
      service, session, autoPause, sim, gps, buttons, led, buzzer, barometer, sensors, export, drive, rider, zones,
      metrics, web,
    ]
    for section in sections {
      problems += section.finish(among: sections)
    }
    guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
    return configuration
  }

  /// Reads the configuration file at `path`. A missing file is an error only if `required`
  /// (an explicit `--config`); the default path may be absent, meaning all defaults.
  public static func load(
    path: String, required: Bool, environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(ConfigurationError) -> DaemonConfiguration {
    guard FileManager.default.fileExists(atPath: path) else {
      if required { throw ConfigurationError(problems: ["\(path): no such file"]) }
      return DaemonConfiguration(environment: environment)
    }
    guard let data = FileManager.default.contents(atPath: path) else {
      throw ConfigurationError(problems: ["\(path): cannot be read (permissions?)"])
    }
    guard let text = String(data: data, encoding: .utf8) else {
      throw ConfigurationError(problems: ["\(path): is not UTF-8 text"])
    }
    return try parse(text, file: path, environment: environment)
  }
}

/// One `[section]` of the file: typed reads that remember which keys were used, so that any
/// key left over is reported as unknown.
private final class Section {
  /// Export formats by name, each once, in the order given; nil when the key is absent.
  func formats(_ key: String, ifEmpty advice: String) -> [ExportFormat]? {
    guard let names = strings(key) else { return nil }
    var formats: [ExportFormat] = []
    for name in names {
      if let format = ExportFormat(rawValue: name) {
        if !formats.contains(format) { formats.append(format) }
      } else {
        let known = ExportFormat.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        problem(key, "names no format \"\(name)\" (known: \(known))")
      }
    }
    if names.isEmpty { problem(key, "is empty (\(advice))") }
    return formats
  }

  let name: String
  let table: TOMLTable?
  let file: String
  private var used: Set<String> = []
  private var problems: [String] = []

  init(_ name: String, in root: TOMLTable, file: String) {
    self.name = name
    self.file = file
    if let value = root[name] {
      table = value.table
      if table == nil { problems.append("\(file): \(name) must be a [\(name)] table") }
    } else {
      table = nil
    }
  }

  /// The keys of an output line's section ([led], [buzzer]).
  func read(into output: inout DaemonConfiguration.OutputLine) {
    if let enabled = bool("enabled") { output.enabled = enabled }
    if let chip = string("chip") { output.chip = chip }
    if let line = string("line") { output.line = line }
    if let activeLow = bool("active_low") { output.activeLow = activeLow }
  }

  func problem(_ key: String, _ text: String) {
    problems.append("\(file): [\(name)] \(key) \(text)")
  }

  private func value(_ key: String) -> TOMLValueConvertible? {
    used.insert(key)
    return table?[key]
  }

  func string(_ key: String) -> String? {
    guard let value = value(key) else { return nil }
    guard let string = value.string else {
      problem(key, "must be a string")
      return nil
    }
    return string
  }

  func path(_ key: String) -> String? {
    guard let path = string(key) else { return nil }
    guard path.hasPrefix("/") || path.hasPrefix(".") else {
      problem(key, "must be an absolute path or start with ./ (got \"\(path)\")")
      return nil
    }
    return path
  }

  /// An array of strings.
  func strings(_ key: String) -> [String]? {
    guard let value = value(key) else { return nil }
    guard let array = value.array, array.allSatisfy({ $0.type == .string }) else {
      problem(key, "must be an array of strings, like [\"fit\", \"gpx\"]")
      return nil
    }
    return array.compactMap(\.string)
  }

  /// The key's string value if it is a string (without complaining if it is not).
  func peekString(_ key: String) -> String? {
    guard let value = table?[key], value.type == .string else { return nil }
    used.insert(key)
    return value.string
  }

  func bool(_ key: String) -> Bool? {
    guard let value = value(key) else { return nil }
    guard value.type == .bool, let bool = value.bool else {
      problem(key, "must be true or false")
      return nil
    }
    return bool
  }

  func number(_ key: String, _ range: ClosedRange<Double>) -> Double? {
    number(key, range, shown: Self.decimal)
  }

  /// A whole number (a port, a count, an I²C address) in `range`; `hexadecimal`: its bounds
  /// are shown as such an address is written (0x76), not as 118.
  func wholeNumber(_ key: String, _ range: ClosedRange<Int>, hexadecimal: Bool = false) -> Int? {
    let shown = hexadecimal ? Self.hexadecimal : Self.decimal
    guard let number = number(key, Double(range.lowerBound)...Double(range.upperBound), shown: shown) else {
      return nil
    }
    guard number == number.rounded() else {
      problem(key, "must be a whole number (got \(shown(number)))")
      return nil
    }
    return Int(number)
  }

  private func number(_ key: String, _ range: ClosedRange<Double>, shown: (Double) -> String) -> Double? {
    guard let value = value(key) else { return nil }
    let number: Double? =
      switch value.type {
      case .int: value.int.map(Double.init)
      case .double: value.double
      default: nil
      }
    guard let number, number.isFinite else {
      problem(key, "must be a number")
      return nil
    }
    guard range.contains(number) else {
      problem(key, "must be between \(shown(range.lowerBound)) and \(shown(range.upperBound)) (got \(shown(number)))")
      return nil
    }
    return number
  }

  /// As the file would say it: 4000, not Swift's 4000.0; 2.1 as it is.
  private static func decimal(_ number: Double) -> String {
    number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : "\(number)"
  }

  private static func hexadecimal(_ number: Double) -> String {
    number == number.rounded() && number >= 0 && number < 1e15
      ? "0x" + String(Int64(number), radix: 16) : "\(number)"
  }

  func choice<T: RawRepresentable & CaseIterable>(_ key: String, _ type: T.Type) -> T? where T.RawValue == String {
    guard let string = string(key) else { return nil }
    guard let value = T(rawValue: string) else {
      problem(
        key, "must be one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")) (got \"\(string)\")")
      return nil
    }
    return value
  }

  /// The problems found, with every key that no read asked for, and what to write instead:
  /// the section that has such a key (`ftp` under [metrics] belongs in [rider]), and the keys
  /// this one has (every key of a section is asked for whether the file sets it or not).
  func finish(among sections: [Section]) -> [String] {
    if let table {
      for key in table.keys.sorted() where !used.contains(key) {
        let elsewhere = sections.filter { $0 !== self && $0.used.contains(key) }.map { "[\($0.name)]" }
        let belongs = elsewhere.isEmpty ? "" : "it belongs in \(elsewhere.joined(separator: " or ")); "
        problems.append(
          "\(file): [\(name)] unknown key \"\(key)\" (\(belongs)known here: \(used.sorted().joined(separator: ", ")))")
      }
    }
    return problems
  }
}
