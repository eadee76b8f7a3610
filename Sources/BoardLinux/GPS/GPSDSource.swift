import CLinuxShims
import LinuxSupport
import SensorProtocols
import Synchronization
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// Where to find gpsd and how to treat its fixes (config section `[gps]`).
public struct GPSDSourceSettings: Sendable, Hashable {
  /// gpsd's host, `localhost` by default (gpsd binds loopback only, unless started with -G).
  public var host: String
  /// gpsd's port, 2947 (IANA) by default.
  public var port: Int
  /// Which fixes are posted.
  public var quality: FixQualitySettings
  /// First wait after a failed connection, seconds; doubles on each failure up to
  /// `maximumBackoff`, and starts again from here once a report has been read.
  public var initialBackoff: Double
  public var maximumBackoff: Double
  /// Seconds a new connection has to bring gpsd's VERSION greeting (gpsd sends it at once)
  /// before the peer counts as not answering.
  public var greetingTimeout: Double

  public init(
    host: String = "localhost", port: Int = GPSDJSON.defaultPort, quality: FixQualitySettings = FixQualitySettings(),
    initialBackoff: Double = 1, maximumBackoff: Double = 30, greetingTimeout: Double = 5
  ) {
    self.host = host
    self.port = port
    self.quality = quality
    self.initialBackoff = initialBackoff
    self.maximumBackoff = maximumBackoff
    self.greetingTimeout = greetingTimeout
  }
}

/// What the source's thread does, for logs, diagnostics and tests (`GPSDSource`'s `observer`).
public enum GPSDSourceTrace: Sendable {
  case connected(host: String, port: Int)
  /// A connection attempt failed (reported once; the attempts go on with a doubling backoff).
  case connectFailed(GPSDError)
  /// An open connection broke (gpsd stopped, restarted, or dropped us).
  case disconnected(GPSDError)
  case version(String)
  /// A TPV as read, what it maps to, and the filter's verdict for a fix.
  case report(TPVSnapshot, GPSDReport, FixVerdict?)
  case receiver(GPSDJSON.DeviceReport)
  case gpsdError(String)
  /// The thread has ended (after `stop()`).
  case stopped
}

/// GPS from gpsd: the board's `DeviceSource` for position fixes.
///
/// It connects to gpsd (`GPSDConnection`, gpsd's JSON protocol), maps each TPV (`GPSDMapping`),
/// filters it (`FixQualityFilter`), merges an epoch's TPVs (`GPSEpochAssembler`) and posts:
/// - `.reading(.gps(fix))` for every accepted fix (one per epoch);
/// - `.reading(.gpsNoFix)` when the reports go from usable to unusable (no fix, or a fix
///   the filter rejects), and for the first report of a connection if it is unusable;
/// - `.device(DeviceStatus(device: .gps, ...))` when the GPS's condition changes: `absent`
///   (gpsd not reachable since start), `available` (gpsd answered on a new connection, or the
///   receiver is back), `lost` (the connection broke, or gpsd closed the receiver).
///
/// Two ways to read, one loop (`GPSDSourceLoop`):
/// - `.ownThread`: its thread polls gpsd's socket and posts each input to the sink as it comes
///   (one wake-up per batch of gpsd's reports: gpsd writes 2–3 an epoch).
/// - `.byEngine` (the service): its thread only connects (and reconnects, with backoff) and
///   then sleeps with no timeout; the engine loop reads the socket itself when it wakes anyway,
///   just before each tick (`EngineReadDevice.read`), so gpsd costs no wake-up of its own. The
///   kernel's arrival stamps keep each report's time (gpsd drops only a client whose socket
///   buffer fills: a second of reports is a few KB).
///
/// gpsd not running yet, restarted or gone: its `DeviceRunner` retries with a backoff doubling
/// from `initialBackoff` to `maximumBackoff` (a connection on which gpsd answered is retried at
/// once), the loop posts the change once, and nothing crashes the service.
///
/// ```swift
/// let gps = GPSDSource(settings: GPSDSourceSettings(host: config.gps.host, port: config.gps.port,
///                                                   quality: config.gps.quality))
/// gps.start(sink: runtime)   // returns at once
/// ...
/// gps.stop()                 // wakes the thread and returns when it has ended
/// ```
public final class GPSDSource: EngineReadDevice {
  public enum Reading: Sendable, Hashable {
    case ownThread
    case byEngine
  }

  public let settings: GPSDSourceSettings
  public let name: String
  public let reading: Reading
  private let observer: (@Sendable (GPSDSourceTrace) -> Void)?
  private let runner: DeviceRunner
  /// The loop's state, shared by the thread (connecting) and the engine (reading) in
  /// `.byEngine`; only the thread uses it in `.ownThread`.
  private let shared: SharedLoop

  /// `observer` is called on the thread that reads (keep it quick).
  public init(
    settings: GPSDSourceSettings = GPSDSourceSettings(), reading: Reading = .ownThread,
    observer: (@Sendable (GPSDSourceTrace) -> Void)? = nil
  ) {
    self.settings = settings
    self.name = "gpsd \(settings.host):\(settings.port)"
    self.reading = reading
    self.observer = observer
    let shared = SharedLoop(GPSDSourceLoop(settings: settings, observer: observer))
    self.shared = shared
    runner = DeviceRunner(
      name: name, device: .gps, backoff: Backoff(initial: settings.initialBackoff, maximum: settings.maximumBackoff)
    ) {
      { reporter, signal throws(DeviceProblem) in
        try GPSDConnectionAttempt(settings: settings, shared: shared, signal: signal, reading: reading)
          .run(&reporter)
      }
    }
  }

  deinit { stop() }

  public func start(sink: any InputSink) {
    runner.start(sink: sink)
  }

  /// Wakes the thread, whichever wait it is in, and returns when it has ended and gpsd has
  /// been told goodbye.
  public func stop() {
    guard runner.stop() else { return }
    shared.disconnect()
    shared.withLoop { $0.stopped() }
  }

  /// Reads what gpsd has sent, without blocking (`.byEngine`; nothing in `.ownThread`).
  public func read(_ deliver: (EngineInput, _ age: Double) -> Void) {
    guard reading == .byEngine else { return }
    let now = SystemClocks.monotonic()
    let broke = shared.look(now: now, wallNow: SystemClocks.wall()) { input, arrivedAt in
      deliver(input, max(0, now - arrivedAt))
    } then: { loop, verdict in
      verdict != nil && !loop.isConnected
    }
    // The connection broke: the thread reconnects.
    if broke { shared.wakeThread() }
  }
}

/// The loop and its connection behind a lock, and an eventfd the thread sleeps on while the
/// engine reads.
///
/// `@unchecked Sendable`: `loop`, `connection` and `read` are only touched inside `lock`, but
/// for the thread's `open` of the connection while the loop is not connected (when no reader
/// touches it).
final class SharedLoop: @unchecked Sendable {
  private let lock = Mutex<Void>(())
  private var loop: GPSDSourceLoop
  /// The connection to gpsd: opened by the thread, read by whoever reads.
  let connection = GPSDConnection()
  /// The last look's reports (its storage kept from look to look).
  private var read = GPSDRead()
  /// Made readable when the engine finds the connection broken (a stop wakes the thread
  /// through its `StopSignal`).
  let wake = WakeEvent()

  init(_ loop: GPSDSourceLoop) {
    self.loop = loop
  }

  func withLoop<T>(_ body: (inout GPSDSourceLoop) -> T) -> T {
    lock.withLock { _ in body(&loop) }
  }

  /// Reads what has arrived and has the loop make of it, doing what its verdict says to the
  /// connection; then `then` with the loop and the verdict (nil: not connected, nothing read).
  func look<T>(
    now: Double, wallNow: Double, emit: GPSDSourceLoop.Emit, then: (GPSDSourceLoop, GPSDConnectionVerdict?) -> T
  ) -> T {
    lock.withLock { _ in
      guard loop.isConnected else { return then(loop, nil) }
      connection.readAvailable(into: &read, greeted: loop.answered)
      let verdict = loop.received(read, now: now, wallNow: wallNow, emit: emit)
      if verdict == .refused { connection.abandon() }
      return then(loop, verdict)
    }
  }

  /// Closes the connection, saying goodbye to gpsd (on the source's thread).
  func disconnect() {
    lock.withLock { _ in
      connection.close()
      loop.disconnected()
    }
  }

  func wakeThread() {
    wake?.signal()
  }

  /// Empties the wake's counter after a wake.
  func consumeWake() {
    wake?.consume()
  }
}

/// One attempt at gpsd, on the source's thread: connects, and then either reads (`.ownThread`)
/// or sleeps while the engine reads (`.byEngine`) until the connection breaks (thrown, for the
/// runner to retry) or a stop (returns).
struct GPSDConnectionAttempt {
  let settings: GPSDSourceSettings
  let shared: SharedLoop
  let signal: StopSignal
  let reading: GPSDSource.Reading

  func run(_ reporter: inout DeviceReporter) throws(DeviceProblem) {
    let sink = reporter.sink
    let postNow: GPSDSourceLoop.Emit = { input, _ in sink.post(input) }
    // Connecting may block (a remote host, DNS): never while the engine could be waiting.
    do {
      try shared.connection.open(host: settings.host, port: String(settings.port))
    } catch {
      shared.withLoop { loop in loop.connectFailed(error, at: SystemClocks.monotonic(), emit: postNow) }
      throw DeviceProblem(condition: .absent, description: error.message, reported: true)
    }
    shared.withLoop { $0.connected(at: SystemClocks.monotonic()) }
    let answered: Bool
    switch reading {
    case .ownThread: answered = readOwnThread(postNow)
    case .byEngine: answered = sleepWhileEngineReads()
    }
    if signal.isStopRequested { return }
    shared.disconnect()
    if answered { reporter.worked() }
    // A connection gpsd answered on is tried again at once; one closed before gpsd said
    // anything (a dying gpsd's listen backlog accepts and resets) is a failed attempt.
    throw DeviceProblem(
      condition: .lost, description: "gpsd connection over", retryAfter: answered ? 0 : nil, reported: true)
  }

  /// `.ownThread`: polls the socket and reads each batch as it comes; returns whether gpsd
  /// answered on this connection, when it is over.
  private func readOwnThread(_ postNow: GPSDSourceLoop.Emit) -> Bool {
    var socket = [pollfd(fd: shared.connection.fileDescriptor, events: Int16(POLLIN), revents: 0)]
    while true {
      let (open, answered, deadline) = shared.look(
        now: SystemClocks.monotonic(), wallNow: SystemClocks.wall(), emit: postNow
      ) {
        loop, _ in (loop.isConnected, loop.answered, loop.nextDeadline)
      }
      guard open else { return answered }
      do {
        // Sleep until gpsd writes, the epoch being assembled is complete, or a stop.
        if try signal.poll(&socket, until: deadline) { return answered }
      } catch {
        shared.withLoop { loop in
          loop.post(
            .failing, "cannot wait for gpsd at \(loop.endpoint): \(error)", emit: postNow, at: SystemClocks.monotonic())
        }
        shared.disconnect()
        return answered
      }
    }
  }

  /// `.byEngine`: sleeps, with no timeout, until the engine finds the connection broken or a
  /// stop; returns whether gpsd answered on this connection.
  private func sleepWhileEngineReads() -> Bool {
    // Without an eventfd (-1, which poll(2) skips) only a stop wakes the thread.
    var wake = [shared.wake?.pollEntry ?? pollfd(fd: -1, events: 0, revents: 0)]
    while true {
      let (open, answered) = shared.withLoop { ($0.isConnected, $0.answered) }
      guard open else { return answered }
      do {
        if try signal.poll(&wake, until: nil) { return answered }
      } catch {
        _ = signal.wait(seconds: 1)
      }
      shared.consumeWake()
    }
  }
}
