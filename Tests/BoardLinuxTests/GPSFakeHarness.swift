import BoardLinux
import Foundation
import SensorProtocols
import Synchronization
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// A real gpsd started by `gpsfake` (Debian package gpsd-clients), replaying a capture from
/// Tests/Fixtures/gpsd on a loopback port of its own.
///
/// In pipe mode (`-p`) gpsfake is itself a JSON client of the gpsd it started and writes every
/// report it receives to stdout: that is the reference, "what gpsd sent in this run", captured
/// into a file while our `GPSDSource` reads the same gpsd through libgps.
final class GPSFake {
  static let fixtures: String = {
    var url = URL(fileURLWithPath: #filePath)
    url.deleteLastPathComponent()
    url.deleteLastPathComponent()
    return url.appendingPathComponent("Fixtures/gpsd").path
  }()

  static var isAvailable: Bool {
    FileManager.default.isExecutableFile(atPath: "/usr/bin/gpsfake")
      && FileManager.default.isExecutableFile(atPath: "/usr/sbin/gpsd")
  }

  let port: Int
  let capture: String
  private let pid: pid_t
  private var exited = false
  private let directory: URL
  private let outputPath: String
  private let errorPath: String

  /// Starts `gpsfake` on `capture` (a file name in Tests/Fixtures/gpsd).
  /// - `singleShot`: one pass through the log (`-1`), then gpsfake ends and stops its gpsd;
  ///   otherwise the log repeats until `terminate()`.
  /// - `cycle`: seconds between sentences (`-c`).
  ///
  /// Spawned with `posix_spawn`, an empty signal mask and default signal actions: Foundation's
  /// `Process` starts children with most signals blocked, and a gpsd that cannot receive
  /// SIGTERM makes gpsfake spin for ever in its cleanup.
  init(capture: String, port: Int, singleShot: Bool = true, cycle: Double = 0.005) throws {
    self.port = port
    self.capture = capture
    directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "gpsfake-\(getpid())-\(port)-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    outputPath = directory.appendingPathComponent("reports.json").path
    errorPath = directory.appendingPathComponent("stderr.txt").path
    var arguments = [
      "/usr/bin/gpsfake", "-q", "-p", "-r", #"?WATCH={"json":true}"#, "-c", String(cycle), "-P", String(port),
    ]
    if singleShot { arguments.insert("-1", at: 1) }
    arguments.append(Self.fixtures + "/" + capture)
    pid = try Self.spawn(arguments, stdout: outputPath, stderr: errorPath)
  }

  deinit {
    terminate()
    try? FileManager.default.removeItem(at: directory)
  }

  private static func spawn(_ arguments: [String], stdout: String, stderr: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    // A file, not a pipe: a long replay must never block on a full pipe.
    posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGPIPE, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGCHLD] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for case let pointer? in argv { free(pointer) } }
    var pid: pid_t = 0
    let status = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, environ)
    guard status == 0 else { throw POSIXError(POSIXErrorCode(rawValue: status) ?? .EIO) }
    return pid
  }

  /// Whether gpsfake is still running (reaps it when it has ended).
  var isRunning: Bool {
    guard !exited else { return false }
    var status: Int32 = 0
    let result = waitpid(pid, &status, WNOHANG)
    if result == pid || result < 0 { exited = true }
    return !exited
  }

  /// Waits for gpsfake to end by itself (bounded); true if it did.
  @discardableResult
  func waitForExit(timeout: Double = 120) -> Bool {
    gpsdWaitUntil(timeout: timeout) { !self.isRunning }
  }

  /// Ends gpsfake (SIGTERM: it stops its gpsd; SIGKILL to both if that does not work in 10 s).
  func terminate() {
    guard isRunning else { return }
    let gpsd = gpsdPID()
    kill(pid, SIGTERM)
    if !waitForExit(timeout: 10) {
      if let gpsd { kill(gpsd, SIGKILL) }
      kill(pid, SIGKILL)
      waitForExit(timeout: 10)
    }
  }

  /// The gpsd that this gpsfake started (its child process).
  func gpsdPID() -> pid_t? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8) else {
      return nil
    }
    for child in text.split(separator: " ").compactMap({ pid_t($0) }) {
      let comm = (try? String(contentsOfFile: "/proc/\(child)/comm", encoding: .utf8)) ?? ""
      if comm.hasPrefix("gpsd") { return child }
    }
    return nil
  }

  /// Kills this run's gpsd with SIGKILL (a crash, as far as its clients can tell).
  func killGPSD() -> Bool {
    guard let pid = gpsdPID() else { return false }
    return kill(pid, SIGKILL) == 0
  }

  /// Every report gpsfake's own client received, as lines.
  func reportLines() -> [String] {
    let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    return text.split(whereSeparator: \.isNewline).map(String.init).filter { $0.hasPrefix("{") }
  }

  /// The TPVs gpsd sent in this run, decoded as libgps would.
  func referenceTPVs() -> [TPVSnapshot] {
    reportLines().compactMap { $0.hasPrefix(#"{"class":"TPV""#) ? GPSDJSON.tpv(from: $0) : nil }
  }

  var stderr: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

  /// A TCP port on 127.0.0.1 that nobody listens on (bind to 0, read it back, close).
  static func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer -> Bool in
        bind(fd, sockaddrPointer, length) == 0 && getsockname(fd, sockaddrPointer, &length) == 0
      }
    }
    guard bound else { return 20_000 + Int(getpid() % 10_000) }
    return Int(UInt16(bigEndian: address.sin_port))
  }
}

/// Polls `condition` every 20 ms until it holds or `timeout` seconds pass.
@discardableResult
func gpsdWaitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
  let deadline = gpsdMonotonicNow() + timeout
  while gpsdMonotonicNow() < deadline {
    if condition() { return true }
    usleep(20_000)
  }
  return condition()
}

func gpsdMonotonicNow() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// What the source posted and traced, in the order its thread did it.
final class GPSDRecorder: InputSink, Sendable {
  enum Entry: Sendable {
    case input(EngineInput)
    case trace(GPSDSourceTrace)
  }

  private let entries = Mutex<[(at: Double, entry: Entry)]>([])

  /// Stamped with the monotonic clock, as the runtime stamps what a source posts.
  func post(_ input: EngineInput) {
    let now = gpsdMonotonicNow()
    entries.withLock { $0.append((now, .input(input))) }
  }

  func trace(_ trace: GPSDSourceTrace) {
    let now = gpsdMonotonicNow()
    entries.withLock { $0.append((now, .trace(trace))) }
  }

  var all: [Entry] { entries.withLock { $0.map(\.entry) } }
  var stamped: [(at: Double, entry: Entry)] { entries.withLock { $0 } }

  var inputs: [EngineInput] {
    all.compactMap { if case .input(let input) = $0 { input } else { nil } }
  }

  var fixes: [GPSFix] {
    inputs.compactMap { if case .reading(.gps(let fix)) = $0 { fix } else { nil } }
  }

  var statuses: [DeviceStatus] {
    inputs.compactMap { if case .device(let status) = $0 { status } else { nil } }
  }

  /// The TPVs the source read, as libgps gave them.
  var snapshots: [TPVSnapshot] {
    all.compactMap { if case .trace(.report(let snapshot, _, _)) = $0 { snapshot } else { nil } }
  }

  var connectFailures: Int {
    all.filter { if case .trace(.connectFailed) = $0 { true } else { false } }.count
  }

  var hasStopped: Bool {
    all.contains { if case .trace(.stopped) = $0 { true } else { false } }
  }

  var receiverClosed: Bool {
    all.contains { if case .trace(.receiver(let report)) = $0 { report.activated == false } else { false } }
  }
}

/// The acceptance rules restated from the issue, over gpsd's own JSON, independently of
/// `FixQualityFilter`: mode 2 or 3 with a position, not 0/0, horizontal error (eph, else
/// √(epx²+epy²)) within the limit or unknown, first report of each receiver time.
func gpsdExpectedAccepted(_ reference: [TPVSnapshot], limit: Double) -> [TPVSnapshot] {
  var lastTime: Double?
  var accepted: [TPVSnapshot] = []
  for tpv in reference {
    guard tpv.mode >= 2, tpv.latitude.isFinite, tpv.longitude.isFinite else { continue }
    guard !(tpv.latitude == 0 && tpv.longitude == 0) else { continue }
    let error: Double? =
      tpv.eph.isFinite
      ? tpv.eph : (tpv.epx.isFinite && tpv.epy.isFinite ? (tpv.epx * tpv.epx + tpv.epy * tpv.epy).squareRoot() : nil)
    if let error, error > limit { continue }
    let time = tpv.time?.secondsSince1970
    if let time, time == lastTime { continue }
    if let time { lastTime = time }
    accepted.append(tpv)
  }
  return accepted
}

/// Same report: mode, time (to the millisecond gpsd prints), latitude and longitude (to 1e-9°,
/// the digits gpsd prints).
func gpsdSameReport(_ a: TPVSnapshot, _ b: TPVSnapshot) -> Bool {
  func near(_ x: Double, _ y: Double) -> Bool { (x.isNaN && y.isNaN) || abs(x - y) <= 1e-9 }
  let timesMatch: Bool
  switch (a.time, b.time) {
  case (nil, nil): timesMatch = true
  case (let x?, let y?): timesMatch = abs(x.secondsSince1970 - y.secondsSince1970) < 0.0005
  default: timesMatch = false
  }
  return a.mode == b.mode && timesMatch && near(a.latitude, b.latitude) && near(a.longitude, b.longitude)
}

func gpsdSameFix(_ fix: GPSFix, _ tpv: TPVSnapshot) -> Bool {
  let timesMatch: Bool
  switch (fix.time, tpv.time) {
  case (nil, nil): timesMatch = true
  case (let x?, let y?): timesMatch = abs(x - y.secondsSince1970) < 0.0005
  default: timesMatch = false
  }
  return fix.dimension.rawValue == tpv.mode && timesMatch && abs(fix.latitude - tpv.latitude) <= 1e-9
    && abs(fix.longitude - tpv.longitude) <= 1e-9
}

/// The board's clock during a fast replay (gpsfake feeds a capture many times faster than
/// real time): the receiver's time of the latest report that had one, never going backwards;
/// unknown before the first. Used only to drive the fix monitor, never as a fix's time.
struct GPSDReplayClock {
  private(set) var now: Double?

  mutating func advance(with snapshot: TPVSnapshot) {
    if let t = snapshot.time?.secondsSince1970 { now = max(now ?? t, t) }
  }
}

/// Runs a source against a one-shot gpsfake replay of `capture` and returns what it saw and
/// what gpsd sent. The source is started first and retries quickly, so it is watching before
/// gpsfake feeds the first sentence (gpsfake waits 1.4 s after its own client connects).
func gpsdReplay(
  _ capture: String, limit: Double = 20
) throws -> (recorder: GPSDRecorder, reference: [TPVSnapshot], fake: GPSFake) {
  let port = GPSFake.freePort()
  let recorder = GPSDRecorder()
  let source = GPSDSource(
    settings: GPSDSourceSettings(
      host: "127.0.0.1", port: port, quality: FixQualitySettings(maxHorizontalError: limit), initialBackoff: 0.02,
      maximumBackoff: 0.05, pollInterval: 0.05),
    observer: { recorder.trace($0) })
  source.start(sink: recorder)
  let fake = try GPSFake(capture: capture, port: port)
  let ended = fake.waitForExit(timeout: 120)
  // gpsfake has stopped its gpsd: the source notices the closed connection.
  gpsdWaitUntil(timeout: 10) { recorder.statuses.last?.condition == .lost }
  source.stop()
  if !ended { fake.terminate() }
  return (recorder, fake.referenceTPVs(), fake)
}
