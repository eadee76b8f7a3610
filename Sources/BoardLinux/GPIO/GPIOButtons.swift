import CGPIOD
import LinuxSupport
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// Where the buttons are and how they are wired.
public struct GPIOButtonSettings: DeviceSettings, Hashable {
  /// The chip: label, name, number or /dev path.
  public var chip: String
  public var lines: [ButtonID: GPIOLineSpec]
  public var bias = GPIOBias.pullUp
  /// Debounce, long press and the pressed level.
  public var configuration = ButtonConfiguration.standard
  public var backoff = Backoff(initial: 1, maximum: 30)

  public init(chip: String, lines: [ButtonID: GPIOLineSpec]) {
    self.chip = chip
    self.lines = lines
  }
}

/// The buttons on GPIO lines, read with libgpiod 1.6 line events (both edges, with the
/// kernel's timestamps) and turned into gestures by `ButtonDecoder` (software debounce: 1.6 has
/// no kernel debounce; short and long presses; chatter, chords and buttons held at start-up
/// never make a request). A missing chip or line is posted as the buttons' condition and
/// retried with a backoff; the control socket still works meanwhile.
public typealias GPIOButtons = BoardDevice<GPIOButtonSettings>

extension BoardDevice where Settings == GPIOButtonSettings {
  public convenience init(settings: GPIOButtonSettings) {
    self.init(
      settings: settings, name: "buttons on GPIO chip \"\(settings.chip)\"", device: .buttons,
      session: ButtonSession.self)
  }
}

struct ButtonSession: DeviceSession {
  let settings: GPIOButtonSettings
  let signal: StopSignal

  /// Requests the lines and turns their edges into gestures until stopped (returns) or the chip
  /// goes away (throws).
  func run(_ reporter: inout DeviceReporter) throws(DeviceProblem) {
    let chip = try GPIOChip(settings.chip)
    var lines: [(ButtonID, OpaquePointer)] = []
    defer { for (_, line) in lines { wgpio_line_release(line) } }
    for (button, spec) in settings.lines.sorted(by: { $0.key < $1.key }) {
      let offset = try chip.offset(spec)
      guard let line = wgpio_request_input(chip.chip, offset, settings.bias.shimBias, gpioConsumer) else {
        throw DeviceProblem(
          condition: .failing,
          description:
            "cannot watch \(spec) of \(chip.name) for \(button.rawValue): \(String(cString: strerror(errno)))")
      }
      lines.append((button, line))
    }

    // The levels now: a button held during start-up is ignored until it is released.
    var levels: [ButtonID: LineLevel] = [:]
    for (button, line) in lines {
      levels[button] = wgpio_line_get_value(line) == 1 ? .high : .low
    }
    var decoder = ButtonDecoder(configuration: settings.configuration, levels: levels, at: SystemClocks.monotonic())
    let held = lines.filter { decoder.isPressed($0.0) }.map(\.0.rawValue)
    reporter.available(
      "\(lines.map { "\($0.0.rawValue)=\(settings.lines[$0.0]!)" }.joined(separator: ", ")) on \(chip.name) (\(chip.label))"
        + (held.isEmpty ? "" : "; \(held.joined(separator: ", ")) held down: ignored until released"))

    var pollers = lines.map { pollfd(fd: wgpio_line_fd($0.1), events: Int16(POLLIN), revents: 0) }
    while true {
      // Sleep until an edge, the decoder's next deadline (a long press), or a stop.
      do {
        if try signal.poll(&pollers, until: decoder.nextDeadline) { return }
      } catch {
        throw DeviceProblem(condition: .absent, description: "waiting for button edges: \(error)")
      }
      var gestures: [ButtonEvent] = []
      for (index, poller) in pollers.enumerated() where poller.revents != 0 {
        let (button, line) = lines[index]
        if poller.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
          throw DeviceProblem(condition: .absent, description: "\(chip.name) went away")
        }
        var stamp: UInt64 = 0
        let edge = wgpio_line_read_event(line, &stamp)
        guard edge >= 0 else {
          throw DeviceProblem(
            condition: .absent, description: "reading \(button.rawValue) events: \(String(cString: strerror(errno)))")
        }
        gestures += decoder.edge(button, to: edge == 1 ? .high : .low, at: monotonicTime(ofNanoseconds: stamp))
      }
      for index in pollers.indices { pollers[index].revents = 0 }
      gestures += decoder.tick(at: SystemClocks.monotonic())
      for gesture in gestures { reporter.sink.post(.button(gesture, .gpio)) }
    }
  }

  /// The kernel stamps v1 line events with CLOCK_MONOTONIC since Linux 5.7 and with
  /// CLOCK_REALTIME before (v2 asks for CLOCK_MONOTONIC): take whichever clock the stamp is
  /// close to.
  private func monotonicTime(ofNanoseconds stamp: UInt64) -> Double {
    let seconds = Double(stamp) / 1e9
    let monotonic = SystemClocks.monotonic()
    let wall = SystemClocks.wall()
    return abs(wall - seconds) < abs(monotonic - seconds) ? seconds - (wall - monotonic) : seconds
  }
}
