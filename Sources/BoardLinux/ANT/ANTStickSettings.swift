import LinuxSupport
import SensorProtocols
import WorkoutCore

/// An ANT+ device profile the service receives, with what its channel is set to (ANT+ Heart
/// Rate, Bicycle Power and Bike Speed and Cadence device profiles, "Channel Configuration").
public enum ANTProfile: String, Sendable, Hashable, CaseIterable, Codable {
  case heartRate = "heart_rate"
  case bicyclePower = "power"
  case speedCadence = "speed_cadence"
  case speed = "speed"
  case cadence = "cadence"

  /// The device type a channel searches for (bits 0–6 of the channel ID's device type) and
  /// its period, 1/32768 s, as each profile gives them.
  private var channel: (deviceType: UInt8, period: UInt16) {
    switch self {
    case .heartRate: (ANTHeartRatePage.deviceType, ANTHeartRatePage.channelPeriod)
    case .bicyclePower: (ANTBicyclePowerPage.deviceType, ANTBicyclePowerPage.channelPeriod)
    case .speedCadence: (ANTBikeSensorType.speedAndCadence.rawValue, ANTBikeSensorType.speedAndCadence.channelPeriod)
    case .speed: (ANTBikeSensorType.speed.rawValue, ANTBikeSensorType.speed.channelPeriod)
    case .cadence: (ANTBikeSensorType.cadence.rawValue, ANTBikeSensorType.cadence.channelPeriod)
    }
  }

  public var deviceType: UInt8 { channel.deviceType }
  public var channelPeriod: UInt16 { channel.period }

  /// The device it is reported as: the same as a BLE sensor in that role, so the engine sees
  /// one kind of sensor whichever radio it uses.
  public var device: DeviceKind {
    switch self {
    case .heartRate: .heartRateStrap
    case .bicyclePower: .powerMeter
    case .speedCadence, .speed, .cadence: .speedCadenceSensor
    }
  }

  public init?(deviceType: UInt8) {
    guard let profile = Self.allCases.first(where: { $0.deviceType == deviceType & 0x7F }) else { return nil }
    self = profile
  }
}

/// One ANT+ sensor the stick receives: its profile and, once paired, its device number and
/// transmission type. Zeros are wildcards: the channel pairs with the first sensor of the
/// profile it finds, and the pairing found is reported so that it is kept.
public struct ANTSensor: Sendable, Hashable, Codable, CustomStringConvertible {
  public var profile: ANTProfile
  public var deviceNumber: UInt16
  public var transmissionType: UInt8

  public init(profile: ANTProfile, deviceNumber: UInt16 = 0, transmissionType: UInt8 = 0) {
    self.profile = profile
    self.deviceNumber = deviceNumber
    self.transmissionType = transmissionType
  }

  public var isWildcard: Bool { deviceNumber == 0 }

  public var channelID: ANTChannelID {
    ANTChannelID(deviceNumber: deviceNumber, deviceType: profile.deviceType, transmissionType: transmissionType)
  }

  public var description: String {
    isWildcard ? "ANT+ \(profile.rawValue) (any)" : "ANT+ \(profile.rawValue) \(deviceNumber)"
  }
}

/// What the ANT stick device is made from.
public struct ANTStickSettings: DeviceSettings, Hashable {
  /// USB vendor and product IDs of the sticks looked for: Dynastream's ANTUSB2 (0fcf:1008) and
  /// ANTUSB-m (0fcf:1009).
  public static let knownSticks: [(vendor: UInt16, product: UInt16)] = [(0x0FCF, 0x1008), (0x0FCF, 0x1009)]

  /// The network key the rider supplied (the ANT+ key is licensed to ANT+ adopters; none is
  /// built in).
  public var networkKey: ANTNetworkKey
  /// One channel each, in this order (a stick has 8).
  public var sensors: [ANTSensor]
  /// Metres a wheel revolution covers.
  public var wheelCircumference = StrapReadings.defaultWheelCircumference
  /// A channel whose sensor sends nothing for this long is reported lost (the stick goes back
  /// to searching by itself: ANT's "RX fail go to search").
  public var silenceLimit = 15.0
  /// Seconds a channel searches before its sensor is reported absent and the search starts
  /// again (Search Timeout, 2.5 s units, at most 637.5 s; ANT+ profiles suggest 30 s).
  public var searchTimeout = 30.0
  public var backoff = Backoff(initial: 1, maximum: 30)

  public init(networkKey: ANTNetworkKey, sensors: [ANTSensor]) {
    self.networkKey = networkKey
    self.sensors = sensors
  }
}

/// The byte pipe to an ANT stick: USB bulk endpoints through usbfs on the board, something else
/// in tests. Messages may arrive split or several to a read (`ANTFrameReader` joins them).
public protocol ANTTransport: AnyObject {
  /// Bytes the stick sent: waits until some arrive, `deadline` (monotonic seconds; then []) or
  /// a stop (then nil).
  func receive(until deadline: Double?, signal: StopSignal) throws(SystemError) -> [UInt8]?
  func send(_ bytes: [UInt8]) throws(SystemError)
}
