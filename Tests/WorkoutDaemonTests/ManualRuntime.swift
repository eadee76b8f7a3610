import Foundation
import LinuxSupport
import Logging
import Synchronization
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport
import WorkoutUpload

@testable import WorkoutDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// The board's clock and the host's on one manual timeline (the board `boardOffset` ahead of the
/// host): the loop's wait moves time to the deadline it asks for at once, until `end`, where
/// `run()` returns. Nothing moves time but the loop's waits and `stall`.
final class ManualRuntimeHost: RuntimeHost, BoardClock, @unchecked Sendable {
  let epoch = "manual"
  let wallTrusted: Bool
  private(set) var host: Double
  let boardOffset: Double
  let wallOffset: Double
  var end: Double
  /// The deadlines the loop waited for (host time; nil: none), in order.
  private(set) var waits: [Double?] = []
  /// Waits that asked for a time already past, in a row: a loop that never settles.
  private var spins = 0

  init(host: Double = 50, board: Moment = Moment(monotonic: 1000, wall: 1_795_000_000), wallTrusted: Bool = true) {
    self.host = host
    self.wallTrusted = wallTrusted
    end = host
    boardOffset = board.monotonic - host
    wallOffset = board.wall - board.monotonic
  }

  func now() -> Moment {
    let monotonic = host + boardOffset
    return Moment(monotonic: monotonic, wall: monotonic + wallOffset)
  }

  func hostDeadline(forBoardTime monotonic: Double) -> Double { monotonic - boardOffset }

  func monotonic() -> Double { host }

  func wait(for queue: InputQueue<RuntimeMessage>, until deadline: Double?) -> Bool {
    if queue.peek() != nil { return true }
    waits.append(deadline)
    let target = deadline ?? .infinity
    guard target <= end else {
      host = max(host, end)
      return false
    }
    if target <= host {
      spins += 1
      if spins > 10_000 {
        Issue.record("the loop keeps asking to wait until a time that has passed (\(target))")
        return false
      }
    } else {
      spins = 0
    }
    host = max(host, target)
    return true
  }

  /// Time passes with the loop not running (a stalled process, a busy host).
  func stall(for seconds: Double) {
    host += seconds
    end = host
  }
}

/// The real `ServiceRuntime` (its loop, the real store on SQLite, the systemd notifier on a real
/// datagram socket) on a manual clock, with what its outputs did recorded: minutes of a ride in
/// milliseconds, with no sleep. A test runs the loop with `run(for:)` and reads the store.
final class ManualRuntime {
  /// What the runtime's outputs were asked to do, in order (on the loop's thread, which is the
  /// test's: `run(for:)` returns when the loop does).
  final class Outputs {
    var indications: [IndicatorPattern] = []
    var endedSessions: [Int64] = []
    var chirps: [ChirpPattern] = []
    /// How many times the board was told to power off (`boardPowersOff`).
    var powerOffs = 0
  }

  let directory: String
  let clock: ManualRuntimeHost
  let queue = InputQueue<RuntimeMessage>()
  let store: WorkoutStore
  let runtime: ServiceRuntime
  let lines = CollectedLines()
  /// systemd's notify socket, when asked for (the notifier's sends block once ten wait).
  let notifications: NotifySocketListener?
  let outputs = Outputs()
  private let ownsDirectory: Bool

  /// `directory`: where the database goes (made and removed here when nil); `notify`: a notify
  /// socket, and `watchdogUSec` systemd's WATCHDOG_USEC; `devices`: devices the loop reads;
  /// `gpsClock`: stamp with GPS time once the engine trusts it, as the real board does;
  /// `exportsInto`: export ended sessions as GPX into this directory (relative to `directory`),
  /// on the loop's thread as each ends (the service's exporter does it on a thread of its own);
  /// `boardPowersOff`: the board has a power-off (counted in `outputs.powerOffs`);
  /// `uploadTargets`: the platforms the configuration names (status counts their jobs).
  init(
    directory: String? = nil, engine: SessionEngine = SessionEngine(settings: EngineSettings()),
    clock: ManualRuntimeHost = ManualRuntimeHost(), settings: (inout RuntimeSettings) -> Void = { _ in },
    notify: Bool = false, watchdogUSec: Int? = nil, devices: [any EngineReadDevice] = [], gpsClock: Bool = false,
    exportsInto exportDirectory: String? = nil, boardPowersOff: Bool = false, uploadTargets: [UploadTarget] = []
  ) throws {
    self.clock = clock
    ownsDirectory = directory == nil
    self.directory = directory ?? NSTemporaryDirectory() + "workoutd-manual-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
    let path = self.directory + "/workoutd.db"
    (store, _) = try WorkoutStore.open(at: path, wallNow: clock.now().wall)
    notifications = notify ? try NotifySocketListener(path: self.directory + "/notify") : nil
    var environment: [String: String] = [:]
    if let notifications { environment["NOTIFY_SOCKET"] = notifications.path }
    if let watchdogUSec { environment["WATCHDOG_USEC"] = String(watchdogUSec) }
    let lines = self.lines
    let log = Logger(label: "test") { _ in
      JournaldLogHandler(minimum: .debug, environment: [:]) { line in lines.append(line) }
    }
    var runtimeSettings = RuntimeSettings(epoch: clock.epoch, databasePath: path)
    runtimeSettings.readsDevices = !devices.isEmpty
    settings(&runtimeSettings)
    let recorded = outputs
    var runtimeOutputs = RuntimeOutputs(uploadTargets: uploadTargets)
    runtimeOutputs.engineReadDevices = devices
    runtimeOutputs.board.indicator = { recorded.indications.append($0) }
    runtimeOutputs.sessionEnded = { recorded.endedSessions.append($0) }
    runtimeOutputs.board.chirp = { recorded.chirps.append($0) }
    if boardPowersOff { runtimeOutputs.board.powerOff = { recorded.powerOffs += 1 } }
    if let exportDirectory {
      let exporter = SessionExporter(
        databasePath: path, ledger: store, formats: [.gpx], directory: self.directory + "/" + exportDirectory,
        sink: QueueSink(queue: queue, clock: clock), log: log)
      nonisolated(unsafe) var reader: WorkoutStore?
      runtimeOutputs.sessionEnded = {
        recorded.endedSessions.append($0)
        _ = exporter.pass(removeStale: false, reader: &reader)
      }
      runtimeOutputs.exportsWritten = { exporter.hasExported(sessionID: $1, in: $0) }
    }
    let corrected = gpsClock ? GPSCorrectedClock(base: clock) : nil
    runtimeOutputs.board.gpsClock = corrected
    runtime = ServiceRuntime(
      engine: engine, store: store, clock: corrected ?? clock, queue: queue,
      notifier: SystemdNotifier(environment: environment), log: log, boardName: "manual", settings: runtimeSettings,
      outputs: runtimeOutputs, host: clock)
  }

  deinit {
    if ownsDirectory { try? FileManager.default.removeItem(atPath: directory) }
  }

  /// Runs the loop for `seconds` of manual time.
  func run(for seconds: Double) {
    clock.end = clock.host + seconds
    #expect(runtime.run() == 0)
  }

  /// A request as the control socket hands it over; the reply, once the loop has taken it.
  @discardableResult
  func control(_ command: ControlCommand) -> ControlReply? {
    let box = ReplyBox()
    queue.post(.control(ControlRequest(command: command), box))
    run(for: 0)
    return box.wait(seconds: 0)
  }

  /// An input a device's thread queued, stamped when it was sensed.
  func sensed(_ input: EngineInput, at monotonic: Double) {
    let now = clock.now()
    queue.post(.input(input, Moment(monotonic: monotonic, wall: now.wall - (now.monotonic - monotonic))))
  }

  /// Started, counted down (3 s) and running at board second 1003.5.
  func startRiding() {
    #expect(control(.start)?.state == .prepared)
    run(for: 3.5)
    #expect(runtime.core.engine.state == .running)
  }

  func logs(containing text: String) -> Int { lines.count(containing: text) }

  func points() throws -> [PointRecord] { try store.points(sessionID: 1) }

  func events() throws -> [EventRecord] { try store.events(sessionID: 1) }
}

/// A device the loop reads itself (gpsd on the real board): records when it was read, on the
/// board's clock, and hands over what a test queued for its next read.
final class ManualReadDevice: EngineReadDevice, @unchecked Sendable {
  let name = "manual device"
  let clock: ManualRuntimeHost
  private(set) var reads: [Double] = []
  /// What the next read brings, and how many seconds before it each arrived.
  var arrivals: [(input: EngineInput, age: Double)] = []

  init(clock: ManualRuntimeHost) { self.clock = clock }

  func start(sink: any InputSink) {}
  func stop() {}

  func read(_ deliver: (EngineInput, _ age: Double) -> Void) {
    reads.append(clock.now().monotonic)
    for arrival in arrivals { deliver(arrival.input, arrival.age) }
    arrivals.removeAll()
  }
}

/// A real full disk: a 1 MiB tmpfs (mounting needs root; CI runs as root) that a ballast file
/// fills and frees.
final class SmallDisk {
  let path: String
  private let outer: String
  private var ballast: String { path + "/ballast" }

  static var canMount: Bool { getuid() == 0 }

  init() throws {
    outer = NSTemporaryDirectory() + "workoutd-manual-" + UUID().uuidString
    path = outer + "/small"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    guard Self.run("/bin/mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", path) == 0 else {
      throw SystemError("mount", errno: EPERM, context: "a tmpfs on \(path)")
    }
  }

  deinit {
    Self.run("/bin/umount", "-l", path)
    try? FileManager.default.removeItem(atPath: outer)
  }

  /// Fills what is left of the disk.
  func fill() throws {
    FileManager.default.createFile(atPath: ballast, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: ballast))
    while (try? handle.write(contentsOf: Data(count: 4096))) != nil {}
    try handle.close()
  }

  func free() throws {
    try FileManager.default.removeItem(atPath: ballast)
  }

  /// Fills the disk and rides on until the store refuses (the WAL may have room for some
  /// seconds yet).
  func fill(under manual: ManualRuntime) throws {
    try fill()
    for _ in 0..<200 where !manual.runtime.core.storageFailing { manual.run(for: 10) }
    #expect(manual.runtime.core.storageFailing)
  }

  @discardableResult
  static func run(_ arguments: String...) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: arguments[0])
    process.arguments = Array(arguments.dropFirst())
    do {
      try process.run()
    } catch {
      return -1
    }
    process.waitUntilExit()
    return process.terminationStatus
  }
}

/// The log's lines, as the service's handler writes them.
final class CollectedLines: Sendable {
  private let lines = Mutex<[String]>([])

  func append(_ line: String) { lines.withLock { $0.append(line) } }

  func count(containing text: String) -> Int { lines.withLock { $0.filter { $0.contains(text) }.count } }
}
