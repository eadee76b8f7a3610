import SensorProtocols
import Testing
import WorkoutCore
import WorkoutDaemon

struct ConfigurationTests {
  let noSystemd: [String: String] = [:]

  @Test func anEmptyFileMeansEveryDefault() throws {
    let configuration = try DaemonConfiguration.parse("", file: "t.toml", environment: noSystemd)
    #expect(configuration == DaemonConfiguration(environment: noSystemd))
    #expect(configuration.board == .sim)
    #expect(configuration.databasePath == "/var/lib/workoutd/workoutd.db")
    #expect(configuration.controlSocketPath == "/run/workoutd/control.sock")
    #expect(configuration.engineSettings.autoPause == ActivityType.cycling.defaultAutoPause)
    #expect(configuration.engineSettings.countdown == 3)
  }

  @Test func systemdsDirectoriesAreTheDefaults() {
    let configuration = DaemonConfiguration(environment: [
      "STATE_DIRECTORY": "/var/lib/workoutd:/var/lib/other", "RUNTIME_DIRECTORY": "/run/workoutd",
    ])
    #expect(configuration.stateDirectory == "/var/lib/workoutd")
    #expect(configuration.runtimeDirectory == "/run/workoutd")
  }

  @Test func theInstalledDefaultFileIsValid() throws {
    let configuration = try DaemonConfiguration.load(
      path: repositoryRoot + "/board/workoutd.toml", required: true, environment: noSystemd)
    #expect(configuration.board == .linux)
  }

  @Test func keysOverrideDefaults() throws {
    let configuration = try DaemonConfiguration.parse(
      """
      [service]
      board = "linux"
      state_directory = "/data/rides"
      log_level = "debug"
      [session]
      activity = "running"
      countdown_seconds = 0
      [auto_pause]
      stop_after_seconds = 4
      [sim]
      speed = "max"
      """, file: "t.toml", environment: noSystemd)
    #expect(configuration.board == .linux)
    #expect(configuration.databasePath == "/data/rides/workoutd.db")
    #expect(configuration.logLevel == .debug)
    #expect(configuration.simSpeed == nil)
    let settings = configuration.engineSettings
    #expect(settings.activity == .running)
    #expect(settings.countdown == 0)
    #expect(settings.autoPause?.stopAfter == 4)
    #expect(settings.autoPause?.stopSpeed == ActivityType.running.defaultAutoPause?.stopSpeed)
  }

  @Test func theWebServerIsOffUnlessEnabledAndItsKeysAreChecked() throws {
    let defaults = try DaemonConfiguration.parse("", file: "t.toml", environment: noSystemd)
    #expect(!defaults.web.enabled && defaults.web.address == "0.0.0.0" && defaults.web.port == 8080)
    #expect(defaults.web.tls && defaults.web.certificate == nil && defaults.web.key == nil, "HTTPS unless said")
    let own = try DaemonConfiguration.parse(
      "[web]\ntls = true\ncertificate = \"/etc/w.crt\"\nkey = \"/etc/w.key\"\n", file: "t.toml",
      environment: noSystemd)
    #expect(own.web.certificate == "/etc/w.crt" && own.web.key == "/etc/w.key")
    let named = try DaemonConfiguration.parse(
      "[web]\nnames = [\"ride.example.net\", \"pi-2\"]\n", file: "t.toml", environment: noSystemd)
    #expect(named.web.names == ["ride.example.net", "pi-2"])
    #expect(
      try DaemonConfiguration.parse("[web]\ninterface = \"wlan0\"\n", file: "t.toml", environment: noSystemd).web
        .interface == "wlan0")
    #expect(
      try DaemonConfiguration.parse("[web]\ntoken_days = 30\n", file: "t.toml", environment: noSystemd).web.tokenDays
        == 30)
    #expect(defaults.web.tokenDays == 0, "until revoked unless said")
    #expect(try !DaemonConfiguration.parse("[web]\ntls = false\n", file: "t.toml", environment: noSystemd).web.tls)
    let set = try DaemonConfiguration.parse(
      "[web]\nenabled = true\naddress = \"127.0.0.1\"\nport = 8443\nmax_clients = 4\nassets = \"/srv/web\"\n",
      file: "t.toml", environment: noSystemd)
    #expect(set.web.enabled && set.web.address == "127.0.0.1" && set.web.port == 8443)
    #expect(set.web.maximumClients == 4 && set.web.assets == "/srv/web")
    for (text, words) in [
      ("port = 70000", "[web] port must be between 0 and 65535 (got 70000)"),
      ("port = 80.5", "[web] port must be a whole number (got 80.5)"),
      ("address = \"\"", "[web] address must be an address"), ("max_clients = 1", "[web] max_clients"),
      ("max_clients = 4.5", "[web] max_clients must be a whole number (got 4.5)"),
      ("colour = \"red\"", "unknown key"), ("tls = \"yes\"", "[web] tls"),
      ("certificate = \"/etc/w.crt\"", "needs both certificate and key"),
      ("token_days = -1", "[web] token_days"), ("interface = \"wlan0/x\"", "[web] interface must be"),
      ("interface = \"a-name-longer-than-15\"", "[web] interface must be"),
      ("names = [\"pi:8080\"]", "[web] names must be host names without a port"),
      ("names = [\"a b\"]", "[web] names must be host names"),
    ] {
      #expect(throws: ConfigurationError.self) {
        _ = try DaemonConfiguration.parse("[web]\n" + text + "\n", file: "t.toml", environment: noSystemd)
      }
      do {
        _ = try DaemonConfiguration.parse("[web]\n" + text + "\n", file: "t.toml", environment: noSystemd)
      } catch {
        #expect(error.description.contains(words), "\(text): \(error)")
      }
    }
  }

  @Test func exportsAreOnByDefaultIntoTheStateDirectory() throws {
    let defaults = try DaemonConfiguration.parse("", file: "t.toml", environment: noSystemd)
    #expect(defaults.export.enabled && defaults.export.formats == [.fit, .gpx])
    #expect(defaults.exportDirectory == "/var/lib/workoutd/exports")
    let configured = try DaemonConfiguration.parse(
      "[export]\nenabled = false\nformats = [\"fit\", \"fit\"]\ndirectory = \"/srv/rides\"\n", file: "t.toml",
      environment: noSystemd)
    #expect(!configured.export.enabled && configured.export.formats == [.fit])
    #expect(configured.exportDirectory == "/srv/rides")
    for (text, problem) in [
      ("formats = [\"fit\", \"kml\"]", "[export] formats names no format \"kml\""),
      ("formats = []", "[export] formats is empty (to export nothing, set enabled = false)"),
      ("formats = \"fit\"", "[export] formats must be an array of strings"),
      ("directory = \"exports\"", "[export] directory must be an absolute path"),
    ] {
      #expect {
        try DaemonConfiguration.parse("[export]\n" + text + "\n", file: "t.toml", environment: noSystemd)
      } throws: { error in
        "\(error)".contains(problem)
      }
    }
  }

  @Test func zonesAreTheRidersOwnElseTheSystemsFromRider() throws {
    let none = try DaemonConfiguration.parse("", file: "t.toml", environment: noSystemd)
    #expect(none.zones.isEmpty && none.engineSettings.zones.isEmpty && none.engineSettings.ftp == nil)
    let system = try DaemonConfiguration.parse(
      "[rider]\nage = 40\nresting_heart_rate = 60\nftp = 250\n[zones]\npower_model = \"coggan\"\n", file: "t.toml",
      environment: noSystemd)
    #expect(system.zones.map(\.quantity) == [.heartRate, .cyclingPower])
    #expect(system.zones.map(\.source) == [.system, .system])
    #expect(system.zones[0].zones.map(\.lower) == [0, 132, 144, 156, 168])
    #expect(system.zones[1].zones.count == 7)
    #expect(system.engineSettings.zones == system.zones && system.engineSettings.ftp == 250)
    let user = try DaemonConfiguration.parse(
      "[rider]\nage = 40\nresting_heart_rate = 60\n[zones]\nheart_rate = \"0-120,120-140,140-160,160- bpm\"\n",
      file: "t.toml", environment: noSystemd)
    #expect(user.zones.count == 1 && user.zones[0].source == .user && user.zones[0].zones.count == 4)
    for (text, problem) in [
      (
        "[zones]\nheart_rate = \"120\"\n", "[zones] heart_rate is refused: a zone configuration has 3 to 9 zones, not 2"
      ),
      (
        "[zones]\npower = \"0-100,110-200,200-\"\n",
        "[zones] power is refused: zones must be contiguous and not overlap: zone 1 ends at 100 but zone 2 starts at 110"
      ),
      (
        "[zones]\npower = \"100,200 bpm\"\n",
        "[zones] power is refused: boundaries of cyclingPower zones are in W, not bpm"
      ),
      ("[zones]\npower_model = \"seven\"\n", "[zones] power_model must be"),
      ("[rider]\nftp = 5000\n", "[rider] ftp must be between"),
      (
        "[rider]\nage = 30\nresting_heart_rate = 110\nmax_heart_rate = 105\n",
        "[rider] resting_heart_rate cannot make the system zones"
      ),
      ("[rider]\nweight = 700\n", "[rider] weight must be between"),
      ("[rider]\nsex = \"x\"\n", "[rider] sex must be one of \"female\", \"male\""),
    ] {
      #expect {
        try DaemonConfiguration.parse(text, file: "t.toml", environment: noSystemd)
      } throws: { error in
        (error as? ConfigurationError)?.problems.contains { $0.contains(problem) } == true
      }
    }
  }

  @Test func theShippedFilesZoneExamplesAreValid() throws {
    // board/workoutd.toml with its [rider] and [zones] examples uncommented.
    let text = try String(contentsOfFile: repositoryRoot + "/board/workoutd.toml", encoding: .utf8)
    var section = ""
    var lines: [String] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("[") { section = String(line) }
      if ["[rider]", "[zones]", "[metrics]"].contains(section), line.hasPrefix("# "),
        line.dropFirst(2).first?.isLetter == true,
        line.contains(" = ")
      {
        lines.append(String(line.dropFirst(2)))
      } else {
        lines.append(String(line))
      }
    }
    let configuration = try DaemonConfiguration.parse(lines.joined(separator: "\n"), file: "t", environment: noSystemd)
    #expect(configuration.rider.ftp == 250 && configuration.rider.age == 40)
    // Each workout records the rider's profile: calories from heart rate need weight and sex.
    #expect(
      configuration.engineSettings.rider
        == RiderProfile(age: 40, weight: 72, sex: .female, restingHeartRate: 60, maxHeartRate: 185))
    #expect(configuration.zones.map(\.source) == [.user, .user])
    #expect(configuration.zones.map(\.zones.count) == [5, 5])
    #expect(configuration.powerAveraging == .withZeros)
  }

  @Test func targetZonesNeedZonesOfTheirQuantityAndStayWithinThem() throws {
    let ok = try DaemonConfiguration.parse(
      "[zones]\nheart_rate = \"120,140,160,175\"\nheart_rate_target = \"2-3\"\n", file: "t.toml",
      environment: noSystemd)
    #expect(ok.engineSettings.targetZones.map(\.text) == ["2-3"])
    for (text, problem) in [
      ("[zones]\nheart_rate = \"120,140,160,175\"\nheart_rate_target = \"4-6\"\n", "goes beyond the 5 zones"),
      ("[zones]\npower_target = \"3\"\n", "t.toml: [zones] power_target needs power zones"),
      ("[zones]\nheart_rate = \"120,140,160,175\"\nheart_rate_target = \"3-2\"\n", "is refused: a target is"),
    ] {
      #expect {
        try DaemonConfiguration.parse(text, file: "t.toml", environment: noSystemd)
      } throws: { error in
        (error as? ConfigurationError)?.problems.contains { $0.contains(problem) } == true
      }
    }
  }

  @Test func aMultisportPlanNamesKnownActivitiesAndStartsTheWorkout() throws {
    let plan = try DaemonConfiguration.parse(
      "[session]\nactivities = [\"running\", \"cycling\", \"running\"]\n", file: "t.toml", environment: noSystemd)
    #expect(plan.engineSettings.activityPlan == [.running, .cycling, .running])
    #expect(plan.engineSettings.activity == .running, "the workout starts as the plan's first")
    for (text, problem) in [
      ("[session]\nactivities = [\"running\", \"swimming\"]\n", "names no activity \"swimming\""),
      (
        "[session]\nactivity = \"cycling\"\nactivities = [\"running\", \"cycling\"]\n",
        "starts with \"running\" but activity is \"cycling\""
      ),
    ] {
      #expect {
        try DaemonConfiguration.parse(text, file: "t.toml", environment: noSystemd)
      } throws: { error in
        (error as? ConfigurationError)?.problems.contains { $0.contains(problem) } == true
      }
    }
  }

  @Test func autoLapsByDistanceOrByTimeNotBoth() throws {
    #expect(try DaemonConfiguration.parse("", file: "t.toml", environment: noSystemd).engineSettings.autoLap == nil)
    let distance = try DaemonConfiguration.parse(
      "[session]\nauto_lap_distance = 5000\n", file: "t.toml", environment: noSystemd)
    #expect(distance.engineSettings.autoLap == .distance(metres: 5000))
    let time = try DaemonConfiguration.parse("[session]\nauto_lap_time = 600\n", file: "t.toml", environment: noSystemd)
    #expect(time.engineSettings.autoLap == .time(seconds: 600))
    for (text, problem) in [
      (
        "[session]\nauto_lap_distance = 5000\nauto_lap_time = 600\n",
        "t.toml: [session] auto_lap_time cannot go with auto_lap_distance: laps by distance or by time, not both"
      ),
      ("[session]\nauto_lap_distance = 5\n", "t.toml: [session] auto_lap_distance must be between"),
    ] {
      #expect {
        try DaemonConfiguration.parse(text, file: "t.toml", environment: noSystemd)
      } throws: { error in
        (error as? ConfigurationError)?.problems.contains { $0.hasPrefix(problem) } == true
      }
    }
  }

  @Test func averagePowerCountsTheZerosUnlessTold() throws {
    let defaults = try DaemonConfiguration.parse("", file: "t.toml", environment: noSystemd)
    #expect(defaults.engineSettings.powerAveraging == .withZeros)
    let without = try DaemonConfiguration.parse(
      "[metrics]\naverage_power = \"without_zeros\"\n", file: "t.toml", environment: noSystemd)
    #expect(without.engineSettings.powerAveraging == .withoutZeros)
    #expect {
      try DaemonConfiguration.parse("[metrics]\naverage_power = \"no_zeros\"\n", file: "t.toml", environment: noSystemd)
    } throws: { error in
      (error as? ConfigurationError)?.problems == [
        "t.toml: [metrics] average_power must be \"with_zeros\" (coasting counts, the default) or \"without_zeros\""
      ]
    }
  }

  @Test func theUsbDriveIsOffByDefaultAndHoldsOnlyWhatIsExported() throws {
    let defaults = try DaemonConfiguration.parse("", file: "t.toml", environment: noSystemd)
    #expect(!defaults.usbDrive.enabled && defaults.usbDrive.formats == [.fit])
    #expect(defaults.usbDriveImage == "/var/lib/workoutd/usb-drive.img")
    let on = try DaemonConfiguration.parse(
      "[usb_drive]\nenabled = true\nformats = [\"gpx\", \"fit\"]\n", file: "t.toml", environment: noSystemd)
    #expect(on.usbDrive.enabled && on.usbDrive.formats == [.gpx, .fit])
    for (text, problem) in [
      (
        "[usb_drive]\nenabled = true\nformats = [\"tcx\"]\n",
        "[usb_drive] formats has \"tcx\", which [export] formats does not write"
      ),
      ("[export]\nenabled = false\n[usb_drive]\nenabled = true\n", "[usb_drive] enabled needs [export] enabled"),
      ("[usb_drive]\nformats = []\n", "[usb_drive] formats is empty"),
      ("[usb_drive]\nenable = true\n", "enable"),
    ] {
      #expect {
        try DaemonConfiguration.parse(text, file: "t.toml", environment: noSystemd)
      } throws: { error in
        "\(error)".contains(problem)
      }
    }
  }

  @Test func devicesAreOffUnlessConfigured() throws {
    let configuration = try DaemonConfiguration.parse("", file: "t", environment: noSystemd)
    #expect(!configuration.buttons.enabled && !configuration.led.enabled && !configuration.barometer.enabled)
    let pi = try DaemonConfiguration.load(
      path: repositoryRoot + "/board/workoutd.toml", required: true, environment: noSystemd)
    #expect(pi.buttons.enabled && pi.led.enabled && pi.barometer.enabled)
    #expect(pi.buttons.chip.contains("pinctrl-bcm2711"))
  }

  @Test func deviceKeysAreRead() throws {
    let configuration = try DaemonConfiguration.parse(
      """
      [buttons]
      enabled = true
      source = "input"
      input_device = "gpio-keys"
      start = "KEY_PROG1"
      debounce_ms = 50
      long_press_seconds = 3
      [led]
      enabled = true
      chip = "workoutd-buttons"
      line = "LED"
      active_low = true
      [barometer]
      enabled = true
      bus = "SMBus stub driver"
      address = 0x77
      sea_level_pressure = 101800
      """, file: "t", environment: noSystemd)
    #expect(configuration.buttons.source == .input)
    #expect(configuration.buttons.start == "KEY_PROG1")
    #expect(configuration.buttons.debounce == 0.05)
    #expect(configuration.buttons.longPress == 3)
    #expect(configuration.led.chip == "workoutd-buttons" && configuration.led.activeLow)
    #expect(configuration.barometer.address == 0x77)
    #expect(configuration.engineSettings.seaLevelPressure == 101_800)
  }

  @Test func batteryKeysAreReadIntoTheEngineSettings() throws {
    let defaults = try DaemonConfiguration.parse("", file: "t", environment: noSystemd)
    #expect(defaults.battery.supply == .auto && defaults.battery.poll == 10)
    #expect(defaults.engineSettings.battery == BatterySettings())
    let configuration = try DaemonConfiguration.parse(
      """
      [battery]
      supply = "sbs-1-000b"
      low_percent = 20
      critical_percent = 8
      critical_minutes_left = 0
      countdown_seconds = 30
      power_off = false
      poll_seconds = 5
      """, file: "t", environment: noSystemd)
    #expect(configuration.battery.supply == .named("sbs-1-000b"))
    #expect(configuration.battery.poll == 5)
    let battery = configuration.engineSettings.battery
    #expect(battery.lowPercent == 20 && battery.criticalPercent == 8)
    #expect(battery.criticalMinutesLeft == nil, "0 minutes: the level alone decides")
    #expect(battery.countdown == 30 && !battery.powerOff)
    let none = try DaemonConfiguration.parse("[battery]\nsupply = \"none\"\n", file: "t", environment: noSystemd)
    #expect(none.battery.supply == nil)
    let board = try DaemonConfiguration.load(
      path: repositoryRoot + "/board/workoutd.toml", required: true, environment: noSystemd)
    #expect(board.battery == defaults.battery, "the commented file says the defaults")
  }

  @Test func batteryValuesAreChecked() {
    for (text, words) in [
      (
        "[battery]\ncritical_percent = 20\n",
        "[battery] critical_percent must be below low_percent (20 is not below 15)"
      ),
      ("[battery]\nlow_percent = 5\n", "[battery] critical_percent must be below low_percent (5 is not below 5)"),
      ("[battery]\nlow_percent = 120\n", "[battery] low_percent must be between 0 and 100 (got 120)"),
      ("[battery]\ncritical_percent = -1\n", "[battery] critical_percent must be between 0 and 100 (got -1)"),
      ("[battery]\nsupply = \"\"\n", "[battery] supply must be \"auto\", \"none\" or a name"),
      ("[battery]\nsupply = \"../BAT0\"\n", "[battery] supply must be \"auto\", \"none\" or a name"),
      ("[battery]\npoll_seconds = 0\n", "[battery] poll_seconds must be between 1 and 300 (got 0)"),
      ("[battery]\npower_off = \"yes\"\n", "[battery] power_off must be true or false"),
      ("[battery]\nlow = 10\n", "[battery] unknown key \"low\""),
    ] {
      expectRefused(text, saying: words)
    }
  }

  @Test func aHeartRateStrapIsNamedByItsAddress() throws {
    let none = try DaemonConfiguration.parse("", file: "t", environment: noSystemd)
    #expect(none.sensors.heartRate == nil)
    let polar = try DaemonConfiguration.parse(
      "[sensors]\nheart_rate = \"a0:9e:1a:12:34:56\"\n", file: "t", environment: noSystemd)
    #expect(polar.sensors.heartRate == BluetoothAddress(bytes: [0xA0, 0x9E, 0x1A, 0x12, 0x34, 0x56], kind: .public))
    // A random static address (two top bits set) is guessed; a suffix says otherwise.
    let tickr = try DaemonConfiguration.parse(
      "[sensors]\nheart_rate = \"E8:11:22:33:44:55\"\n", file: "t", environment: noSystemd)
    #expect(tickr.sensors.heartRate?.kind == .random)
    let stated = try DaemonConfiguration.parse(
      "[sensors]\nheart_rate = \"E8:11:22:33:44:55/public\"\n", file: "t", environment: noSystemd)
    #expect(stated.sensors.heartRate?.kind == .public)
    #expect(stated.sensors.heartRate?.description == "E8:11:22:33:44:55")
    for bad in ["A0:9E:1A:12:34", "A0:9E:1A:12:34:5G", "A0:9E:1A:12:34:56/other", "A09E1A123456"] {
      #expect(throws: ConfigurationError.self) {
        try DaemonConfiguration.parse("[sensors]\nheart_rate = \"\(bad)\"\n", file: "t", environment: noSystemd)
      }
    }
    do {
      _ = try DaemonConfiguration.parse("[sensors]\nheart_rate = \"nope\"\n", file: "w.toml", environment: noSystemd)
    } catch {
      #expect("\(error)".contains("heart_rate"))
      #expect("\(error)".contains("Bluetooth address"))
    }
  }

  @Test func aPowerMeterAndASpeedCadencePodBesideTheStrap() throws {
    let all = try DaemonConfiguration.parse(
      "[sensors]\nheart_rate = \"A0:9E:1A:12:34:56\"\npower = \"C1:00:00:00:00:01\"\nspeed_cadence = \"00:11:22:33:44:55/random\"\n",
      file: "t", environment: noSystemd)
    #expect(all.sensors.heartRate?.description == "A0:9E:1A:12:34:56")
    #expect(all.sensors.power == BluetoothAddress(bytes: [0xC1, 0, 0, 0, 0, 1], kind: .random))
    #expect(all.sensors.speedCadence?.kind == .random)
    do {
      _ = try DaemonConfiguration.parse(
        "[sensors]\nheart_rate = \"A0:9E:1A:12:34:56\"\npower = \"a0:9e:1a:12:34:56\"\n", file: "t",
        environment: noSystemd)
      Issue.record("one sensor in two roles was accepted")
    } catch {
      #expect("\(error)".contains("one sensor is named for two roles"))
    }
    do {
      _ = try DaemonConfiguration.parse("[sensors]\npower = \"meter\"\n", file: "t", environment: noSystemd)
      Issue.record("a bad power meter address was accepted")
    } catch {
      #expect("\(error)".contains("[sensors] power must be a Bluetooth address"))
    }
  }

  @Test func theWheelCircumferenceIsInMillimetresAsTyreTablesGiveIt() throws {
    #expect(try DaemonConfiguration.parse("", file: "t", environment: noSystemd).sensors.wheelCircumference == 2.105)
    let mountain = try DaemonConfiguration.parse(
      "[sensors]\nwheel_circumference_mm = 2326\n", file: "t", environment: noSystemd)
    #expect(mountain.sensors.wheelCircumference == 2.326)
    do {
      _ = try DaemonConfiguration.parse("[sensors]\nwheel_circumference_mm = 2.1\n", file: "t", environment: noSystemd)
      Issue.record("a circumference in metres where millimetres are asked was accepted")
    } catch {
      #expect("\(error)".contains("[sensors] wheel_circumference_mm must be between 100 and 4000 (got 2.1)"))
    }
  }

  @Test func theScanAdapterIsNamedLikeTheKernelNamesIt() throws {
    #expect(try DaemonConfiguration.parse("", file: "t", environment: noSystemd).sensors.adapter == nil)
    let second = try DaemonConfiguration.parse("[sensors]\nadapter = \"hci1\"\n", file: "t", environment: noSystemd)
    #expect(second.sensors.adapter == 1)
    for bad in ["hci", "hcix", "bluetooth0", "hci-1", "hci65535"] {
      #expect(throws: ConfigurationError.self, "\(bad)") {
        try DaemonConfiguration.parse("[sensors]\nadapter = \"\(bad)\"\n", file: "t", environment: noSystemd)
      }
    }
  }

  /// `[imu]`: off unless enabled; its incident settings reach the engine only when on; the
  /// root unit's condition leaves a sensor the service does not read off.
  @Test func theIMUIsOffUnlessEnabledAndItsIncidentSettingsReachTheEngine() throws {
    let none = try DaemonConfiguration.parse("", file: "t", environment: noSystemd)
    #expect(!none.imu.enabled && none.engineSettings.incident == nil)
    #expect(none.imu.leftOff(driver: "bmi160") == "[imu] is not enabled")
    let text = """
      [imu]
      enabled = true
      device = "bmi160"
      impact_g = 4
      tilt_degrees = 60
      still_seconds = 8
      countdown_seconds = 45
      auto_start = true
      """
    let on = try DaemonConfiguration.parse(text, file: "t", environment: noSystemd)
    let incident = try #require(on.engineSettings.incident)
    #expect(abs(incident.impact - 4 * MotionSample.gravity) < 1e-9)
    #expect(incident.tilt == 60 && incident.stillFor == 8 && incident.countdown == 45)
    #expect(on.engineSettings.autoStart == AutoStartSettings())
    #expect(none.engineSettings.autoStart == nil)
    #expect(on.imu.leftOff(driver: "bmi160") == nil)
    #expect(on.imu.leftOff(driver: "lsm6dso") == "[imu] device is \"bmi160\", not \"lsm6dso\"")
    let auto = try DaemonConfiguration.parse(
      "[imu]\nenabled = true\ndevice = \"auto\"\nincident = false\n", file: "t", environment: noSystemd)
    #expect(auto.imu.device == nil && auto.imu.leftOff(driver: nil) == nil)
    #expect(auto.engineSettings.incident == nil, "no alarm: incident = false")
    for (bad, words) in [
      ("[imu]\nimpact_g = 1\n", "[imu] impact_g must be between 2 and 16 (got 1)"),
      ("[imu]\ndevice = \"/dev/iio:device0\"\n", "[imu] device must be an IIO driver's name"),
      ("[imu]\nrate = 100\n", "[imu]"),
    ] {
      expectRefused(bad, saying: words)
    }
  }

  @Test func deviceValuesAreChecked() throws {
    #expect(throws: ConfigurationError.self) {
      try DaemonConfiguration.parse("[barometer]\naddress = 0x40\n", file: "t", environment: noSystemd)
    }
    // Said as they are written: an I²C address in hexadecimal, a port without Swift's ".0",
    // and a fraction where a whole number is meant refused, not cut short.
    for (text, words) in [
      ("[barometer]\naddress = 0x78\n", "[barometer] address must be between 0x76 and 0x77 (got 0x78)"),
      ("[barometer]\naddress = 118.5\n", "[barometer] address must be a whole number (got 118.5)"),
      ("[gps]\nport = 0\n", "[gps] port must be between 1 and 65535 (got 0)"),
      ("[gps]\nport = 2947.5\n", "[gps] port must be a whole number (got 2947.5)"),
    ] {
      expectRefused(text, saying: words)
    }
    #expect(try DaemonConfiguration.parse("[gps]\nport = 2948\n", file: "t", environment: noSystemd).gps.port == 2948)
    #expect(throws: ConfigurationError.self) {
      try DaemonConfiguration.parse("[barometer]\nsea_level_pressure = 1013\n", file: "t", environment: noSystemd)
    }
    #expect(throws: ConfigurationError.self) {
      try DaemonConfiguration.parse("[buttons]\nbias = \"strong\"\n", file: "t", environment: noSystemd)
    }
    #expect(throws: ConfigurationError.self) {
      try DaemonConfiguration.parse("[buttons]\npressed_level = \"up\"\n", file: "t", environment: noSystemd)
    }
  }

  @Test func autoPauseCanBeSwitchedOffAndIsOffIndoors() throws {
    let off = try DaemonConfiguration.parse("[auto_pause]\nenabled = false\n", file: "t", environment: noSystemd)
    #expect(off.engineSettings.autoPause == nil)
    let indoors = try DaemonConfiguration.parse(
      "[session]\nactivity = \"indoorCycling\"\n", file: "t", environment: noSystemd)
    #expect(indoors.engineSettings.autoPause == nil)
  }

  @Test func everyProblemIsReportedAtOnce() {
    do {
      _ = try DaemonConfiguration.parse(
        """
        colour = "red"
        [service]
        board = 3
        state_directory = "relative/path"
        [auto_pause]
        stop_speed = 2.0
        resume_speed = 1.0
        """, file: "t.toml", environment: noSystemd)
      Issue.record("expected an error")
    } catch {
      #expect(error.problems.count == 4, "\(error.problems)")
      #expect(error.description.contains("t.toml: unknown key \"colour\" outside any section"))
      #expect(error.description.contains("[service] board must be a string"))
      #expect(error.description.contains("[service] state_directory must be an absolute path"))
      #expect(error.description.contains("[auto_pause] resume_speed must not be below stop_speed"))
    }
  }

  @Test("an unknown key says which keys its section has, and where a key of another section belongs")
  func anUnknownKeySaysWhatToWriteInstead() {
    do {
      _ = try DaemonConfiguration.parse(
        "[metrics]\nftp = 250\n[gps]\nprt = 2947\n", file: "t.toml", environment: noSystemd)
      Issue.record("expected an error")
    } catch {
      #expect(
        error.problems == [
          "t.toml: [gps] unknown key \"prt\" (known here: enabled, fix_lost_after_seconds, host, "
            + "max_horizontal_error, port, set_system_clock)",
          "t.toml: [metrics] unknown key \"ftp\" (it belongs in [rider]; known here: average_power)",
        ], "\(error.problems)")
    }
  }
}

let repositoryRoot = #filePath.split(separator: "/").dropLast(3).reduce("") { $0 + "/" + $1 }

/// `text` is refused, the error saying `words`.
private func expectRefused(_ text: String, saying words: String, sourceLocation: SourceLocation = #_sourceLocation) {
  do {
    _ = try DaemonConfiguration.parse(text, file: "t", environment: [:])
    Issue.record("accepted: \(text)", sourceLocation: sourceLocation)
  } catch {
    #expect("\(error)".contains(words), "\(text): \(error)", sourceLocation: sourceLocation)
  }
}
