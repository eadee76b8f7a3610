import CLinuxShims
import Foundation
import LinuxSupport
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

public struct InputEventButtonSettings: DeviceSettings, Hashable {
  /// The input device: its name as /sys/class/input/event*/device/name gives it ("gpio-keys"),
  /// or a /dev/input/event* path.
  public var device: String
  /// Key codes (linux/input-event-codes.h) of each button.
  public var keys: [ButtonID: UInt16]
  public var configuration: ButtonConfiguration
  public var backoff = Backoff(initial: 1, maximum: 30)

  public init(device: String, keys: [ButtonID: UInt16], configuration: ButtonConfiguration) {
    self.device = device
    self.keys = keys
    self.configuration = configuration
  }

  /// A key given as a name (KEY_PROG1, BTN_0, ...) or a number.
  public static func keyCode(_ text: String) -> UInt16? {
    if let number = UInt16(text) { return number }
    let code = shim_input_key_code(text)
    return code >= 0 ? UInt16(code) : nil
  }
}

/// Buttons delivered as Linux input events: the `gpio-keys` overlay (the kernel debounces and
/// names the keys) read from /dev/input/event*. The same gesture rules as GPIO buttons apply
/// (long press for stop, chords and held-at-start ignored); a pressed key reads as `.high`.
public typealias InputEventButtons = BoardDevice<InputEventButtonSettings>

extension BoardDevice where Settings == InputEventButtonSettings {
  public convenience init(settings: InputEventButtonSettings) {
    self.init(
      settings: settings, name: "buttons on input device \"\(settings.device)\"", device: .buttons,
      session: InputEventSession.self)
  }

  /// Finds an input device by its name or its driver's ("gpio-keys" finds the Raspberry Pi's
  /// gpio-key overlay whatever its node is called), or takes a /dev/input path as it is.
  public static func findDevice(_ description: String, sysfs: String = "/sys/class/input") -> String? {
    if description.hasPrefix("/dev/") {
      return FileManager.default.fileExists(atPath: description) ? description : nil
    }
    let entries = ((try? FileManager.default.contentsOfDirectory(atPath: sysfs)) ?? []).filter {
      $0.hasPrefix("event")
    }
    for entry in entries.sorted() {
      let name = (try? String(contentsOfFile: "\(sysfs)/\(entry)/device/name", encoding: .utf8)) ?? ""
      let driver =
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(sysfs)/\(entry)/device/device/driver"))
        .map { ($0 as NSString).lastPathComponent }
      if name.trimmingCharacters(in: .whitespacesAndNewlines) == description || driver == description {
        return "/dev/input/\(entry)"
      }
    }
    return nil
  }
}

struct InputEventSession: DeviceSession {
  let settings: InputEventButtonSettings
  let signal: StopSignal

  func run(_ reporter: inout DeviceReporter) throws(DeviceProblem) {
    guard let path = InputEventButtons.findDevice(settings.device) else {
      throw DeviceProblem(condition: .absent, description: "no input device \"\(settings.device)\"")
    }
    let device: FileDescriptor
    do {
      device = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK)
    } catch {
      throw DeviceProblem(condition: .absent, description: "cannot open \(path): \(error.reason)")
    }
    defer { try? device.close() }
    let fd = device.rawValue
    guard shim_input_use_monotonic_clock(fd) == 0 else {
      throw DeviceProblem(condition: .failing, description: "\(path) will not stamp events with CLOCK_MONOTONIC")
    }
    var levels: [ButtonID: LineLevel] = [:]
    for (button, code) in settings.keys {
      levels[button] = shim_input_key_is_down(fd, code) == 1 ? .high : .low
    }
    var decoder = ButtonDecoder(configuration: settings.configuration, levels: levels, at: SystemClocks.monotonic())
    reporter.available(
      "\(settings.keys.sorted { $0.key < $1.key }.map { "\($0.key.rawValue)=key \($0.value)" }.joined(separator: ", ")) on \(path)"
    )
    let buttons = Dictionary(uniqueKeysWithValues: settings.keys.map { ($0.value, $0.key) })
    var pollers = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
    while true {
      // Sleep until a key event, the decoder's next deadline (a long press), or a stop.
      do {
        if try signal.poll(&pollers, until: decoder.nextDeadline) { return }
      } catch {
        throw DeviceProblem(condition: .absent, description: "waiting for \(path): \(error)")
      }
      let poller = pollers[0]
      if poller.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
        throw DeviceProblem(condition: .absent, description: "\(path) went away")
      }
      var gestures: [ButtonEvent] = []
      var type: UInt16 = 0
      var code: UInt16 = 0
      var value: Int32 = 0
      var seconds = 0.0
      while true {
        let got = shim_input_read(fd, &type, &code, &value, &seconds)
        if got == 0 { break }
        if got < 0 {
          throw DeviceProblem(condition: .absent, description: "reading \(path): \(String(cString: strerror(errno)))")
        }
        // EV_KEY (1); value 1 press, 0 release, 2 autorepeat (ignored).
        guard type == 1, value != 2, let button = buttons[code] else { continue }
        gestures += decoder.edge(button, to: value == 1 ? .high : .low, at: seconds)
      }
      gestures += decoder.tick(at: SystemClocks.monotonic())
      for gesture in gestures { reporter.sink.post(.button(gesture, .inputEvent)) }
    }
  }
}
