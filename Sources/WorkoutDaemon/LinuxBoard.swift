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
        devices.append(
          GPIOButtons(
            settings: GPIOButtonSettings(
              chip: buttons.chip,
              lines: Dictionary(uniqueKeysWithValues: wanted.map { ($0.0, GPIOLineSpec(parsing: $0.1)) }),
              bias: buttons.bias, configuration: buttonConfiguration)))
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
      return GPIOOutputLine(
        settings: GPIOOutputSettings(
          chip: output.chip, line: GPIOLineSpec(parsing: output.line), activeLow: output.activeLow),
        device: .indicator, role: role)
    }
    led = outputLine(configuration.led, role: "status LED")
    buzzer = outputLine(configuration.buzzer, role: "buzzer")
    devices += [led, buzzer].compactMap { $0 }
    if configuration.barometer.enabled {
      devices.append(
        BMP280Source(
          settings: BarometerSettings(
            bus: configuration.barometer.bus, address: UInt8(configuration.barometer.address),
            interval: configuration.barometer.interval)))
    }
    // The battery's gauge and the Pi's supply flags ([battery] supply = "none": neither, the
    // board is on a bench supply).
    if let supply = configuration.battery.supply {
      devices.append(BatteryGauge(settings: BatteryGaugeSettings(supply: supply, interval: configuration.battery.poll)))
      devices.append(SupplyMonitor(settings: SupplyMonitorSettings(interval: configuration.battery.poll)))
    }
    // The BLE sensors are the board's `SensorRoster`: chosen here or with `workoutctl sensors`.
    if !problems.isEmpty { throw ConfigurationError(problems: problems) }
  }
}
