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

  public init(
    host: String = "localhost", port: Int = 2947, quality: FixQualitySettings = FixQualitySettings(),
    initialBackoff: Double = 1, maximumBackoff: Double = 30
  ) {
    self.host = host
    self.port = port
    self.quality = quality
    self.initialBackoff = initialBackoff
    self.maximumBackoff = maximumBackoff
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
/// On its own thread it connects to gpsd through libgps (`GPSDConnection`), maps each TPV
/// (`GPSDMapping`), filters it (`FixQualityFilter`) and posts:
/// - `.reading(.gps(fix))` for every accepted fix (the first usable report of each epoch);
/// - `.reading(.gpsNoFix)` when the reports go from usable to unusable (no fix, or a fix
///   the filter rejects), and for the first report of a connection if it is unusable;
/// - `.device(DeviceStatus(device: .gps, ...))` when the GPS's condition changes: `absent`
///   (gpsd not reachable since start), `available` (gpsd answered on a new connection, or the
///   receiver is back), `lost` (the connection broke, or gpsd closed the receiver).
///
/// gpsd not running yet, restarted or gone: the thread retries with a backoff doubling from
/// `initialBackoff` to `maximumBackoff`, posts the change once, and never crashes the service.
/// It reads promptly (gpsd drops clients that fall behind): posting must not block for long.
///
/// ```swift
/// let gps = GPSDSource(settings: GPSDSourceSettings(host: config.gps.host, port: config.gps.port,
///                                                   quality: config.gps.quality))
/// gps.start(sink: runtime)   // returns at once
/// ...
/// gps.stop()                 // wakes the thread and returns when it has ended
/// ```
public final class GPSDSource: DeviceSource {
  public let settings: GPSDSourceSettings
  public let name: String
  private let observer: (@Sendable (GPSDSourceTrace) -> Void)?
  private let running = Mutex<Running?>(nil)

  private struct Running: @unchecked Sendable {
    var thread: DeviceThread
    var signal: StopSignal
  }

  /// `observer` is called on the source's thread for every step (keep it quick).
  public init(
    settings: GPSDSourceSettings = GPSDSourceSettings(),
    observer: (@Sendable (GPSDSourceTrace) -> Void)? = nil
  ) {
    self.settings = settings
    self.name = "gpsd \(settings.host):\(settings.port)"
    self.observer = observer
  }

  deinit { stop() }

  public func start(sink: any InputSink) {
    running.withLock { running in
      guard running == nil else { return }
      let signal = StopSignal()
      let settings = self.settings
      let observer = self.observer
      do {
        let thread = try DeviceThread.start(name: "gpsd") {
          var loop = GPSDSourceLoop(settings: settings, sink: sink, signal: signal, observer: observer)
          loop.run()
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
    current.signal.stop()
    current.thread.join()
  }
}

/// The source's thread: connect, read, post, reconnect. All its state is its own.
struct GPSDSourceLoop {
  let settings: GPSDSourceSettings
  let sink: any InputSink
  let signal: StopSignal
  let observer: (@Sendable (GPSDSourceTrace) -> Void)?

  private var filter: FixQualityFilter
  /// Merges the TPVs of one epoch into one fix.
  private var epoch = GPSEpochAssembler()
  private var lastCondition: DeviceStatus.Condition?
  /// Whether the last report was usable; nil at the start of a connection.
  private var lastUsable: Bool?
  private var receiverClosed = false
  private var everConnected = false
  private var backoff: Double

  init(
    settings: GPSDSourceSettings, sink: any InputSink, signal: StopSignal,
    observer: (@Sendable (GPSDSourceTrace) -> Void)?
  ) {
    self.settings = settings
    self.sink = sink
    self.signal = signal
    self.observer = observer
    self.filter = FixQualityFilter(settings: settings.quality)
    self.backoff = max(0.01, settings.initialBackoff)
  }

  private var endpoint: String { "\(settings.host):\(settings.port)" }

  mutating func run() {
    defer { observer?(.stopped) }
    let connection: GPSDConnection
    do {
      connection = try GPSDConnection()
    } catch {
      post(.failing, "gpsd client: \(error)")
      return
    }
    while !signal.isStopRequested {
      do {
        try connection.open(host: settings.host, port: String(settings.port))
      } catch {
        let condition: DeviceStatus.Condition = everConnected ? .lost : .absent
        post(condition, "gpsd at \(endpoint) not reachable (\(error.message)); retrying")
        observer?(.connectFailed(error, retryIn: backoff))
        if signal.wait(seconds: backoff) { break }
        backoff = min(backoff * 2, max(settings.maximumBackoff, settings.initialBackoff))
        continue
      }
      receiverClosed = false
      lastUsable = nil
      filter.reset()
      observer?(.connected(host: settings.host, port: settings.port))
      if !readLoop(connection), !signal.isStopRequested {
        // Closed before gpsd said anything (a dying gpsd's listen backlog accepts and resets):
        // a failed attempt, not a connection.
        if signal.wait(seconds: backoff) { break }
        backoff = min(backoff * 2, max(settings.maximumBackoff, settings.initialBackoff))
      }
    }
    connection.close()
  }

  /// Reads until the connection breaks or a stop is requested; false if gpsd never answered.
  /// The GPS is `available` from gpsd's first report (its VERSION greeting), not from the TCP
  /// connection alone.
  private mutating func readLoop(_ connection: GPSDConnection) -> Bool {
    var answered = false
    var socket = [pollfd(fd: connection.fileDescriptor, events: Int16(POLLIN), revents: 0)]
    while true {
      // Every report already here (one recv may bring several), then sleep until gpsd writes,
      // the epoch being assembled is complete, or a stop: no periodic wake-up.
      do {
        while let message = try connection.read() {
          if !answered {
            answered = true
            everConnected = true
            if case .version(let release) = message {
              post(.available, "connected to gpsd \(release) at \(endpoint)")
            } else {
              post(.available, "connected to gpsd at \(endpoint)")
            }
          }
          backoff = max(0.01, settings.initialBackoff)
          handle(message)
        }
      } catch {
        postAssembledFix(force: true)
        observer?(.disconnected(error))
        if answered {
          post(.lost, "lost gpsd at \(endpoint) (\(error.message)); reconnecting")
        } else {
          post(everConnected ? .lost : .absent, "gpsd at \(endpoint) closed the connection at once; retrying")
        }
        return answered
      }
      postAssembledFix()
      do {
        if try signal.poll(&socket, until: epoch.settleDeadline) { return answered }
      } catch {
        post(.failing, "cannot wait for gpsd at \(endpoint): \(error)")
        connection.close()
        return answered
      }
    }
  }

  private mutating func handle(_ message: GPSDMessage) {
    switch message {
    case .tpv(let snapshot):
      let report = GPSDMapping.report(from: snapshot)
      var verdict: FixVerdict?
      var usable: Bool?
      switch report {
      case .fix(let fix):
        let v = filter.evaluate(fix)
        verdict = v
        switch v {
        case .accepted: usable = true
        case .rejected(.repeatedTime): usable = nil  // the epoch was already posted
        case .rejected: usable = false
        }
      case .noFix:
        usable = false
      }
      observer?(.report(snapshot, report, verdict))
      let now = SystemClocks.monotonic()
      if case .accepted(let fix)? = verdict {
        if receiverClosed {
          receiverClosed = false
          post(.available, "gpsd at \(endpoint) reports fixes again")
        }
        if let finished = epoch.begin(fix, at: now) { sink.post(.reading(.gps(finished))) }
      } else if case .rejected(.repeatedTime)? = verdict, case .fix(let fix) = report {
        // A later report of the epoch being assembled: it may bring the altitude, errors, speed.
        epoch.merge(fix, at: now)
      } else if usable == false, lastUsable != false {
        postAssembledFix(force: true)
        sink.post(.reading(.gpsNoFix))
      }
      if let usable { lastUsable = usable }
    case .device(let report):
      observer?(.receiver(report))
      if report.activated == false {
        receiverClosed = true
        lastUsable = nil
        post(.lost, "gpsd closed the receiver \(report.path ?? "")")
      } else if report.activated == true, receiverClosed {
        receiverClosed = false
        post(.available, "gpsd opened the receiver \(report.path ?? "")")
      }
    case .version(let release):
      observer?(.version(release))
    case .error(let text):
      observer?(.gpsdError(text))
    case .other:
      break
    }
  }

  /// Posts the epoch's assembled fix once it is complete (or now, with `force`).
  private mutating func postAssembledFix(force: Bool = false) {
    if let fix = epoch.finish(at: SystemClocks.monotonic(), force: force) { sink.post(.reading(.gps(fix))) }
  }

  /// Posts the GPS's condition when it changes.
  private mutating func post(_ condition: DeviceStatus.Condition, _ detail: String) {
    guard condition != lastCondition else { return }
    lastCondition = condition
    sink.post(.device(DeviceStatus(device: .gps, condition: condition, detail: detail)))
  }
}
