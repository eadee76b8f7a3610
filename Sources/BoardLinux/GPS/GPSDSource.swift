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
  /// A connection attempt failed; the next one is in `retryIn` seconds.
  case connectFailed(GPSDError, retryIn: Double)
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
/// gpsd not running yet, restarted or gone: the thread retries with a backoff doubling from
/// `initialBackoff` to `maximumBackoff`, posts the change once, and never crashes the service.
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
  private let running = Mutex<Running?>(nil)
  /// The loop's state, shared by the thread (connecting) and the engine (reading) in
  /// `.byEngine`; only the thread uses it in `.ownThread`.
  private let shared: SharedLoop

  /// `@unchecked Sendable`: held only inside the `running` mutex.
  private struct Running: @unchecked Sendable {
    var thread: DeviceThread
    var signal: StopSignal
  }

  /// `observer` is called on the thread that reads (keep it quick).
  public init(
    settings: GPSDSourceSettings = GPSDSourceSettings(), reading: Reading = .ownThread,
    observer: (@Sendable (GPSDSourceTrace) -> Void)? = nil
  ) {
    self.settings = settings
    self.name = "gpsd \(settings.host):\(settings.port)"
    self.reading = reading
    self.observer = observer
    self.shared = SharedLoop(GPSDSourceLoop(settings: settings, observer: observer))
  }

  deinit { stop() }

  public func start(sink: any InputSink) {
    running.withLock { running in
      guard running == nil else { return }
      let signal = StopSignal()
      let shared = self.shared
      let reading = self.reading
      let settings = self.settings
      do {
        let thread = try DeviceThread.start(name: "gpsd") {
          GPSDSourceThread(settings: settings, shared: shared, sink: sink, signal: signal, reading: reading).run()
        }
        running = Running(thread: thread, signal: signal)
      } catch {
        sink.post(
          .device(DeviceStatus(device: .gps, condition: .failing, detail: "cannot start the gpsd thread: \(error)")))
      }
    }
  }

  public func stop() {
    let current = running.withLock { running -> Running? in
      defer { running = nil }
      return running
    }
    guard let current else { return }
    current.signal.stop()  // wakes the thread's poll, whichever it is in
    current.thread.join()
  }

  /// Reads what gpsd has sent, without blocking (`.byEngine`; nothing in `.ownThread`).
  public func read(_ deliver: (EngineInput, _ age: Double) -> Void) {
    guard reading == .byEngine else { return }
    let broke = shared.withLoop { loop -> Bool in
      guard loop.isConnected else { return false }
      let now = SystemClocks.monotonic()
      loop.readAvailable(now: now, wallNow: SystemClocks.wall()) { input, arrivedAt in
        deliver(input, max(0, now - arrivedAt))
      }
      return !loop.isConnected
    }
    // The connection broke: the thread reconnects.
    if broke { shared.wakeThread() }
  }
}

/// The loop's state behind a lock, and an eventfd the thread sleeps on while the engine reads.
///
/// `@unchecked Sendable`: `loop` (with the connection it holds) is only touched inside `lock`;
/// `wake` never changes, and signalling it from any thread is what it is for.
final class SharedLoop: @unchecked Sendable {
  private let lock = Mutex<Void>(())
  private var loop: GPSDSourceLoop
  /// Made readable when the engine finds the connection broken (a stop wakes the thread
  /// through its `StopSignal`).
  let wake: Int32

  init(_ loop: GPSDSourceLoop) {
    self.loop = loop
    wake = shim_event_open()
  }

  deinit {
    if wake >= 0 { close(wake) }
  }

  func withLoop<T>(_ body: (inout GPSDSourceLoop) -> T) -> T {
    lock.withLock { _ in body(&loop) }
  }

  func wakeThread() {
    if wake >= 0 { _ = shim_event_signal(wake) }
  }

  /// Empties the eventfd's counter after a wake.
  func consumeWake() {
    var counter: UInt64 = 0
    if wake >= 0 { _ = Glibc.read(wake, &counter, 8) }
  }
}

/// The source's thread: connects, and then either reads (`.ownThread`) or sleeps while the
/// engine reads (`.byEngine`) until the connection breaks or a stop.
struct GPSDSourceThread {
  let settings: GPSDSourceSettings
  let shared: SharedLoop
  let sink: any InputSink
  let signal: StopSignal
  let reading: GPSDSource.Reading

  func run() {
    defer { shared.withLoop { $0.stopped() } }
    let connection = GPSDConnection()
    while !signal.isStopRequested {
      // Connecting may block (a remote host, DNS): never while the engine could be waiting.
      do {
        try connection.open(host: settings.host, port: String(settings.port))
      } catch {
        let backoff = shared.withLoop { loop in loop.connectFailed(error, emit: postNow) }
        if signal.wait(seconds: backoff) { break }
        continue
      }
      shared.withLoop { $0.attach(connection) }
      let answered: Bool
      switch reading {
      case .ownThread: answered = readOwnThread(connection)
      case .byEngine: answered = sleepWhileEngineReads()
      }
      if signal.isStopRequested { break }
      if !answered {
        // Closed before gpsd said anything (a dying gpsd's listen backlog accepts and resets):
        // a failed attempt, not a connection.
        if signal.wait(seconds: shared.withLoop { $0.nextBackoff() }) { break }
      }
    }
    shared.withLoop { $0.detach() }
  }

  private var postNow: (EngineInput, Double) -> Void {
    let sink = self.sink
    return { input, _ in sink.post(input) }
  }

  /// `.ownThread`: polls the socket and reads each batch as it comes; returns whether gpsd
  /// answered on this connection, when it is over.
  private func readOwnThread(_ connection: GPSDConnection) -> Bool {
    var socket = [pollfd(fd: connection.fileDescriptor, events: Int16(POLLIN), revents: 0)]
    while true {
      let (open, answered, deadline) = shared.withLoop { loop in
        loop.readAvailable(now: SystemClocks.monotonic(), wallNow: SystemClocks.wall(), emit: postNow)
        return (loop.isConnected, loop.answered, loop.nextDeadline)
      }
      guard open else { return answered }
      do {
        // Sleep until gpsd writes, the epoch being assembled is complete, or a stop.
        if try signal.poll(&socket, until: deadline) { return answered }
      } catch {
        shared.withLoop { loop in
          loop.post(.failing, "cannot wait for gpsd at \(loop.endpoint): \(error)", emit: postNow)
          loop.detach()
        }
        return answered
      }
    }
  }

  /// `.byEngine`: sleeps, with no timeout, until the engine finds the connection broken or a
  /// stop; returns whether gpsd answered on this connection.
  private func sleepWhileEngineReads() -> Bool {
    var wake = [pollfd(fd: shared.wake, events: Int16(POLLIN), revents: 0)]
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

/// Reading gpsd: what to make of each report, whoever reads. All its state is its own; the
/// caller passes the time and where inputs go (`emit`: the input and when it arrived, on
/// CLOCK_MONOTONIC).
struct GPSDSourceLoop {
  typealias Emit = (EngineInput, _ arrivedAt: Double) -> Void

  let settings: GPSDSourceSettings
  let observer: (@Sendable (GPSDSourceTrace) -> Void)?

  private var filter: FixQualityFilter
  /// Merges the TPVs of one epoch into one fix.
  private var epoch = GPSEpochAssembler()
  private var lastCondition: DeviceStatus.Condition?
  /// What the last TPV was (nil at the start of a connection or after the receiver closed):
  /// `gpsNoFix` is posted when the reports turn to no fix, `gpsRejected` once an epoch.
  private enum ReportKind { case usable, rejected, noFix }
  private var lastKind: ReportKind?
  private var lastRejectedTime: Double?
  /// The receiver's condition as last posted (`DeviceKind.gpsReceiver`).
  private var lastReceiver: DeviceStatus.Condition?
  private var everConnected = false
  private(set) var backoff: Double
  /// The open connection, nil between connections.
  private var connection: GPSDConnection?
  /// Whether gpsd greeted on this connection (its VERSION came first), and when.
  private(set) var answered = false
  private var answeredAt: Double?
  /// When this connection was opened (the greeting is due within `greetingTimeout`).
  private var connectedAt = 0.0
  private var batch: [(message: GPSDMessage, arrivedAt: Double)] = []
  /// When the socket was last read to the end (or connected): nothing read later arrived before.
  private var lastReadAt = -Double.infinity

  init(settings: GPSDSourceSettings, observer: (@Sendable (GPSDSourceTrace) -> Void)?) {
    self.settings = settings
    self.observer = observer
    self.filter = FixQualityFilter(settings: settings.quality)
    self.backoff = max(0.01, settings.initialBackoff)
  }

  var endpoint: String { "\(settings.host):\(settings.port)" }
  var isConnected: Bool { connection?.isOpen ?? false }
  /// When the epoch being assembled is complete if no report comes.
  var settleDeadline: Double? { epoch.settleDeadline }

  /// A connection was opened: a fresh start for what is per connection.
  mutating func attach(_ connection: GPSDConnection) {
    self.connection = connection
    lastKind = nil
    answered = false
    answeredAt = nil
    lastReadAt = SystemClocks.monotonic()
    connectedAt = lastReadAt
    filter.reset()
    observer?(.connected(host: settings.host, port: settings.port))
  }

  /// Closes the connection (saying goodbye to gpsd: call it on the source's thread).
  mutating func detach() {
    connection?.close()
    connection = nil
  }

  mutating func stopped() {
    observer?(.stopped)
  }

  /// A connection attempt failed: reports it once, and returns the wait before the next.
  mutating func connectFailed(_ error: GPSDError, emit: Emit) -> Double {
    let condition: DeviceStatus.Condition = everConnected ? .lost : .absent
    post(condition, "gpsd at \(endpoint) not reachable (\(error.message)); retrying", emit: emit)
    observer?(.connectFailed(error, retryIn: backoff))
    return nextBackoff()
  }

  /// The wait to use now; the next one is twice as long.
  mutating func nextBackoff() -> Double {
    defer { backoff = min(backoff * 2, max(settings.maximumBackoff, settings.initialBackoff)) }
    return backoff
  }

  /// Reads every report that has arrived and hands on what it means; if the connection
  /// breaks, reports it and drops the connection (`isConnected` false).
  ///
  /// The GPS is `available` from gpsd's VERSION greeting, which gpsd sends first on every
  /// connection, not from the TCP connection alone. A peer whose first line is something else
  /// is not gpsd; one that sends no greeting within `greetingTimeout` seconds (silence, or bytes
  /// with no line end) does not answer as gpsd. Either is a `failing` GPS with a message naming
  /// the endpoint and what happened, and the connection is dropped and retried with backoff.
  mutating func readAvailable(now: Double, wallNow: Double, emit: Emit) {
    guard let connection, connection.isOpen else { return }
    var failure: GPSDError?
    var notGreeting: String?
    batch.removeAll(keepingCapacity: true)
    do {
      while let message = try connection.read() {
        if !answered, batch.isEmpty {
          guard case .version = message else {
            notGreeting = connection.lastLineStart
            break
          }
        }
        // The kernel stamped it on CLOCK_REALTIME; its age places it on CLOCK_MONOTONIC.
        let age = max(0, min(wallNow - (connection.lastArrival ?? wallNow), 60))
        batch.append((message, now - age))
        if !answered { answered = true }
      }
    } catch {
      failure = error
    }
    if let notGreeting {
      refuse("not gpsd at \(endpoint): its first line was not gpsd's VERSION greeting (\"\(notGreeting)\")", emit: emit)
      return
    }
    placeEarlierEpochs()
    lastReadAt = now
    for (index, (message, arrivedAt)) in batch.enumerated() {
      if index == 0, answeredAt == nil {
        answeredAt = arrivedAt
        everConnected = true
        if case .version(let release) = message {
          post(.available, "connected to gpsd \(release) at \(endpoint)", emit: emit, at: arrivedAt)
        }
      }
      backoff = max(0.01, settings.initialBackoff)
      handle(message, at: arrivedAt, emit: emit)
    }
    if let failure {
      postAssembledFix(now: now, force: true, emit: emit)
      observer?(.disconnected(failure))
      if answered {
        post(.lost, "lost gpsd at \(endpoint) (\(failure.message)); reconnecting", emit: emit)
      } else if failure.code == EMSGSIZE {
        post(.failing, "not gpsd at \(endpoint): \(failure.message); retrying", emit: emit)
      } else {
        post(
          everConnected ? .lost : .absent,
          "gpsd at \(endpoint) closed the connection before its greeting; retrying", emit: emit)
      }
      self.connection = nil
      return
    }
    if !answered, now >= connectedAt + settings.greetingTimeout {
      let received = connection.bytesReceived
      refuse(
        received == 0
          ? "no answer from gpsd at \(endpoint): the port accepts connections but nothing was said in \(formatSeconds(settings.greetingTimeout)) (is gpsd hung, or another service on that port?)"
          : "not gpsd at \(endpoint): \(received) bytes in \(formatSeconds(settings.greetingTimeout)) and no VERSION greeting",
        emit: emit)
      return
    }
    postAssembledFix(now: now, emit: emit)
  }

  /// When the loop must look again even if nothing arrives: the epoch's settling, and the end
  /// of the wait for gpsd's greeting.
  var nextDeadline: Double? {
    [epoch.settleDeadline, answered || connection == nil ? nil : connectedAt + settings.greetingTimeout]
      .compactMap { $0 }.min()
  }

  /// The peer is not (or not yet) gpsd: say so once, drop the connection, retry with backoff.
  private mutating func refuse(_ detail: String, emit: Emit) {
    post(.failing, detail + "; retrying", emit: emit)
    observer?(.disconnected(GPSDError(operation: .read, code: 0, message: detail)))
    connection?.abandon()
    connection = nil
  }

  /// Reports read together share the stamp of the newest packet (TCP gives one stamp a read).
  /// A TPV of an earlier epoch in the same batch arrived about as much earlier as its GPS
  /// time is (a receiver sends one epoch a second), a report between epochs with the epoch
  /// after it; and nothing in the batch arrived before the previous read emptied the socket.
  private mutating func placeEarlierEpochs() {
    guard !batch.isEmpty else { return }
    if batch.count > 1 {
      // The newest GPS time among the TPVs sharing each stamp (a batch holds a few reports:
      // looked up by scanning, not hashed).
      let times: [Double?] = batch.map { entry in
        if case .tpv(let snapshot) = entry.message { snapshot.time?.secondsSince1970 } else { nil }
      }
      let stamps = batch.map(\.arrivedAt)
      for index in batch.indices {
        guard let time = times[index] else { continue }
        var newest = time
        for other in stamps.indices where stamps[other] == stamps[index] {
          if let otherTime = times[other] { newest = max(newest, otherTime) }
        }
        batch[index].arrivedAt -= min(max(0, newest - time), 60)
      }
      for index in batch.indices.dropLast().reversed() {
        batch[index].arrivedAt = min(batch[index].arrivedAt, batch[index + 1].arrivedAt)
      }
    }
    for index in batch.indices { batch[index].arrivedAt = max(batch[index].arrivedAt, lastReadAt) }
  }

  private mutating func handle(_ message: GPSDMessage, at arrivedAt: Double, emit: Emit) {
    switch message {
    case .tpv(let snapshot):
      let report = GPSDMapping.report(from: snapshot)
      var verdict: FixVerdict?
      switch report {
      case .fix(let fix): verdict = filter.evaluate(fix)
      case .noFix: verdict = nil
      }
      observer?(.report(snapshot, report, verdict))
      switch (report, verdict) {
      case (_, .accepted(let fix)?):
        if lastReceiver != .available {
          postReceiver(.available, "gpsd reports fixes from its receiver", emit: emit, at: arrivedAt)
        }
        let previousAt = epoch.lastAddedAt
        if let finished = epoch.begin(fix, at: arrivedAt) { emit(.reading(.gps(finished)), previousAt) }
        lastKind = .usable
      case (.fix(let fix), .rejected(.repeatedTime)?):
        // A later report of the epoch being assembled: it may bring the altitude, errors, speed,
        // which pass the filter's checks as the epoch's first report's did.
        epoch.merge(FixQualityFilter.sanitised(fix), at: arrivedAt)
      case (_, .rejected(let reason)?):
        // One `gpsRejected` an epoch, so the engine knows fixes arrive and why they are refused.
        if lastKind == .usable { postAssembledFix(now: arrivedAt, force: true, emit: emit) }
        let time = snapshot.time?.secondsSince1970
        if lastKind != .rejected || (time != nil && time != lastRejectedTime) {
          emit(.reading(.gpsRejected(reason)), arrivedAt)
        }
        lastRejectedTime = time
        lastKind = .rejected
      case (_, nil):
        if lastKind != .noFix {
          postAssembledFix(now: arrivedAt, force: true, emit: emit)
          emit(.reading(.gpsNoFix), arrivedAt)
        }
        lastKind = .noFix
      }
    case .device(let report):
      observer?(.receiver(report))
      if report.activated == false {
        lastKind = nil
        postReceiver(.lost, "gpsd closed the receiver \(report.path ?? "")", emit: emit, at: arrivedAt)
      } else if report.activated == true {
        postReceiver(.available, "gpsd opened the receiver \(report.path ?? "")", emit: emit, at: arrivedAt)
      }
    case .devices(let count):
      if count == 0 {
        postReceiver(
          lastReceiver == .available ? .lost : .absent,
          "gpsd at \(endpoint) has no receiver open (check its device list: /etc/default/gpsd DEVICES, or gpsdctl add)",
          emit: emit, at: arrivedAt)
      } else {
        postReceiver(.available, "gpsd has \(count) receiver\(count == 1 ? "" : "s") open", emit: emit, at: arrivedAt)
      }
    case .version(let release):
      observer?(.version(release))
    case .error(let text):
      observer?(.gpsdError(text))
    case .other:
      break
    }
  }

  /// The receiver's condition, when it changes.
  private mutating func postReceiver(
    _ condition: DeviceStatus.Condition, _ detail: String, emit: Emit, at: Double
  ) {
    guard condition != lastReceiver else { return }
    lastReceiver = condition
    emit(.device(DeviceStatus(device: .gpsReceiver, condition: condition, detail: detail)), at)
  }

  /// Hands on the epoch's assembled fix once it is complete (or now, with `force`), as of
  /// when its last report arrived.
  private mutating func postAssembledFix(now: Double, force: Bool = false, emit: Emit) {
    let at = epoch.lastAddedAt
    if let fix = epoch.finish(at: now, force: force) { emit(.reading(.gps(fix)), min(at, now)) }
  }

  /// Hands on the GPS's condition when it changes.
  mutating func post(
    _ condition: DeviceStatus.Condition, _ detail: String, emit: Emit, at: Double = SystemClocks.monotonic()
  ) {
    guard condition != lastCondition else { return }
    lastCondition = condition
    emit(.device(DeviceStatus(device: .gps, condition: condition, detail: detail)), at)
  }
}
