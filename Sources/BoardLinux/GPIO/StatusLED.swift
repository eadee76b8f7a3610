import CGPIOD
import LinuxSupport
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

public struct StatusLEDSettings: Sendable, Hashable {
  public var chip: String
  public var line: GPIOLineSpec
  /// The LED lights when the line is low (wired from 3.3 V through the LED to the pin).
  public var activeLow: Bool
  public var backoff: Backoff

  public init(
    chip: String, line: GPIOLineSpec, activeLow: Bool = false, backoff: Backoff = Backoff(initial: 1, maximum: 30)
  ) {
    self.chip = chip
    self.line = line
    self.activeLow = activeLow
    self.backoff = backoff
  }
}

/// The status LED on a GPIO output line: plays the engine's `IndicatorPattern` on its own
/// thread, changing the line only when the pattern says so, and dark when idle.
public final class StatusLED: DeviceSource, @unchecked Sendable {
  public let settings: StatusLEDSettings
  /// Patterns to show, and nil to wake the thread when stopping.
  private let patterns = InputQueue<IndicatorPattern?>()
  private let runner: DeviceRunner

  public init(settings: StatusLEDSettings) {
    self.settings = settings
    let patterns = patterns
    let player = LEDPlayer()
    runner = DeviceRunner(
      name: "status LED on GPIO chip \"\(settings.chip)\" \(settings.line)", device: .indicator,
      backoff: settings.backoff
    ) {
      { reporter, signal throws(DeviceProblem) in
        try player.drive(settings: settings, patterns: patterns, signal: signal, reporter: &reporter)
      }
    }
  }

  public var name: String { runner.name }

  /// Shows `pattern` from now on (thread-safe; returns at once).
  public func show(_ pattern: IndicatorPattern) {
    patterns.post(pattern)
  }

  public func start(sink: any InputSink) { runner.start(sink: sink) }

  public func stop() {
    patterns.post(nil)
    runner.stop()
  }
}

/// The pattern being played; lives on the LED's thread across reconnections.
final class LEDPlayer: @unchecked Sendable {
  private var pattern = IndicatorPattern.off
  private var patternStart = SystemClocks.monotonic()

  private func change(to next: IndicatorPattern) {
    guard next != pattern else { return }
    pattern = next
    patternStart = SystemClocks.monotonic()
  }

  /// Plays patterns until stopped (returns) or until the line fails (throws).
  func drive(
    settings: StatusLEDSettings, patterns: InputQueue<IndicatorPattern?>, signal: StopSignal,
    reporter: inout DeviceReporter
  ) throws(DeviceProblem) {
    // Patterns sent while the line was away: only the latest matters.
    while let queued = patterns.poll() {
      guard let queued else { return }
      change(to: queued)
    }
    let chip = try GPIOChip(settings.chip)
    let line = try chip.line(settings.line)
    let flags = settings.activeLow ? cgpiod_flag_active_low : 0
    guard gpiod_line_request_output_flags(line, gpioConsumer, flags, 0) == 0 else {
      throw DeviceProblem(
        condition: .failing,
        description: "cannot drive \(settings.line) of \(chip.name): \(String(cString: strerror(errno)))")
    }
    defer {
      gpiod_line_set_value(line, 0)
      gpiod_line_release(line)
    }
    reporter.available("\(settings.line) on \(chip.name) (\(chip.label))")
    var lit: Bool?
    while !signal.isStopRequested {
      let elapsed = SystemClocks.monotonic() - patternStart
      let wanted = pattern.isLit(after: elapsed)
      if wanted != lit {
        guard gpiod_line_set_value(line, wanted ? 1 : 0) == 0 else {
          throw DeviceProblem(
            condition: .absent, description: "setting the LED: \(String(cString: strerror(errno)))")
        }
        lit = wanted
      }
      let deadline = pattern.untilNextChange(after: elapsed).map { SystemClocks.monotonic() + $0 + 0.001 }
      if let next = patterns.next(until: deadline) {
        guard let next else { return }
        change(to: next)
      }
    }
  }
}
