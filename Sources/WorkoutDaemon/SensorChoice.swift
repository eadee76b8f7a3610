import BoardLinux
import SensorProtocols
import WorkoutCore

/// What a sensor is to the service: one sensor in each role, over BLE or ANT+.
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

  /// The ANT+ profiles a sensor in this role may speak, the usual one first: speed and cadence
  /// come as one sensor (121) or as a speed-only (123) or cadence-only (122) one.
  var antProfiles: [ANTProfile] {
    switch self {
    case .heartRate: [.heartRate]
    case .power: [.bicyclePower]
    case .speedCadence: [.speedCadence, .speed, .cadence]
    }
  }

  init(_ profile: ANTProfile) {
    self = Self.allCases.first { $0.antProfiles.contains(profile) }!
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

/// A sensor chosen for a role: a BLE sensor by its address, or an ANT+ sensor the stick
/// receives.
enum SensorChoice: Sendable, Hashable, CustomStringConvertible {
  case ble(BluetoothAddress)
  case ant(ANTSensor)

  var ant: ANTSensor? {
    if case .ant(let sensor) = self { sensor } else { nil }
  }

  var ble: BluetoothAddress? {
    if case .ble(let address) = self { address } else { nil }
  }

  /// "A0:9E:1A:12:34:56", or an ANT+ sensor as `ANTSensor.text` writes it.
  var description: String {
    switch self {
    case .ble(let address): address.description
    case .ant(let sensor): sensor.text
    }
  }

  /// "public" or "random" for BLE, "ant+" for ANT+.
  var addressType: String {
    switch self {
    case .ble(let address): address.kind.rawValue
    case .ant: "ant+"
    }
  }

  /// The same device: BLE by address (whatever kind was given), ANT+ by profile and device
  /// number (a wildcard is no device yet).
  func isSameSensor(as other: SensorChoice) -> Bool {
    switch (self, other) {
    case (.ble(let a), .ble(let b)): a.bytes == b.bytes
    case (.ant(let a), .ant(let b)): !a.isWildcard && a.profile == b.profile && a.deviceNumber == b.deviceNumber
    default: false
    }
  }
}

/// The text of an ANT+ sensor in `[sensors]` and `workoutctl sensors`: "ant:" then the device
/// number ("any" for the first one found), with "/" and its transmission type when it must
/// match too; a profile between them ("ant:speed:17") for a speed-only or cadence-only sensor,
/// or to say what a sensor is without `--role`.
extension ANTSensor {
  static let syntax =
    "\"ant:any\", \"ant:DEVICE_NUMBER\" (1-65535, optionally \"/TRANSMISSION_TYPE\"), or with a profile: \"ant:speed:17\""

  /// What `text` says, and the profile it named (nil: none named, the role's usual one is
  /// taken); nil when it is not an ANT+ sensor's text, or names a profile `role` does not take.
  init?(text: String, role: SensorRole?) {
    let parts = text.lowercased().split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    guard parts.count == 2 || parts.count == 3, parts[0] == "ant" else { return nil }
    let profile: ANTProfile
    if parts.count == 3 {
      guard let named = ANTProfile(rawValue: parts[1]), role?.antProfiles.contains(named) ?? true else { return nil }
      profile = named
    } else {
      guard let role else { return nil }
      profile = role.antProfiles[0]
    }
    let device = parts[parts.count - 1].split(separator: "/", omittingEmptySubsequences: false)
    if device.count == 1 && device[0] == "any" {
      self.init(profile: profile)
      return
    }
    guard let number = UInt16(device[0]), number > 0 else { return nil }
    var transmissionType: UInt8 = 0
    if device.count == 2 {
      guard let type = UInt8(device[1]) else { return nil }
      transmissionType = type
    } else if device.count > 2 {
      return nil
    }
    self.init(profile: profile, deviceNumber: number, transmissionType: transmissionType)
  }

  /// Whether `text` names its profile (then no role need be given with it).
  static func namesProfile(_ text: String) -> Bool {
    text.split(separator: ":", omittingEmptySubsequences: false).count == 3
  }

  /// Read back by `init(text:role:)` in its role: the profile is written when it is not the
  /// role's usual one.
  var text: String {
    let usual = SensorRole(profile).antProfiles[0] == profile
    return usual ? "ant:\(numberText)" : textWithProfile
  }

  /// With its profile always, as `sensors scan` lists it: `sensors add` needs no role with it.
  var textWithProfile: String { "ant:\(profile.rawValue):\(numberText)" }

  /// "any", "4242" or "4242/5".
  private var numberText: String {
    isWildcard ? "any" : transmissionType == 0 ? "\(deviceNumber)" : "\(deviceNumber)/\(transmissionType)"
  }
}
