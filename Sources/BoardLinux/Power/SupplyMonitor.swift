import LinuxSupport
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// The Raspberry Pi firmware's throttling flags (the mailbox's GET_THROTTLED, as `vcgencmd
/// get_throttled` prints them and the Raspberry Pi kernel's firmware driver gives them in
/// `get_throttled`, hexadecimal): bits 0–3 what holds now, bits 16–19 the same "has occurred
/// since boot".
public struct ThrottleFlags: OptionSet, Sendable, Hashable {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }

  /// The supply is below about 4.63 V: the SD card's writes and the USB devices are at risk.
  public static let underVoltage = ThrottleFlags(rawValue: 1 << 0)
  public static let frequencyCapped = ThrottleFlags(rawValue: 1 << 1)
  public static let throttled = ThrottleFlags(rawValue: 1 << 2)
  public static let softTemperatureLimit = ThrottleFlags(rawValue: 1 << 3)
  /// The "has occurred" bit of each of those.
  public static let occurredShift: UInt32 = 16

  /// "0x50005" or "50005", as the firmware driver and vcgencmd write them; nil for anything else.
  public init?(parsing text: String) {
    let digits = text.hasPrefix("0x") ? text.dropFirst(2) : Substring(text)
    guard !digits.isEmpty, let value = UInt32(digits, radix: 16) else { return nil }
    rawValue = value
  }

  private static let named: [(ThrottleFlags, String)] = [
    (.underVoltage, "under-voltage"), (.frequencyCapped, "ARM frequency capped"), (.throttled, "throttled"),
    (.softTemperatureLimit, "soft temperature limit"),
  ]

  /// Under-voltage now: the supply's fault.
  public var isFault: Bool { contains(.underVoltage) }

  /// What holds now and what has happened since boot, in words.
  public var detail: String {
    let now = Self.named.filter { contains($0.0) }.map(\.1)
    let occurred = Self.named.filter { contains(ThrottleFlags(rawValue: $0.0.rawValue << Self.occurredShift)) }
      .map(\.1)
    var text =
      isFault
      ? "under-voltage: the supply is below about 4.63 V"
        + (now.count > 1 ? "; " + now.dropFirst().joined(separator: ", ") : "")
      : (now.isEmpty ? "supply good" : "supply good; " + now.joined(separator: ", "))
    if !occurred.isEmpty { text += " (since boot: \(occurred.joined(separator: ", ")))" }
    return text
  }
}

/// Where the board says its supply is too weak.
public struct SupplyMonitorSettings: DeviceSettings, Hashable {
  /// The Raspberry Pi kernel's firmware attribute.
  public static let defaultFirmware = "/sys/devices/platform/soc/soc:firmware/get_throttled"
  public var firmware = defaultFirmware
  /// The hwmon class, where mainline's raspberrypi-hwmon ("rpi_volt") gives `in0_lcrit_alarm`.
  public var hwmon = "/sys/class/hwmon"
  public var interval = 10.0
  public var backoff = Backoff(initial: 5, maximum: 60)

  public init() {}
}

/// The Raspberry Pi's supply: under-voltage as the firmware reports it, the Raspberry Pi
/// kernel's `get_throttled` (with throttling and temperature limits), or mainline's
/// `rpi_volt` hwmon alarm. Under-voltage is the supply's fault (`failing`: status, the LED, an
/// event and a log line per change); the rest is its detail. A board that has neither is not a
/// Pi: nothing is said.
public typealias SupplyMonitor = BoardDevice<SupplyMonitorSettings>

extension BoardDevice where Settings == SupplyMonitorSettings {
  public convenience init(settings: SupplyMonitorSettings) {
    self.init(settings: settings, name: "supply monitor (Raspberry Pi firmware)", device: .powerSupply) {
      settings, signal, reporter throws(DeviceProblem) in
      var shown: String?
      repeat {
        if let flags = try SupplyMonitorSession.read(settings), flags.detail != shown {
          shown = flags.detail
          if flags.isFault {
            reporter.failing(flags.detail)
          } else {
            reporter.available(flags.detail)
            reporter.availableDetail(flags.detail)
          }
        }
      } while !signal.wait(seconds: settings.interval)
    }
  }
}

enum SupplyMonitorSession {
  /// The flags now; nil when the board has no firmware to ask (not a Pi).
  static func read(_ settings: SupplyMonitorSettings) throws(DeviceProblem) -> ThrottleFlags? {
    let slash = settings.firmware.lastIndex(of: "/") ?? settings.firmware.startIndex
    if let directory = try? SysfsDirectory(String(settings.firmware[..<slash])) {
      switch directory.attribute(String(settings.firmware[settings.firmware.index(after: slash)...])) {
      case .value(let text):
        guard let flags = ThrottleFlags(parsing: text) else {
          throw DeviceProblem(
            condition: .failing, description: "\(settings.firmware) reads \"\(text)\", not hexadecimal flags")
        }
        return flags
      case .unreadable(let why):
        throw DeviceProblem(condition: .failing, description: "cannot read \(settings.firmware): \(why)")
      case .absent:
        break
      }
    }
    for name in (try? directoryEntries(settings.hwmon)) ?? [] {
      guard let sensor = try? SysfsDirectory(settings.hwmon + "/" + name),
        sensor.attribute("name") == .value("rpi_volt")
      else { continue }
      switch sensor.attribute("in0_lcrit_alarm") {
      case .value("0"): return []
      case .value("1"): return .underVoltage
      case .value(let text):
        throw DeviceProblem(
          condition: .failing, description: "\(sensor.path)/in0_lcrit_alarm reads \"\(text)\", not 0 or 1")
      case .unreadable(let why):
        throw DeviceProblem(condition: .failing, description: "cannot read \(sensor.path)/in0_lcrit_alarm: \(why)")
      case .absent:
        continue
      }
    }
    return nil
  }
}
