import Foundation
import LinuxSupport
import Logging
import Synchronization
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore

@testable import WorkoutDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// The board's clock and the host's on one manual timeline (the board `boardOffset` ahead of the
/// host): the loop's wait moves time to the deadline it asks for at once, until `end`, where
/// `run()` returns. Nothing moves time but the loop's waits and `stall`.
final class ManualRuntimeHost: RuntimeHost, BoardClock, @unchecked Sendable {
  let epoch = "manual"
  var wallTrusted: Bool { true }
  private(set) var host: Double
  let boardOffset: Double
  let wallOffset: Double
  var end: Double
  /// Waits that asked for a time already past, in a row: a loop that never settles.
  private var spins = 0

  init(host: Double = 50, board: Moment = Moment(monotonic: 1000, wall: 1_795_000_000)) {
    self.host = host
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
/// datagram socket) driven on a manual clock: minutes of a ride in milliseconds, with no sleep.
/// `RuntimeCoreTests` checks the core's decisions one by one; these check that the executor
/// carries them out.
@Suite(.serialized)
struct ServiceRuntimeManualClockTests {
  final class Harness {
    let directory: String
    let clock = ManualRuntimeHost()
    let queue = InputQueue<RuntimeMessage>()
    let store: WorkoutStore
    let runtime: ServiceRuntime
    let lines = CollectedLines()

    init(directory: String? = nil, notifyEnvironment: [String: String] = [:]) throws {
      let made = NSTemporaryDirectory() + "workoutd-manual-" + UUID().uuidString
      self.directory = directory ?? made
      try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
      let path = self.directory + "/workoutd.db"
      (store, _) = try WorkoutStore.open(at: path, wallNow: clock.now().wall)
      let lines = self.lines
      let log = Logger(label: "test") { _ in
        JournaldLogHandler(minimum: .debug, environment: [:]) { line in lines.append(line) }
      }
      runtime = ServiceRuntime(
        engine: SessionEngine(settings: EngineSettings()), store: store, clock: clock, queue: queue,
        notifier: SystemdNotifier(environment: notifyEnvironment), log: log, boardName: "manual",
        settings: RuntimeSettings(epoch: clock.epoch, databasePath: path), outputs: RuntimeOutputs(), host: clock)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

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

    func logs(containing text: String) -> Int { lines.count(containing: text) }

    func points() throws -> [PointRecord] { try store.points(sessionID: 1) }
  }

  @Test func theCountdownEndsAtItsDeadlineAndEachWholeSecondIsARow() throws {
    let h = try Harness()
    #expect(h.control(.start)?.state == .prepared)
    h.run(for: 5.5)
    #expect(try h.points().map(\.monotonic) == [1004, 1005])
    #expect(try h.points().map(\.wall) == [1_795_000_004, 1_795_000_005])
    let running = try h.store.events(sessionID: 1).first { $0.kind == "transition" && $0.toState == "running" }
    #expect(running?.monotonic == 1003, "the countdown ends at its deadline, not when the loop got there")
  }

  @Test func aStallIsCaughtUpSecondBySecondWithWhatWasSensedInItsOwnSecond() throws {
    let h = try Harness()
    h.control(.start)
    h.run(for: 3.5)
    h.clock.stall(for: 30)
    // A heart rate sensed in the middle of the stall, queued by its device's thread.
    h.queue.post(.input(.reading(.heartRate(bpm: 150)), Moment(monotonic: 1020.5, wall: 1_795_000_020.5)))
    h.run(for: 0)
    let points = try h.points()
    #expect(points.map(\.monotonic) == (1004...1033).map(Double.init), "each second of the stall keeps its row")
    #expect(points.first { $0.monotonic == 1020 }?.hr == nil, "sensed after second 1020's tick")
    #expect(points.first { $0.monotonic == 1021 }?.hr == 150)
    #expect(h.logs(containing: "no input for") == 0)
  }

  @Test func theWatchdogIsPingedOnlyWhileTheLoopRuns() throws {
    let directory = NSTemporaryDirectory() + "workoutd-manual-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let listener = try DatagramListener(path: directory + "/notify")
    // WATCHDOG_USEC 20 s: a ping at most every 10 s.
    let h = try Harness(
      directory: directory, notifyEnvironment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "20000000"])
    h.run(for: 0)
    #expect(listener.received() == ["WATCHDOG=1"])
    h.run(for: 4)
    #expect(listener.received().isEmpty, "not again before half the interval")
    h.run(for: 6)
    #expect(listener.received() == ["WATCHDOG=1"])
    // A loop that is not asked (hung) sends nothing; the first decision after pings at once.
    h.clock.stall(for: 25)
    #expect(listener.received().isEmpty)
    h.run(for: 0)
    #expect(listener.received() == ["WATCHDOG=1"])
    // While recording, ticks ping as they go, no more often than half the interval.
    // Read as systemd would, as they come: a datagram socket queues only ten.
    h.control(.start)
    var received = listener.received()
    for _ in 0..<63 {
      h.run(for: 1)
      received += listener.received()
    }
    let pings = received.filter { $0 == "WATCHDOG=1" }.count
    #expect((11...13).contains(pings), "\(pings) pings in 63 s")
  }

  /// A real full disk (a 1 MiB tmpfs): the loop holds every second while the store refuses,
  /// says so once, and writes them all, in order, when space returns.
  @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root (CI runs as root)"))
  func writesAreHeldThroughAFullDiskAndWrittenInOrderWhenSpaceReturns() throws {
    let outer = NSTemporaryDirectory() + "workoutd-manual-" + UUID().uuidString
    let mountPoint = outer + "/small"
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
    #expect(Self.run("/bin/mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint) == 0)
    defer {
      Self.run("/bin/umount", "-l", mountPoint)
      try? FileManager.default.removeItem(atPath: outer)
    }
    let h = try Harness(directory: mountPoint)
    h.control(.start)
    h.run(for: 5.5)
    let ballast = mountPoint + "/ballast"
    FileManager.default.createFile(atPath: ballast, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: ballast))
    while (try? handle.write(contentsOf: Data(count: 4096))) != nil {}
    try handle.close()
    // The WAL may have room for some seconds yet: ride on until the store refuses.
    for _ in 0..<200 where !h.runtime.core.storageFailing { h.run(for: 10) }
    #expect(h.runtime.core.storageFailing)
    h.run(for: 10)
    #expect(h.runtime.core.pendingWrites >= 10)
    #expect(h.logs(containing: "cannot write to") == 1, "one line per condition")

    try FileManager.default.removeItem(atPath: ballast)
    h.run(for: 1.5)
    #expect(h.runtime.core.pendingWrites == 0)
    #expect(!h.runtime.core.storageFailing)
    let sequences = try h.points().map(\.seq)
    #expect(sequences == Array(0..<sequences.count), "every second, in order, none lost")
    #expect(sequences.count >= 16)
    #expect(try h.store.events(sessionID: 1).contains { $0.kind == "storageFailing" })
    #expect(h.logs(containing: "storage works again") == 1)
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

/// A bound AF_UNIX datagram socket standing in for systemd's notify socket.
final class DatagramListener {
  let path: String
  private let fd: Int32

  init(path: String) throws {
    self.path = path
    fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard bound == 0 else { throw SystemError("bind", errno: errno, context: path) }
  }

  deinit { close(fd) }

  /// The datagrams waiting now (the sender's are sent before it returns: nothing to wait for).
  func received() -> [String] {
    var messages: [String] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = recv(fd, &buffer, buffer.count, 0)
      guard count > 0 else { return messages }
      messages.append(String(decoding: buffer[0..<count], as: UTF8.self))
    }
  }
}
