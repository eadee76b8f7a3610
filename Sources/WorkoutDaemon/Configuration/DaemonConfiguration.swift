import BoardLinux
import Foundation
import SensorProtocols
import TOMLKit
import WorkoutCore
import WorkoutExport

#if canImport(Glibc)
  import Glibc
#endif

/// Everything `workoutd` can be told, with a default for every key. Read from TOML
/// (`/etc/workoutd/workoutd.toml`, `ConfigurationFile.swift`; each section by its own reader in
/// `ConfigurationSections.swift`), then command-line flags override it.
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
    public var port = GPSDJSON.defaultPort
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
    public var bias = GPIOBias.pullUp
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

  /// [imu]: an accelerometer (with a gyroscope) through the kernel's IIO subsystem: the road's
  /// feel, steps, and the incident alarm.
  public var imu = IMU()

  public struct IMU: Sendable, Equatable {
    public var enabled = false
    /// The IIO device's driver name; nil ("auto"): the first with an accelerometer.
    public var device: String?
    /// Whether a fall while riding sounds the alarm.
    public var incident = true
    public var incidentSettings = IncidentSettings()
    /// A started session waits for the board to move instead of counting down.
    public var autoStart = false

    /// Why the service will not read the IIO device of driver `driver`, so that root leaves
    /// its buffer off (`workoutd-imu@.service`'s condition); nil when it will.
    public func leftOff(driver: String?) -> String? {
      guard enabled else { return "[imu] is not enabled" }
      guard let device, device != driver else { return nil }
      return "[imu] device is \"\(device)\", not \(driver.map { "\"\($0)\"" } ?? "this nameless device")"
    }
  }

  /// [battery]: the board's fuel gauge, and when a low battery warns and ends the ride.
  public var battery = Battery()

  public struct Battery: Sendable, Equatable {
    /// The power_supply to read; nil: "none", no gauge is read at all.
    public var supply: BatterySupply? = .auto
    /// Seconds between the gauge's readings.
    public var poll = 10.0
    public var settings = BatterySettings()
  }

  /// [sensors]: BLE sensors by address, ANT+ sensors by device number.
  public var sensors = Sensors()

  public struct Sensors: Sendable, Equatable {
    /// The roles given an ANT+ sensor ("ant:..."); their BLE addresses are nil.
    var ant: [SensorRole: ANTSensor] = [:]
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

    /// The sensor the file names for `role`.
    func choice(_ role: SensorRole) -> SensorChoice? {
      if let sensor = ant[role] { return .ant(sensor) }
      let address =
        switch role {
        case .heartRate: heartRate
        case .power: power
        case .speedCadence: speedCadence
        }
      return address.map(SensorChoice.ble)
    }
  }

  /// [ant]: the USB ANT stick the ANT+ sensors in `[sensors]` are received with.
  public var ant = ANT()

  public struct ANT: Sendable, Equatable {
    /// A file holding the network key (16 hexadecimal digits), readable only by the service's
    /// user: the ANT+ key is licensed to ANT+ adopters, so none ships with workoutd.
    public var networkKeyFile: String?
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

  /// [upload] and the platforms' sections: each finished ride sent by itself (see `Uploader`).
  public var upload = UploadSettings()

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
    settings.battery = battery.settings
    if imu.enabled && imu.incident { settings.incident = imu.incidentSettings }
    if imu.enabled && imu.autoStart { settings.autoStart = AutoStartSettings() }
    return settings
  }
}

/// A configuration that cannot be used: every problem found, each naming the file and key.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
  public var problems: [String]
  public var description: String { problems.joined(separator: "\n") }

  public init(problems: [String]) {
    self.problems = problems
  }
}

/// The Raspberry Pi's GPIO chip, by label: Pi Zero/1/2/3, Pi 4, Pi 5.
public let raspberryPiGPIOChip = "pinctrl-bcm2835|pinctrl-bcm2711|pinctrl-rp1"
/// The Pi's I2C bus 1 (pins 3 and 5), by adapter name: Pi Zero to 4, Pi 5.
public let raspberryPiI2CBus = "bcm2835 (i2c@7e804000)|Synopsys DesignWare I2C adapter"
