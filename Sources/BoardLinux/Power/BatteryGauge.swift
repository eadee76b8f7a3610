import LinuxSupport
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// Where the battery's fuel gauge is and how often to read it.
public struct BatteryGaugeSettings: DeviceSettings, Hashable {
  public static let defaultRoot = "/sys/class/power_supply"
  /// `[battery] supply`: found, or named.
  public var supply = BatterySupply.auto
  /// The power_supply class directory (a test's tree instead of sysfs).
  public var root = defaultRoot
  /// Seconds between readings: the engine keeps what it needs (a level a minute with the ride).
  public var interval = 10.0
  public var backoff = Backoff(initial: 5, maximum: 60)

  public init() {}
}

/// The battery through the kernel's power_supply class, whatever its gauge's driver
/// (sbs-battery, bq27xxx, max17040, a UPS HAT's cw2015): every `interval` the supplies are
/// listed, the battery chosen (`PowerSupplyClass.choose`) and read, and its reading posted. A
/// board without a battery says so once ("no battery information": the gauge works, there is
/// nothing to gauge) and keeps looking, in case a power bank with a gauge is plugged in; a named
/// supply that is missing, a battery that goes away or values that make no sense are the
/// battery's condition, retried with a doubling backoff.
public typealias BatteryGauge = BoardDevice<BatteryGaugeSettings>

extension BoardDevice where Settings == BatteryGaugeSettings {
  public convenience init(settings: BatteryGaugeSettings) {
    let named: String =
      switch settings.supply {
      case .auto: "the first battery"
      case .named(let name): "\"\(name)\""
      }
    self.init(
      settings: settings, name: "battery gauge: \(named) in \(settings.root)", device: .battery,
      session: BatteryGaugeSession.self)
  }
}

/// The power_supply class directory: each supply's attributes, read afresh (a USB power bank's
/// supply comes and goes with its cable).
public struct PowerSupplyReader: Sendable {
  public let root: String

  public init(root: String = BatteryGaugeSettings.defaultRoot) { self.root = root }

  /// Every supply, with the attributes that identify it; no class directory: none.
  public func supplies() throws(PowerSupplyProblem) -> [PowerSupplyAttributes] {
    let names: [String]
    do {
      names = try directoryEntries(root)
    } catch {
      if error.errno == ENOENT { return [] }
      throw PowerSupplyProblem(condition: .failing, description: "cannot list \(root): \(error.reason)")
    }
    // A supply that goes between the listing and its reading is simply not there this time.
    return names.compactMap { try? read($0, PowerSupplyClass.identity) }
  }

  /// `attributes` of the supply `name`; a supply that is no longer there is `lost`.
  public func read(_ name: String, _ attributes: [String]) throws(PowerSupplyProblem) -> PowerSupplyAttributes {
    let directory: SysfsDirectory
    do {
      directory = try SysfsDirectory(root + "/" + name)
    } catch {
      throw PowerSupplyProblem(
        condition: error.errno == ENOENT ? .lost : .failing,
        description: error.errno == ENOENT ? "the power supply \(name) went away" : "cannot open \(error)")
    }
    let (values, unreadable) = directory.attributes(attributes)
    return PowerSupplyAttributes(name: name, values: values, unreadable: unreadable)
  }

  /// The battery's reading now, or nil when there is none to read (`auto`, no battery).
  public func reading(_ supply: BatterySupply) throws(PowerSupplyProblem) -> BatteryReading? {
    let supplies = try supplies()
    guard let battery = try PowerSupplyClass.choose(supply, among: supplies) else { return nil }
    let full = try read(battery.name, PowerSupplyClass.identity + PowerSupplyClass.batteryAttributes)
    // Read again, it may have gone out of its slot since the listing.
    _ = try PowerSupplyClass.choose(.named(battery.name), among: [full])
    return try PowerSupplyClass.reading(full, among: supplies)
  }
}

/// Reads until stopped (returns) or until the battery cannot be read (throws).
struct BatteryGaugeSession: DeviceSession {
  let settings: BatteryGaugeSettings
  let signal: StopSignal

  func run(_ reporter: inout DeviceReporter) throws(DeviceProblem) {
    let reader = PowerSupplyReader(root: settings.root)
    var shown: String?
    repeat {
      let reading: BatteryReading?
      do {
        reading = try reader.reading(settings.supply)
      } catch {
        throw DeviceProblem(condition: error.condition, description: error.description)
      }
      // The condition says which battery (or none): posted when it changes, logged when it
      // becomes available.
      let detail = reading.map { "battery \($0.supply)" } ?? PowerSupplyClass.noBattery
      if detail != shown {
        shown = detail
        reporter.available(detail)
        reporter.availableDetail(detail)
      }
      if let reading { reporter.sink.post(.reading(.battery(reading))) }
    } while !signal.wait(seconds: settings.interval)
  }
}
