import BoardLinux
import Foundation
import SensorProtocols
import WorkoutCore
import WorkoutExport
import WorkoutWeb

#if canImport(Glibc)
  import Glibc
#endif

// Each section of the configuration file, read by the settings it makes: every key is named
// once, here, with its range and what a wrong value is told.

extension DaemonConfiguration {
  /// `[service]`
  mutating func readService(_ service: TOMLSection) {
    if let board = service.choice("board", BoardKind.self) { self.board = board }
    if let path = service.path("state_directory") { stateDirectory = path }
    if let path = service.path("runtime_directory") { runtimeDirectory = path }
    if let group = service.string("control_socket_group") {
      controlSocketGroup = group.isEmpty ? nil : group
      // Checked here, on the machine it runs on, so `--check-config` catches it and the
      // service stops before it touches a session.
      if !group.isEmpty, getgrnam(group) == nil {
        service.problem("control_socket_group", "names no group on this system (\"\(group)\"; see /etc/group)")
      }
    }
    if let level = service.string("log_level") {
      if let parsed = LogLevel.allCases.first(where: { $0.name == level }) {
        logLevel = parsed
      } else {
        service.problem("log_level", "must be one of \(LogLevel.allCases.map(\.name).joined(separator: ", "))")
      }
    }
  }

  /// `[session]`
  mutating func readSession(_ session: TOMLSection) {
    if let activity = session.choice("activity", ActivityType.self) { self.activity = activity }
    if let countdown = session.number("countdown_seconds", 0...60) { self.countdown = countdown }
    if let names = session.strings("activities") {
      for name in names {
        if let type = ActivityType(rawValue: name) {
          activityPlan.append(type)
        } else {
          let known = ActivityType.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
          session.problem("activities", "names no activity \"\(name)\" (known: \(known))")
        }
      }
      if let first = activityPlan.first, session.string("activity") == nil {
        // The workout starts as the plan's first activity.
        activity = first
      } else if let first = activityPlan.first, first != activity {
        session.problem("activities", "starts with \"\(first.rawValue)\" but activity is \"\(activity.rawValue)\"")
      }
    }
    let lapDistance = session.number("auto_lap_distance", 100...100_000)
    let lapTime = session.number("auto_lap_time", 60...86_400)
    if lapDistance != nil, lapTime != nil {
      session.problem("auto_lap_time", "cannot go with auto_lap_distance: laps by distance or by time, not both")
    }
    autoLap = lapDistance.map { .distance(metres: $0) } ?? lapTime.map { .time(seconds: $0) }
  }

  /// `[auto_pause]`
  mutating func readAutoPause(_ autoPause: TOMLSection) {
    if let enabled = autoPause.bool("enabled") { autoPauseEnabled = enabled }
    autoPauseOverrides.stopSpeed = autoPause.number("stop_speed", 0...10)
    autoPauseOverrides.resumeSpeed = autoPause.number("resume_speed", 0...10)
    autoPauseOverrides.stopAfter = autoPause.number("stop_after_seconds", 0...600)
    autoPauseOverrides.resumeAfter = autoPause.number("resume_after_seconds", 0...600)
    if let stop = autoPauseOverrides.stopSpeed, let resume = autoPauseOverrides.resumeSpeed, resume < stop {
      autoPause.problem("resume_speed", "must not be below stop_speed (\(stop)), or noise would flap the state")
    }
  }

  /// `[sim]`
  mutating func readSim(_ sim: TOMLSection) {
    if let ride = sim.path("ride") { simRide = ride }
    if let text = sim.peekString("speed") {
      if text == "max" { simSpeed = nil } else { sim.problem("speed", "must be a number or \"max\"") }
    } else if let speed = sim.number("speed", 0.01...1000) {
      simSpeed = speed
    }
    if let exitAtEnd = sim.bool("exit_at_end") { simExitAtEnd = exitAtEnd }
  }

  /// `[zones]`: the rider's own, else the system's from `[rider]` (whose keys a failure names).
  mutating func readZones(_ zones: TOMLSection, rider: TOMLSection) {
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
          self.zones.append(try ZoneConfiguration(parsing: text, quantity: quantity, source: .user))
        } catch {
          zones.problem(key, "is refused: \(error)")
        }
        continue
      }
      // The system's, from [rider], when it has what they need.
      let r = self.rider
      do {
        switch quantity {
        case .heartRate:
          if let resting = r.restingHeartRate, r.age != nil || r.maxHeartRate != nil {
            let maximum = r.maxHeartRate ?? SystemZones.tanakaMaximumHeartRate(age: r.age ?? 0)
            self.zones.append(try SystemZones.heartRate(age: r.age ?? 0, resting: resting, maximum: maximum))
          }
        case .cyclingPower:
          if let ftp = r.ftp { self.zones.append(try SystemZones.power(ftp: ftp, model: model)) }
        }
      } catch {
        rider.problem(quantity == .heartRate ? "resting_heart_rate" : "ftp", "cannot make the system zones: \(error)")
      }
    }

    for (key, quantity) in [("heart_rate_target", ZoneQuantity.heartRate), ("power_target", .cyclingPower)] {
      guard let text = zones.string(key) else { continue }
      do {
        let target = try TargetZone(parsing: text, quantity: quantity)
        if let configuration = self.zones.first(where: { $0.quantity == quantity }),
          target.upper > configuration.zones.count
        {
          zones.problem(key, "goes beyond the \(configuration.zones.count) zones configured")
        } else if !self.zones.contains(where: { $0.quantity == quantity }) {
          zones.problem(
            key,
            "needs \(quantity == .heartRate ? "heart-rate" : "power") zones ([zones] \(quantity == .heartRate ? "heart_rate" : "power"), or [rider] for the system's)"
          )
        } else {
          targetZones.append(target)
        }
      } catch {
        zones.problem(key, "is refused: \(error)")
      }
    }
  }

  /// `[metrics]`
  mutating func readMetrics(_ metrics: TOMLSection) {
    guard let text = metrics.string("average_power") else { return }
    switch text {
    case "with_zeros": powerAveraging = .withZeros
    case "without_zeros": powerAveraging = .withoutZeros
    default:
      metrics.problem("average_power", "must be \"with_zeros\" (coasting counts, the default) or \"without_zeros\"")
    }
  }
}

extension DaemonConfiguration.GPS {
  /// `[gps]`
  mutating func read(_ gps: TOMLSection) {
    if let enabled = gps.bool("enabled") { self.enabled = enabled }
    if let host = gps.string("host") {
      if host.isEmpty { gps.problem("host", "must not be empty") } else { self.host = host }
    }
    if let port = gps.wholeNumber("port", 1...65535) { self.port = port }
    if let limit = gps.number("max_horizontal_error", 1...1000) { maxHorizontalError = limit }
    if let lostAfter = gps.number("fix_lost_after_seconds", 1...600) { fixLostAfter = lostAfter }
    if let set = gps.bool("set_system_clock") { setSystemClock = set }
  }
}

extension DaemonConfiguration.Buttons {
  /// `[buttons]`
  mutating func read(_ buttons: TOMLSection) {
    if let enabled = buttons.bool("enabled") { self.enabled = enabled }
    if let source = buttons.choice("source", Source.self) { self.source = source }
    if let chip = buttons.string("chip") { self.chip = chip }
    for (key, path) in [
      ("start", \DaemonConfiguration.Buttons.start), ("lap", \DaemonConfiguration.Buttons.lap),
      ("stop", \DaemonConfiguration.Buttons.stop),
    ] {
      if let line = buttons.string(key) { self[keyPath: path] = line }
    }
    if let bias = buttons.choice("bias", GPIOBias.self) { self.bias = bias }
    if let level = buttons.choice("pressed_level", LineLevel.self) { pressedLevel = level }
    if let device = buttons.string("input_device") { inputDevice = device }
    if let debounce = buttons.number("debounce_ms", 0...500) { self.debounce = debounce / 1000 }
    if let longPress = buttons.number("long_press_seconds", 0.5...10) { self.longPress = longPress }
  }
}

extension DaemonConfiguration.OutputLine {
  /// `[led]`, `[buzzer]`
  mutating func read(_ output: TOMLSection) {
    if let enabled = output.bool("enabled") { self.enabled = enabled }
    if let chip = output.string("chip") { self.chip = chip }
    if let line = output.string("line") { self.line = line }
    if let activeLow = output.bool("active_low") { self.activeLow = activeLow }
  }
}

extension DaemonConfiguration.Barometer {
  /// `[barometer]`
  mutating func read(_ barometer: TOMLSection) {
    if let enabled = barometer.bool("enabled") { self.enabled = enabled }
    if let bus = barometer.string("bus") { self.bus = bus }
    if let address = barometer.wholeNumber("address", 0x76...0x77, hexadecimal: true) { self.address = address }
    if let interval = barometer.number("interval_seconds", 0.05...60) { self.interval = interval }
    if let pressure = barometer.number("sea_level_pressure", 0...110_000) {
      if pressure == 0 {
        seaLevelPressure = nil
      } else if (87_000...108_500).contains(pressure) {
        seaLevelPressure = pressure
      } else {
        barometer.problem(
          "sea_level_pressure", "must be in Pa, 87000 to 108500, or 0 to calibrate from GPS (got \(pressure))")
      }
    }
  }
}

extension DaemonConfiguration.IMU {
  /// `[imu]`
  mutating func read(_ imu: TOMLSection) {
    if let enabled = imu.bool("enabled") { self.enabled = enabled }
    if let device = imu.string("device") {
      if device == "auto" {
        self.device = nil
      } else if device.isEmpty || device.contains("/") {
        imu.problem("device", "must be an IIO driver's name (bmi160, lsm6dso, ...) or \"auto\" (got \"\(device)\")")
      } else {
        self.device = device
      }
    }
    if let incident = imu.bool("incident") { self.incident = incident }
    if let autoStart = imu.bool("auto_start") { self.autoStart = autoStart }
    if let g = imu.number("impact_g", 2...16) { incidentSettings.impact = g * MotionSample.gravity }
    if let degrees = imu.number("tilt_degrees", 20...90) { incidentSettings.tilt = degrees }
    if let seconds = imu.number("still_seconds", 3...60) { incidentSettings.stillFor = seconds }
    if let seconds = imu.number("countdown_seconds", 10...600) { incidentSettings.countdown = seconds }
  }
}

extension DaemonConfiguration.Battery {
  /// `[battery]`
  mutating func read(_ battery: TOMLSection) {
    if let supply = battery.string("supply") {
      switch supply {
      case "auto": self.supply = .auto
      case "none": self.supply = nil
      case _ where supply.isEmpty || supply.contains("/") || supply == "." || supply == "..":
        battery.problem(
          "supply", "must be \"auto\", \"none\" or a name in /sys/class/power_supply, like \"BAT0\" (got \"\(supply)\")"
        )
      default: self.supply = .named(supply)
      }
    }
    if let low = battery.number("low_percent", 0...100) { settings.lowPercent = low }
    if let critical = battery.number("critical_percent", 0...100) { settings.criticalPercent = critical }
    if settings.criticalPercent >= settings.lowPercent {
      battery.problem(
        "critical_percent",
        "must be below low_percent (\(TOMLSection.decimal(settings.criticalPercent)) is not below \(TOMLSection.decimal(settings.lowPercent))): the warning comes first"
      )
    }
    if let minutes = battery.number("critical_minutes_left", 0...600) {
      settings.criticalMinutesLeft = minutes == 0 ? nil : minutes
    }
    if let countdown = battery.number("countdown_seconds", 0...600) { settings.countdown = countdown }
    if let powerOff = battery.bool("power_off") { settings.powerOff = powerOff }
    if let poll = battery.number("poll_seconds", 1...300) { self.poll = poll }
  }
}

extension DaemonConfiguration.Sensors {
  /// `[sensors]`
  mutating func read(_ sensors: TOMLSection) {
    // "AA:BB:CC:DD:EE:FF", or with "/public" or "/random" when the address's kind is not the
    // one its first byte suggests.
    func address(_ key: String, _ role: SensorRole) -> BluetoothAddress? {
      guard let text = sensors.string(key), !text.isEmpty else { return nil }
      if text.lowercased().hasPrefix("ant:") {
        if let sensor = ANTSensor(text: text, role: role) {
          ant[role] = sensor
        } else {
          sensors.problem(key, "must be an ANT+ sensor like \(ANTSensor.syntax) (got \"\(text)\")")
        }
        return nil
      }
      let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
      let kind = parts.count == 2 ? BluetoothAddress.Kind(rawValue: parts[1]) : nil
      if let address = BluetoothAddress(parts[0], kind: kind), parts.count == 1 || kind != nil { return address }
      sensors.problem(
        key,
        "must be a Bluetooth address like \"A0:9E:1A:12:34:56\", optionally with \"/public\" or \"/random\", or an ANT+ sensor like \"ant:any\" (got \"\(text)\")"
      )
      return nil
    }
    heartRate = address("heart_rate", .heartRate)
    power = address("power", .power)
    speedCadence = address("speed_cadence", .speedCadence)
    let named = [heartRate, power, speedCadence].compactMap { $0 }
    if Set(named.map(\.bytes)).count < named.count {
      sensors.problem(
        "addresses:", "one sensor is named for two roles (heart_rate, power, speed_cadence take one each)")
    }
    // 100 mm (a toy) to 4000 mm (a 50-inch fat-bike tyre is about 2.3 m; a typo is not a wheel).
    if let millimetres = sensors.number("wheel_circumference_mm", 100...4000) {
      wheelCircumference = millimetres / 1000
    }
    if let text = sensors.string("adapter"), !text.isEmpty {
      if text.hasPrefix("hci"), let index = UInt16(text.dropFirst(3)), index < 0xFFFF {
        adapter = index
      } else {
        sensors.problem("adapter", "must name a Bluetooth controller like \"hci0\" (got \"\(text)\")")
      }
    }
  }
}

extension DaemonConfiguration.ANT {
  /// `[ant]`
  mutating func read(_ ant: TOMLSection) {
    if let file = ant.path("network_key_file") { networkKeyFile = file }
  }
}

extension DaemonConfiguration.Export {
  /// `[export]`
  mutating func read(_ export: TOMLSection) {
    if let enabled = export.bool("enabled") { self.enabled = enabled }
    if let formats = export.formats("formats", ifEmpty: "to export nothing, set enabled = false") {
      self.formats = formats
    }
    if let directory = export.path("directory") { self.directory = directory }
  }
}

extension DaemonConfiguration.UsbDriveSettings {
  /// `[usb_drive]`: the drive holds some of `export`'s files.
  mutating func read(_ drive: TOMLSection, export: DaemonConfiguration.Export) {
    if let enabled = drive.bool("enabled") { self.enabled = enabled }
    if let formats = drive.formats("formats", ifEmpty: "to have no drive, set enabled = false") {
      self.formats = formats
    }
    guard enabled else { return }
    if !export.enabled {
      drive.problem("enabled", "needs [export] enabled: the drive holds the service's exports")
    }
    for format in formats where !export.formats.contains(format) {
      drive.problem("formats", "has \"\(format.rawValue)\", which [export] formats does not write")
    }
  }
}

extension DaemonConfiguration.Rider {
  /// `[rider]`
  mutating func read(_ rider: TOMLSection) {
    age = rider.number("age", 5...110).map { Int($0.rounded()) }
    restingHeartRate = rider.number("resting_heart_rate", 25...120)
    maxHeartRate = rider.number("max_heart_rate", 100...240)
    ftp = rider.number("ftp", 30...600)
    weight = rider.number("weight", 20...300)
    sex = rider.choice("sex", RiderProfile.Sex.self)
  }
}

extension WebSettings {
  /// `[web]`
  mutating func read(_ web: TOMLSection) {
    if let enabled = web.bool("enabled") { self.enabled = enabled }
    if let address = web.string("address") {
      if address.isEmpty || address.contains(where: { $0 == " " || $0 == "/" }) {
        web.problem("address", "must be an address to listen on, like \"0.0.0.0\", \"::\" or \"127.0.0.1\"")
      } else {
        self.address = address
      }
    }
    if let interface = web.string("interface") {
      // IFNAMSIZ is 16 with its NUL (netdevice(7)); a name has no slash or space.
      if interface.isEmpty || interface.utf8.count > 15 || interface.contains(where: { $0 == "/" || $0 == " " }) {
        web.problem("interface", "must be a network interface's name, like \"wlan0\"")
      } else {
        self.interface = interface
      }
    }
    // 0: a free port the kernel chooses (the log says which), for tests.
    if let port = web.wholeNumber("port", 0...65535) { self.port = port }
    if let assets = web.path("assets") { self.assets = assets }
    if let clients = web.wholeNumber("max_clients", 2...64) { maximumClients = clients }
    if let tls = web.bool("tls") { self.tls = tls }
    if let days = web.number("token_days", 0...3650) { tokenDays = days }
    if let names = web.strings("names") {
      if let bad = names.first(where: { !HostCheck.isField($0) || $0.contains(":") }) {
        web.problem("names", "must be host names without a port, like \"ride.example.net\" (got \"\(bad)\")")
      } else {
        self.names = names
      }
    }
    certificate = web.path("certificate") ?? certificate
    key = web.path("key") ?? key
    if (certificate == nil) != (key == nil) {
      web.problem(certificate == nil ? "key" : "certificate", "needs both certificate and key (PEM files), or neither")
      certificate = nil
      key = nil
    }
  }
}
