/// A position fix, as a GPS source reports it after decoding (gpsd's TPV, or the replay).
///
/// Unknown values are nil, never NaN: decoders turn gpsd's NaN "unknown" into nil.
public struct GPSFix: Sendable, Hashable, Codable {
  public enum Dimension: Int, Sendable, Hashable, Codable {
    /// gpsd `MODE_2D`: latitude and longitude only; any altitude is not to be used.
    case twoD = 2
    /// gpsd `MODE_3D`: altitude too.
    case threeD = 3
  }

  public var dimension: Dimension
  /// UTC seconds since 1970 from the receiver, when it gave a time with the fix.
  public var time: Double?
  /// Degrees, WGS84.
  public var latitude: Double
  public var longitude: Double
  /// Metres above mean sea level; nil for 2D fixes.
  public var altitude: Double?
  /// Speed over ground, m/s (Doppler on most receivers).
  public var speed: Double?
  /// Course over ground, degrees from true north.
  public var track: Double?
  /// Estimated horizontal and vertical position error, metres (gpsd `eph`/`epv`, ~95 %).
  public var horizontalError: Double?
  public var verticalError: Double?

  public init(
    dimension: Dimension, time: Double? = nil, latitude: Double, longitude: Double,
    altitude: Double? = nil, speed: Double? = nil, track: Double? = nil,
    horizontalError: Double? = nil, verticalError: Double? = nil
  ) {
    self.dimension = dimension
    self.time = time
    self.latitude = latitude
    self.longitude = longitude
    self.altitude = dimension == .threeD ? altitude : nil
    self.speed = speed
    self.track = track
    self.horizontalError = horizontalError
    self.verticalError = verticalError
  }

  public var position: GeoPoint { GeoPoint(latitude: latitude, longitude: longitude) }
}

/// One reading from a sensor, stamped by the engine when it arrives.
public enum SensorReading: Sendable, Hashable {
  case gps(GPSFix)
  /// The receiver reports that it has no fix (gpsd mode 1 or 0).
  case gpsNoFix
  /// The receiver reports a fix that is not good enough to use (one per epoch, while it lasts):
  /// no position for the ride, and a condition the rider is told about if it lasts.
  case gpsRejected(FixRejection)
  case heartRate(bpm: Int)
  /// The RR intervals (beat-to-beat times) a heart-rate strap sent in one notification, in
  /// 1/1024 s, oldest first (Heart Rate Service 1.0, "RR-Interval"): each is kept, not a mean.
  case rrIntervals([UInt16])
  /// Crank cadence, revolutions per minute.
  case cadence(rpm: Double)
  /// Speed from a wheel sensor (CSC or a hub power meter), m/s, and the metres the wheel
  /// covered since its previous revolution event (0 when it has stopped).
  case wheelSpeed(metersPerSecond: Double, distance: Double)
  case power(watts: Int)
  case temperature(celsius: Double)
  /// A barometer reading: pressure in Pa, the sensor's own temperature, °C, and relative
  /// humidity, %RH, from a BME280 (nil from a BMP280, which has no humidity sensor).
  case barometer(pressure: Double, temperature: Double?, humidity: Double? = nil)
  /// What the board's battery gauge says (the kernel's power_supply class).
  case battery(BatteryReading)
  /// What the inertial sensor felt over one second: the road's vibration and peak, and the
  /// step cadence while steps come.
  case motion(MotionSecond)
}

/// One reading of a battery's fuel gauge through the kernel's power_supply class
/// (Documentation/ABI/testing/sysfs-class-power): each value nil where the driver gives none.
public struct BatteryReading: Sendable, Hashable, Codable {
  /// The class's `status`.
  public enum Status: String, Sendable, Hashable, Codable {
    case charging, discharging, notCharging, full, unknown
  }

  /// The power_supply's name (`BAT0`, `sbs-1-000b`), for status and logs.
  public var supply: String
  /// `capacity`: the charge left, %, 0 to 100.
  public var level: Double?
  /// `voltage_now`, volts.
  public var voltage: Double?
  /// `current_now`, amperes: negative while discharging, positive while charging (the ABI's
  /// convention; a driver that reports the other sign is corrected by `status`).
  public var current: Double?
  public var status: Status
  /// `time_to_empty_now` (or `_avg`), seconds, when the gauge estimates it.
  public var timeToEmpty: Double?
  /// Whether an external supply (a `Mains` or `USB` power_supply) is online; nil when the board
  /// has none to ask.
  public var externalPower: Bool?

  public init(
    supply: String, level: Double? = nil, voltage: Double? = nil, current: Double? = nil,
    status: Status = .unknown, timeToEmpty: Double? = nil, externalPower: Bool? = nil
  ) {
    self.supply = supply
    self.level = level
    self.voltage = voltage
    self.current = current
    self.status = status
    self.timeToEmpty = timeToEmpty
    self.externalPower = externalPower
  }

  /// Charging, or held full on a charger: a low-battery countdown is cancelled.
  public var onCharger: Bool { status == .charging || status == .full || externalPower == true }
}

/// The devices the service knows about, for status and events.
public enum DeviceKind: String, Sendable, Hashable, Codable, CaseIterable {
  /// The GPS service: gpsd, reached over its socket.
  case gps
  /// The receiver behind gpsd: gpsd can be up with no receiver open.
  case gpsReceiver
  case buttons
  case indicator
  case barometer
  case heartRateStrap
  /// A BLE cycling power meter (pedals, crank, hub): power, and crank cadence where it sends it.
  case powerMeter
  /// A BLE speed/cadence pod (Cycling Speed and Cadence service).
  case speedCadenceSensor
  case storage
  /// The service's own exports of ended sessions into the state directory's `exports/`.
  case exports
  /// A USB stick the exports are being (or were last) copied onto (`workoutd-usb@.service`):
  /// a copy that failed is a fault until a plug that finishes it.
  case usbStick
  /// The board as a USB drive (`[usb_drive]`): its image of the exports, and whether the
  /// drive holds the newest one.
  case usbDrive
  case simulation
  /// The battery's fuel gauge (a power_supply of type Battery).
  case battery
  /// The board's supply: under-voltage and throttling (the Raspberry Pi firmware's flags) are
  /// its faults.
  case powerSupply
  /// A USB ANT stick (Dynastream's ANTUSB2 or ANTUSB-m): the radio the ANT+ sensors come
  /// through; its sensors are reported as their own devices.
  case antStick
  /// The uploader (`[upload]`): failing when it cannot send at all (its secrets unreadable, a
  /// platform refusing the key); the network being down is not a fault, only a wait.
  case uploads
  /// The inertial sensor (`[imu]`): an accelerometer, with a gyroscope, through the kernel's
  /// IIO subsystem.
  case imu
}

extension DeviceKind {
  /// Hashes the case, not its name. The standard library's default for a type with a raw
  /// value hashes the raw value (here SipHash over the String's bytes), and the engine looks
  /// devices up in its dictionaries several times a recorded second.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(ordinal)
  }

  /// The case's place in the declaration: distinct for every case (a test holds it).
  var ordinal: UInt8 {
    switch self {
    case .gps: 0
    case .gpsReceiver: 1
    case .buttons: 2
    case .indicator: 3
    case .barometer: 4
    case .heartRateStrap: 5
    case .powerMeter: 6
    case .speedCadenceSensor: 7
    case .storage: 8
    case .exports: 9
    case .usbStick: 10
    case .usbDrive: 11
    case .simulation: 12
    case .battery: 13
    case .powerSupply: 14
    case .antStick: 15
    case .uploads: 16
    case .imu: 17
    }
  }

  /// The ride's sensors, over BLE or ANT+ alike: their comings and goings are
  /// `sensorConnected` and `sensorDisconnected` events.
  public var isRideSensor: Bool { [.heartRateStrap, .powerMeter, .speedCadenceSensor].contains(self) }
}

/// A change in a device's condition, reported by its source.
public struct DeviceStatus: Sendable, Hashable, Codable {
  public enum Condition: String, Sendable, Hashable, Codable {
    /// Configured, but not there (no GPIO chip, no I2C bus, gpsd not reachable).
    case absent
    /// Present and working.
    case available
    /// Was working and went away (strap out of range, gpsd died).
    case lost
    /// An error that the device's source is retrying.
    case failing
  }

  public var device: DeviceKind
  public var condition: Condition
  public var detail: String
  /// True on an `available` status that ends a fault on the same connection: a sensor that
  /// stayed connected while it was failing in part (its wheel or crank pairs refused), so its
  /// event says "available again", not "connected". Optional, so that a status from a build
  /// before it (status JSON) still reads; nil reads as a new connection.
  public var sameConnection: Bool?

  public init(device: DeviceKind, condition: Condition, detail: String, sameConnection: Bool? = nil) {
    self.device = device
    self.condition = condition
    self.detail = detail
    self.sameConnection = sameConnection
  }
}
