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

/// The pull resistor asked for when a line is requested (kernel 5.5+).
public enum GPIOBias: String, Sendable, Hashable, CaseIterable {
  case pullUp = "pull-up"
  case pullDown = "pull-down"
  case disabled
  /// Leave whatever the board's firmware set (config.txt `gpio=17=pu`, say).
  case asIs = "as-is"

  var shimBias: wgpio_bias {
    switch self {
    case .pullUp: WGPIO_BIAS_PULL_UP
    case .pullDown: WGPIO_BIAS_PULL_DOWN
    case .disabled: WGPIO_BIAS_DISABLED
    case .asIs: WGPIO_BIAS_AS_IS
    }
  }
}

/// An open GPIO chip (through CGPIOD: libgpiod 1.6 or 2.x), closed when released.
/// `@unchecked Sendable`: a chip is opened, used and closed by one device thread; libgpiod
/// objects are not thread-safe, and none is shared.
final class GPIOChip: @unchecked Sendable {
  let chip: OpaquePointer
  let label: String
  let name: String

  /// "libgpiod 2.2.1 (v2 API)", for the log.
  static var library: String { "libgpiod \(String(cString: wgpio_library_version())) (v\(wgpio_api_major()) API)" }

  /// Opens the chip named by `description`: a label ("pinctrl-bcm2711"), a name ("gpiochip0"),
  /// a number or a /dev path (as v1's `gpiod_chip_open_lookup`); alternatives separated by "|" are tried
  /// in order ("pinctrl-bcm2835|pinctrl-bcm2711|pinctrl-rp1" finds any Raspberry Pi's).
  init(_ description: String) throws(DeviceProblem) {
    let candidates = description.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
    guard let chip = candidates.lazy.compactMap({ wgpio_chip_open($0) }).first else {
      throw DeviceProblem(
        condition: .absent, description: "no GPIO chip \"\(description)\"; chips: \(GPIOChip.available())")
    }
    self.chip = chip
    label = String(cString: wgpio_chip_label(chip))
    name = String(cString: wgpio_chip_name(chip))
  }

  deinit { wgpio_chip_close(chip) }

  /// The offset of the line `spec` names on this chip.
  func offset(_ spec: GPIOLineSpec) throws(DeviceProblem) -> UInt32 {
    let offset: Int32 =
      switch spec {
      case .name(let name): wgpio_chip_find_line(chip, name)
      case .offset(let offset): offset < wgpio_chip_num_lines(chip) ? Int32(offset) : -1
      }
    guard offset >= 0 else {
      throw DeviceProblem(condition: .absent, description: "\(spec) not found on \(name) (\(label))")
    }
    return UInt32(offset)
  }

  /// "gpiochip0 (pinctrl-bcm2711), …" for error messages.
  static func available() -> String {
    let chips = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []).filter {
      $0.hasPrefix("gpiochip")
    }.sorted()
    guard !chips.isEmpty else { return "none" }
    return chips.map { name in
      guard let chip = wgpio_chip_open("/dev/" + name) else { return name }
      defer { wgpio_chip_close(chip) }
      return "\(name) (\(String(cString: wgpio_chip_label(chip))))"
    }.joined(separator: ", ")
  }
}

/// The consumer name the kernel shows for our lines (`gpioinfo`).
let gpioConsumer = "workoutd"

/// The C libraries the real board's devices are built on, for the start-up log: "libgpiod 2.2.1
/// (v2 API)". (gpsd is spoken to in its JSON protocol; its release is logged on connecting.)
public enum LinuxBoardLibraries {
  public static var description: String {
    GPIOChip.library
  }
}
