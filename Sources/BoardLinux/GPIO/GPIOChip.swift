import CGPIOD
import Foundation
import LinuxSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A GPIO line named in the configuration: by the name the board's device tree gives it
/// ("GPIO17" on a Raspberry Pi, "START" on the simulated board), or by its offset on the chip.
public enum GPIOLineSpec: Sendable, Hashable, CustomStringConvertible {
  case name(String)
  case offset(UInt32)

  /// "17" is an offset; anything else is a line name.
  public init(parsing text: String) {
    if let offset = UInt32(text) { self = .offset(offset) } else { self = .name(text) }
  }

  public var description: String {
    switch self {
    case .name(let name): "line \"\(name)\""
    case .offset(let offset): "line \(offset)"
    }
  }
}

/// The pull resistor asked for when a line is requested (libgpiod 1.6 bias flags; kernel 5.5+).
public enum GPIOBias: String, Sendable, Hashable, CaseIterable {
  case pullUp = "pull-up"
  case pullDown = "pull-down"
  case disabled
  /// Leave whatever the board's firmware set (config.txt `gpio=17=pu`, say).
  case asIs = "as-is"

  var flag: Int32 {
    switch self {
    case .pullUp: cgpiod_flag_bias_pull_up
    case .pullDown: cgpiod_flag_bias_pull_down
    case .disabled: cgpiod_flag_bias_disable
    case .asIs: 0
    }
  }
}

/// An open GPIO chip (libgpiod 1.6 `gpiod_chip`), closed when released; lines requested from it
/// are released with it.
/// `@unchecked Sendable`: a chip is opened, used and closed by one device thread; libgpiod
/// 1.6 objects are not thread-safe, and none is shared.
final class GPIOChip: @unchecked Sendable {
  let chip: OpaquePointer
  let label: String
  let name: String

  /// Opens the chip named by `description`: a label ("pinctrl-bcm2711"), a name ("gpiochip0"),
  /// a number or a /dev path (`gpiod_chip_open_lookup`); alternatives separated by "|" are tried
  /// in order ("pinctrl-bcm2835|pinctrl-bcm2711|pinctrl-rp1" finds any Raspberry Pi's).
  init(_ description: String) throws(DeviceProblem) {
    let candidates = description.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
    guard let chip = candidates.lazy.compactMap({ gpiod_chip_open_lookup($0) }).first else {
      throw DeviceProblem(
        condition: .absent, description: "no GPIO chip \"\(description)\"; chips: \(GPIOChip.available())")
    }
    self.chip = chip
    label = String(cString: gpiod_chip_label(chip))
    name = String(cString: gpiod_chip_name(chip))
  }

  deinit { gpiod_chip_close(chip) }

  func line(_ spec: GPIOLineSpec) throws(DeviceProblem) -> OpaquePointer {
    let line: OpaquePointer?
    switch spec {
    case .name(let name): line = gpiod_chip_find_line(chip, name)
    case .offset(let offset): line = gpiod_chip_get_line(chip, offset)
    }
    guard let line else {
      throw DeviceProblem(condition: .absent, description: "\(spec) not found on \(name) (\(label))")
    }
    return line
  }

  /// "gpiochip0 (pinctrl-bcm2711), …" for error messages.
  static func available() -> String {
    let chips = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []).filter {
      $0.hasPrefix("gpiochip")
    }.sorted()
    guard !chips.isEmpty else { return "none" }
    return chips.map { name in
      guard let chip = gpiod_chip_open("/dev/" + name) else { return name }
      defer { gpiod_chip_close(chip) }
      return "\(name) (\(String(cString: gpiod_chip_label(chip))))"
    }.joined(separator: ", ")
  }
}

/// The consumer name the kernel shows for our lines (`gpioinfo`).
let gpioConsumer = "workoutd"
