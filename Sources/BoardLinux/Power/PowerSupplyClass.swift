import WorkoutCore

/// One directory of the kernel's power_supply class (`/sys/class/power_supply/NAME`), as read:
/// the attributes the gauge reader asks for, each trimmed of its newline, and those that exist
/// but could not be read (a gauge that does not answer on its bus gives EIO or ENODATA).
public struct PowerSupplyAttributes: Sendable, Hashable {
  public var name: String
  public var values: [String: String]
  /// Attribute → why it could not be read.
  public var unreadable: [String: String]

  public init(name: String, values: [String: String], unreadable: [String: String] = [:]) {
    self.name = name
    self.values = values
    self.unreadable = unreadable
  }

  /// `type`: Battery, Mains, USB, UPS, Wireless, ... (Documentation/ABI/testing/sysfs-class-power).
  public var type: String? { values["type"] }
  /// `scope`: "Device" for a peripheral's own battery (a BLE mouse's, a game pad's); absent or
  /// "System" for the board's.
  public var isPeripheral: Bool { values["scope"] == "Device" }
  /// `present` = 0: a gauge whose battery is out of its slot.
  public var isAbsent: Bool { values["present"] == "0" }
  var isSystemBattery: Bool { type == "Battery" && !isPeripheral }
  /// A supply from outside: the mains, a USB port or a wireless charger.
  var isExternal: Bool {
    guard let type, !isPeripheral else { return false }
    return type == "Mains" || type.hasPrefix("USB") || type == "Wireless" || type == "BrickID"
  }
}

/// Which supply `[battery] supply` names.
public enum BatterySupply: Sendable, Hashable {
  /// The first Battery of the system (not a peripheral's), by name.
  case auto
  case named(String)
}

/// Why a power_supply cannot give a reading, as its device condition says.
public struct PowerSupplyProblem: Error, Sendable, Hashable, CustomStringConvertible {
  public var condition: DeviceStatus.Condition
  public var description: String

  public init(condition: DeviceStatus.Condition, description: String) {
    self.condition = condition
    self.description = description
  }
}

/// The pure half of the battery gauge: which supply is the battery, and what its attributes say.
public enum PowerSupplyClass {
  /// The attributes read of every supply (to choose, and for external power).
  public static let identity = ["type", "scope", "online", "present"]
  /// The attributes read of the chosen battery besides.
  public static let batteryAttributes = [
    "capacity", "voltage_now", "current_now", "status", "time_to_empty_now", "time_to_empty_avg",
  ]
  /// What the device says when there is nothing to read: not a fault, the board has no gauge.
  public static let noBattery = "no battery information"

  /// The battery to read among `supplies`, or nil for none (`auto` on a board without one).
  public static func choose(
    _ supply: BatterySupply, among supplies: [PowerSupplyAttributes]
  ) throws(PowerSupplyProblem) -> PowerSupplyAttributes? {
    switch supply {
    case .auto:
      return supplies.sorted { $0.name < $1.name }.first { $0.isSystemBattery && !$0.isAbsent }
    case .named(let name):
      guard let found = supplies.first(where: { $0.name == name }) else {
        let there = supplies.map(\.name).sorted()
        throw PowerSupplyProblem(
          condition: .absent,
          description:
            "no power supply \"\(name)\" (there: \(there.isEmpty ? "none" : there.joined(separator: ", ")))")
      }
      guard found.type == "Battery" else {
        throw PowerSupplyProblem(
          condition: .failing,
          description: "the power supply \"\(name)\" is of type \(found.type ?? "unknown"), not a Battery")
      }
      guard !found.isAbsent else {
        throw PowerSupplyProblem(condition: .absent, description: "\(name) says no battery is present")
      }
      return found
    }
  }

  /// The reading `battery`'s attributes give, with whether an external supply among `supplies`
  /// is online. A value that is there but not a number, or a level outside 0–100 %, is a
  /// `failing` problem naming the attribute; a level that cannot be read at all too.
  public static func reading(
    _ battery: PowerSupplyAttributes, among supplies: [PowerSupplyAttributes]
  ) throws(PowerSupplyProblem) -> BatteryReading {
    func failing(_ text: String) -> PowerSupplyProblem {
      PowerSupplyProblem(condition: .failing, description: "\(battery.name): \(text)")
    }
    func number(_ attribute: String) throws(PowerSupplyProblem) -> Int64? {
      guard let text = battery.values[attribute] else { return nil }
      guard let value = Int64(text) else { throw failing("\(attribute) reads \"\(text)\", not a whole number") }
      return value
    }
    if let why = battery.unreadable["capacity"] { throw failing("cannot read capacity: \(why)") }
    var reading = BatteryReading(supply: battery.name)
    if let level = try number("capacity") {
      guard (0...100).contains(level) else { throw failing("capacity reads \(level) %, outside 0 to 100") }
      reading.level = Double(level)
    }
    reading.status = status(battery.values["status"])
    reading.voltage = try number("voltage_now").map { Double($0) / 1e6 }
    if let microamperes = try number("current_now") {
      // The ABI: negative while discharging, positive while charging. Drivers older than that
      // convention (bq27xxx before 5.13, cw2015's estimate) give a magnitude: the status says
      // which way it flows.
      var amperes = Double(microamperes) / 1e6
      if reading.status == .discharging, amperes > 0 { amperes = -amperes }
      if reading.status == .charging, amperes < 0 { amperes = -amperes }
      reading.current = amperes
    }
    // time_to_empty_now where the gauge has it, else its average (sbs-battery gives only that).
    // 0 is no estimate (cw2015 when it has none; a battery that is empty says so by its level),
    // and SBS's 65535 minutes is "not discharging".
    var seconds = try number("time_to_empty_now")
    if seconds == nil { seconds = try number("time_to_empty_avg") }
    if let seconds, seconds > 0, seconds < 65535 * 60 { reading.timeToEmpty = Double(seconds) }
    let external = supplies.filter(\.isExternal)
    if !external.isEmpty { reading.externalPower = external.contains { $0.values["online"] == "1" } }
    return reading
  }

  /// `status` as the class writes it; a word this build does not know is `unknown`.
  static func status(_ text: String?) -> BatteryReading.Status {
    switch text {
    case "Charging": .charging
    case "Discharging": .discharging
    case "Not charging": .notCharging
    case "Full": .full
    default: .unknown
    }
  }
}
