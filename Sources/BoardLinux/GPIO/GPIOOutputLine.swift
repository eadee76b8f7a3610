import CGPIOD
import LinuxSupport
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

public struct GPIOOutputSettings: Sendable, Hashable {
  public var chip: String
  public var line: GPIOLineSpec
  /// The LED lights (the buzzer sounds) when the line is low.
  public var activeLow = false
  public var backoff = Backoff(initial: 1, maximum: 30)

  public init(chip: String, line: GPIOLineSpec) {
    self.chip = chip
    self.line = line
  }
}

/// What an output line plays: alternating on/off durations in seconds, starting with on
/// (empty: off; one element: on), repeated (the LED) or once (a buzzer's chirp).
public struct OutputPattern: Sendable, Hashable {
  public var timing: [Double]
  public var repeats: Bool

  public init(timing: [Double], repeats: Bool) {
    self.timing = timing
    self.repeats = repeats
  }

  public static let off = OutputPattern(timing: [], repeats: true)

  public init(_ indicator: IndicatorPattern) {
    self.init(timing: indicator.timing, repeats: true)
  }

  public init(_ chirp: ChirpPattern) {
    self.init(timing: chirp.timing, repeats: false)
  }

  /// Whether the line is on `elapsed` seconds in, and how long until that changes (nil: never).
  func level(after elapsed: Double) -> (on: Bool, change: Double?) {
    guard !timing.isEmpty else { return (false, nil) }
    if timing.count == 1 && repeats { return (true, nil) }
    let period = timing.reduce(0, +)
    var t = elapsed
    if repeats {
      t = elapsed.truncatingRemainder(dividingBy: period)
      if t < 0 { t += period }
    } else if t >= period {
      return (false, nil)
    }
    for (index, duration) in timing.enumerated() {
      if t < duration { return (index % 2 == 0, duration - t) }
      t -= duration
    }
    return (false, nil)
  }
}

/// A GPIO output line playing patterns on its own thread, changing the line only when the
/// pattern says so: the status LED (the engine's `IndicatorPattern`, repeated, dark when idle)
/// or the optional buzzer (a `ChirpPattern` once per transition).
public final class GPIOOutputLine: DeviceSource, Sendable {
  public let settings: GPIOOutputSettings
  /// Patterns to play, and nil to wake the thread when stopping.
  private let patterns = InputQueue<OutputPattern?>()
  private let runner: DeviceRunner

  public init(settings: GPIOOutputSettings, device: DeviceKind, role: String) {
    self.settings = settings
    let patterns = patterns
    let player = OutputPlayer()
    runner = DeviceRunner(
      name: "\(role) on GPIO chip \"\(settings.chip)\" \(settings.line)", device: device, backoff: settings.backoff
    ) {
      { reporter, signal throws(DeviceProblem) in
        try player.drive(settings: settings, patterns: patterns, signal: signal, reporter: &reporter)
      }
    }
  }

  public var name: String { runner.name }

  /// Plays `pattern` from now on (thread-safe; returns at once).
  public func play(_ pattern: OutputPattern) {
    patterns.post(pattern)
  }

  public func start(sink: any InputSink) { runner.start(sink: sink) }

  public func stop() {
    patterns.post(nil)
    runner.stop()
  }
}

/// The pattern being played; lives on the line's thread across reconnections.
/// `@unchecked Sendable`: handed to the line's thread when it starts and used by that thread
/// alone from then on (the closure that makes its sessions must be `@Sendable`).
final class OutputPlayer: @unchecked Sendable {
  private var pattern = OutputPattern.off
  private var patternStart = SystemClocks.monotonic()

  private func change(to next: OutputPattern) {
    // A repeating pattern goes on where it is if it is asked for again; a chirp plays anew.
    guard next != pattern || !next.repeats else { return }
    pattern = next
    patternStart = SystemClocks.monotonic()
  }

  /// Plays patterns until stopped (returns) or until the line fails (throws).
  func drive(
    settings: GPIOOutputSettings, patterns: InputQueue<OutputPattern?>, signal: StopSignal,
    reporter: inout DeviceReporter
  ) throws(DeviceProblem) {
    // Patterns sent while the line was away: only the latest matters.
    while let queued = patterns.poll() {
      guard let queued else { return }
      change(to: queued)
    }
    let chip = try GPIOChip(settings.chip)
    let offset = try chip.offset(settings.line)
    guard let line = wgpio_request_output(chip.chip, offset, settings.activeLow, gpioConsumer) else {
      throw DeviceProblem(
        condition: .failing,
        description: "cannot drive \(settings.line) of \(chip.name): \(String(cString: strerror(errno)))")
    }
    defer {
      wgpio_line_set_value(line, false)
      wgpio_line_release(line)
    }
    reporter.available("\(settings.line) on \(chip.name) (\(chip.label))")
    var lit: Bool?
    while !signal.isStopRequested {
      let (wanted, change) = pattern.level(after: SystemClocks.monotonic() - patternStart)
      if wanted != lit {
        guard wgpio_line_set_value(line, wanted) == 0 else {
          throw DeviceProblem(condition: .absent, description: "setting the line: \(String(cString: strerror(errno)))")
        }
        lit = wanted
      }
      let deadline = change.map { SystemClocks.monotonic() + $0 + 0.001 }
      if let next = patterns.next(until: deadline) {
        guard let next else { return }
        self.change(to: next)
      }
    }
  }
}
