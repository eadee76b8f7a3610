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
  public let name: String
  private let patterns = InputQueue<IndicatorPattern?>()
  private var thread: DeviceThread?

  public init(settings: StatusLEDSettings) {
    self.settings = settings
    name = "status LED on GPIO chip \"\(settings.chip)\" \(settings.line)"
  }

  /// Shows `pattern` from now on (thread-safe; returns at once).
  public func show(_ pattern: IndicatorPattern) {
    patterns.post(pattern)
  }

  public func start(sink: any InputSink) {
    let settings = settings
    let patterns = patterns
    do {
      thread = try DeviceThread.start(name: "status-led") {
        var loop = LEDLoop(settings: settings, sink: sink, patterns: patterns)
        loop.run()
      }
    } catch {
      sink.post(.device(DeviceStatus(device: .indicator, condition: .failing, detail: "cannot start: \(error)")))
    }
  }

  public func stop() {
    patterns.post(nil)
    thread?.join()
    thread = nil
  }
}

struct LEDLoop {
  let settings: StatusLEDSettings
  let sink: any InputSink
  let patterns: InputQueue<IndicatorPattern?>
  private var backoff: Backoff
  private var pattern = IndicatorPattern.off
  private var patternStart = SystemClocks.monotonic()
  private var lastPosted: DeviceStatus.Condition?

  init(settings: StatusLEDSettings, sink: any InputSink, patterns: InputQueue<IndicatorPattern?>) {
    self.settings = settings
    self.sink = sink
    self.patterns = patterns
    backoff = settings.backoff
  }

  mutating func run() {
    while true {
      do {
        try drive()
        return
      } catch {
        post(error.absent ? .absent : .failing, "\(error); retrying")
        // Keep taking patterns while waiting, so the right one shows once the line is back.
        let until = SystemClocks.monotonic() + backoff.next()
        while let next = patterns.next(until: until) {
          guard let next else { return }
          change(to: next)
        }
      }
    }
  }

  private mutating func change(to next: IndicatorPattern) {
    if next != pattern {
      pattern = next
      patternStart = SystemClocks.monotonic()
    }
  }

  /// Plays patterns until told to stop (returns) or the line fails (throws).
  private mutating func drive() throws(GPIOProblem) {
    let chip = try GPIOChip(settings.chip)
    let line = try chip.line(settings.line)
    let flags = settings.activeLow ? cgpiod_flag_active_low : 0
    guard gpiod_line_request_output_flags(line, gpioConsumer, flags, 0) == 0 else {
      throw GPIOProblem(
        absent: false, description: "cannot drive \(settings.line) of \(chip.name): \(String(cString: strerror(errno)))"
      )
    }
    defer {
      gpiod_line_set_value(line, 0)
      gpiod_line_release(line)
    }
    post(.available, "\(settings.line) on \(chip.name) (\(chip.label))")
    backoff.reset()
    var lit: Bool?
    while true {
      let elapsed = SystemClocks.monotonic() - patternStart
      let wanted = pattern.isLit(after: elapsed)
      if wanted != lit {
        guard gpiod_line_set_value(line, wanted ? 1 : 0) == 0 else {
          throw GPIOProblem(absent: true, description: "setting the LED: \(String(cString: strerror(errno)))")
        }
        lit = wanted
      }
      let wait = pattern.untilNextChange(after: elapsed)
      let deadline = wait.map { SystemClocks.monotonic() + $0 + 0.001 }
      if let next = patterns.next(until: deadline) {
        guard let next else { return }
        change(to: next)
      }
    }
  }

  private mutating func post(_ condition: DeviceStatus.Condition, _ detail: String) {
    guard condition != lastPosted else { return }
    lastPosted = condition
    sink.post(.device(DeviceStatus(device: .indicator, condition: condition, detail: detail)))
  }
}
