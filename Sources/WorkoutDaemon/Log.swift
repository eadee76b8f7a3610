import Foundation
import Logging
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// The service logs through swift-log's `Logger` (the Swift server ecosystem's API, so a library
/// that logs joins the same stream), with `JournaldLogHandler` as its one handler.
extension Logger {
  /// The service's logger: lines on stderr at `minimum` and above.
  public static func service(
    minimum: LogLevel, environment: [String: String] = ProcessInfo.processInfo.environment
  ) -> Logger {
    Logger(label: "workoutd") { _ in JournaldLogHandler(minimum: Level(minimum), environment: environment) }
  }

  /// A line at one of the engine's levels (`EngineCommand.log`, `RuntimeAction.log`).
  public func callAsFunction(_ level: LogLevel, _ message: @autoclosure () -> String) {
    log(level: Level(level), "\(message())")
  }
}

extension Logger.Level {
  /// The engine's levels are syslog's ranks, which swift-log's levels name one to one.
  public init(_ level: LogLevel) {
    self =
      switch level {
      case .error: .error
      case .warning: .warning
      case .notice: .notice
      case .info: .info
      case .debug: .debug
      }
  }

  /// The syslog priority journald gives the line (sd-daemon(3)).
  public var syslogPriority: Int {
    switch self {
    case .trace, .debug: 7
    case .info: 6
    case .notice: 5
    case .warning: 4
    case .error: 3
    case .critical: 2
    }
  }
}

/// Log lines on stderr. Under systemd (journald on stderr, `$JOURNAL_STREAM` set) each line
/// starts with its syslog priority as `<N>`, which journald turns into the entry's priority
/// (sd-daemon(3)); elsewhere lines carry a UTC time and the level in words. A message's line
/// breaks become spaces (one entry per line), and metadata follows as `key=value`.
public struct JournaldLogHandler: LogHandler {
  public var logLevel: Logger.Level
  public var metadata: Logger.Metadata = [:]
  private let journald: Bool
  private let output: @Sendable (String) -> Void

  public init(
    minimum: Logger.Level, environment: [String: String] = ProcessInfo.processInfo.environment,
    output: @escaping @Sendable (String) -> Void = JournaldLogHandler.writeToStandardError
  ) {
    logLevel = minimum
    journald = environment["JOURNAL_STREAM"] != nil
    self.output = output
  }

  public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  public func log(event: LogEvent) {
    var text = event.message.description.replacingOccurrences(of: "\n", with: " ")
    let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
    for (key, value) in merged.sorted(by: { $0.key < $1.key }) { text += " \(key)=\(value)" }
    if journald {
      output("<\(event.level.syslogPriority)>\(text)\n")
    } else {
      output("\(Self.timestamp()) workoutd \(event.level): \(text)\n")
    }
  }

  /// One write(2) per line, so lines from different threads never interleave.
  public static let writeToStandardError: @Sendable (String) -> Void = { line in
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
