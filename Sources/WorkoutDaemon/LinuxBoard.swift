import BoardLinux
import LinuxSupport
import SensorProtocols
import WorkoutCore

/// The real board's devices, as the configuration describes them.
struct LinuxBoardDevices {
  var devices: [any DeviceSource] = []
  /// The status LED and the buzzer, if there are.
  var led: GPIOOutputLine?
  var buzzer: GPIOOutputLine?

  init(_ configuration: DaemonConfiguration) throws(ConfigurationError) {
    var problems: [String] = []
    if configuration.gps.enabled {
      devices.append(
        GPSDSource(
          settings: GPSDSourceSettings(
            host: configuration.gps.host, port: configuration.gps.port,
            quality: configuration.gps.fixQuality),
          reading: .byEngine))
    }
    let buttons = configuration.buttons
    if buttons.enabled {
      let buttonConfiguration: ButtonConfiguration
      do {
        buttonConfiguration = try ButtonConfiguration(
          debounce: buttons.debounce, longPress: buttons.longPress,
          pressedLevel: buttons.source == .input ? .high : buttons.pressedLevel)
      } catch {
        throw ConfigurationError(problems: ["[buttons] \(error)"])
      }
      let wanted: [(ButtonID, String)] = [(.start, buttons.start), (.lap, buttons.lap), (.stop, buttons.stop)]
      switch buttons.source {
      case .gpio:
        var settings = GPIOButtonSettings(
          chip: buttons.chip,
          lines: Dictionary(uniqueKeysWithValues: wanted.map { ($0.0, GPIOLineSpec(parsing: $0.1)) }))
        settings.bias = buttons.bias
        settings.configuration = buttonConfiguration
        devices.append(GPIOButtons(settings: settings))
      case .input:
        var keys: [ButtonID: UInt16] = [:]
        for (button, key) in wanted {
          if let code = InputEventButtonSettings.keyCode(key) {
            keys[button] = code
          } else {
            problems.append(
              "[buttons] \(button.rawValue) = \"\(key)\" is not a key code or a known key name (KEY_PROG1, BTN_0, ...)")
          }
        }
        devices.append(
          InputEventButtons(
            settings: InputEventButtonSettings(
              device: buttons.inputDevice, keys: keys, configuration: buttonConfiguration)))
      }
    }
    func outputLine(_ output: DaemonConfiguration.OutputLine, role: String) -> GPIOOutputLine? {
      guard output.enabled else { return nil }
      var settings = GPIOOutputSettings(chip: output.chip, line: GPIOLineSpec(parsing: output.line))
      settings.activeLow = output.activeLow
      return GPIOOutputLine(settings: settings, device: .indicator, role: role)
    }
    led = outputLine(configuration.led, role: "status LED")
    buzzer = outputLine(configuration.buzzer, role: "buzzer")
    devices += [led, buzzer].compactMap { $0 }
    if configuration.barometer.enabled {
      var settings = BarometerSettings(bus: configuration.barometer.bus)
      settings.address = UInt8(configuration.barometer.address)
      settings.interval = configuration.barometer.interval
      devices.append(BMP280Source(settings: settings))
    }
    if configuration.imu.enabled {
      var settings = IMUSettings(device: configuration.imu.device)
      settings.incident = configuration.imu.incidentSettings
      devices.append(IMUSource(settings: settings))
    }
    // The battery's gauge and the Pi's supply flags ([battery] supply = "none": neither, the
    // board is on a bench supply).
    if let supply = configuration.battery.supply {
      var gauge = BatteryGaugeSettings()
      gauge.supply = supply
      gauge.interval = configuration.battery.poll
      var monitor = SupplyMonitorSettings()
      monitor.interval = configuration.battery.poll
      devices += [BatteryGauge(settings: gauge), SupplyMonitor(settings: monitor)]
    }
    // The BLE sensors are the board's `SensorRoster`: chosen here or with `workoutctl sensors`.
    if !problems.isEmpty { throw ConfigurationError(problems: problems) }
  }
}
