import Logging
import Synchronization
import Testing
import WorkoutCore
import WorkoutDaemon

/// What the handler wrote, line by line.
final class CapturedLines: Sendable {
  private let storage = Mutex<[String]>([])
  var lines: [String] { storage.withLock { $0 } }
  func append(_ line: String) { storage.withLock { $0.append(line) } }
}

struct LogTests {
  func logger(minimum: LogLevel, journald: Bool) -> (Logger, CapturedLines) {
    let captured = CapturedLines()
    let environment = journald ? ["JOURNAL_STREAM": "8:12345"] : [:]
    let logger = Logger(label: "workoutd") { _ in
      JournaldLogHandler(minimum: Logger.Level(minimum), environment: environment) { captured.append($0) }
    }
    return (logger, captured)
  }

  @Test func underJournaldEachLineStartsWithItsSyslogPriority() {
    let (log, captured) = logger(minimum: .info, journald: true)
    log(.error, "cannot write to /var/lib/workoutd/workoutd.db")
    log(.notice, "ready")
    log(.info, "starting gpsd")
    log(.debug, "not shown at info")
    #expect(
      captured.lines == ["<3>cannot write to /var/lib/workoutd/workoutd.db\n", "<5>ready\n", "<6>starting gpsd\n"])
  }

  @Test func aMessageIsOneLineAndMetadataFollowsIt() {
    var (log, captured) = logger(minimum: .debug, journald: true)
    log[metadataKey: "session"] = "12"
    log.warning("two\nlines", metadata: ["device": "gps"])
    #expect(captured.lines == ["<4>two lines device=gps session=12\n"])
  }

  @Test func elsewhereLinesCarryATimeAndTheLevelInWords() throws {
    let (log, captured) = logger(minimum: .notice, journald: false)
    log(.warning, "no fix")
    let line = try #require(captured.lines.first)
    #expect(line.hasSuffix(" workoutd warning: no fix\n"))
    #expect(line.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z workoutd warning: no fix\n/) != nil)
  }
}
