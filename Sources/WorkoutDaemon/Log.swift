import Foundation
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// Log lines on stderr. Under systemd (journald on stderr, $JOURNAL_STREAM set) each line starts
/// with its syslog priority as `<N>`, which journald turns into the entry's priority
/// (sd-daemon(3)); elsewhere lines carry a UTC time and the level in words.
public final class Log: Sendable {
  public let minimum: LogLevel
  private let journald: Bool

  public init(minimum: LogLevel, environment: [String: String] = ProcessInfo.processInfo.environment) {
    self.minimum = minimum
    journald = environment["JOURNAL_STREAM"] != nil
  }

  public func callAsFunction(_ level: LogLevel, _ message: @autoclosure () -> String) {
    guard level.isShown(atMinimum: minimum) else { return }
    let text = message().replacingOccurrences(of: "\n", with: " ")
    let line: String
    if journald {
      line = "<\(level.rawValue)>\(text)\n"
    } else {
      line = "\(Self.timestamp()) workoutd \(level.name): \(text)\n"
    }
    // One write(2) per line, so lines from different threads never interleave.
    var bytes = Array(line.utf8)
    _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
  }

  private static func timestamp() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var parts = tm()
    var seconds = now.tv_sec
    gmtime_r(&seconds, &parts)
    return String(
      format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
      parts.tm_hour, parts.tm_min, parts.tm_sec, now.tv_nsec / 1_000_000)
  }
}
