import LinuxSupport
import Synchronization
import WorkoutCore

/// Why a device cannot be used right now, as it will be reported.
struct DeviceProblem: Error, Hashable, CustomStringConvertible {
  /// `absent` (never found), `lost` (went away) or `failing` (there, but misbehaving).
  var condition: DeviceStatus.Condition
  var description: String
  /// Retry after this many seconds instead of the doubling backoff (which is left as it was):
  /// a problem that passes by itself soon, like a radio busy with another connection.
  var retryAfter: Double? = nil
  /// The session has already said what went wrong in its own words (a protocol that reports
  /// its conditions itself, as gpsd's loop does): the runner only waits and retries.
  var reported = false
}

/// Reports a device's condition to the engine, once per change (not at every retry).
struct DeviceReporter {
  let device: DeviceKind
  let sink: any InputSink
  private var lastPosted: DeviceStatus.Condition?
  private var lastDetail: String?
  /// Whether the device has worked since the service started: then "not found" means lost.
  private(set) var hasWorked = false
  /// Whether it worked in the current attempt (then the next retry starts from a short wait).
  private(set) var workedThisAttempt = false

  init(device: DeviceKind, sink: any InputSink) {
    self.device = device
    self.sink = sink
  }

  mutating func available(_ detail: String) {
    hasWorked = true
    workedThisAttempt = true
    post(.available, detail)
  }

  /// A device that is available says more about itself (a sensor's new battery level): the
  /// status shows it; the condition has not changed, so nothing is logged or recorded.
  mutating func availableDetail(_ detail: String) {
    guard lastPosted == .available, detail != lastDetail else { return }
    lastDetail = detail
    sink.post(.device(DeviceStatus(device: device, condition: .available, detail: detail)))
  }

  /// A device that is still connected and working in part is failing (a sensor whose wheel or
  /// crank pairs are all refused, its other values still recorded); `available` again ends it.
  /// Posted once per change, as every condition is.
  mutating func failing(_ detail: String) {
    post(.failing, detail)
  }

  /// The end of `failing` on the same connection: available again, never disconnected.
  mutating func recovered(_ detail: String) {
    post(.available, detail, sameConnection: true)
  }

  /// The device answered in this attempt without saying anything new (its session posts its
  /// own conditions): the next retry starts from a short wait again.
  mutating func worked() {
    hasWorked = true
    workedThisAttempt = true
  }

  mutating func beginAttempt() {
    workedThisAttempt = false
  }

  mutating func problem(_ problem: DeviceProblem) {
    guard !problem.reported else { return }
    let condition = problem.condition == .absent && hasWorked ? .lost : problem.condition
    post(condition, "\(problem); retrying")
  }

  private mutating func post(_ condition: DeviceStatus.Condition, _ detail: String, sameConnection: Bool? = nil) {
    guard condition != lastPosted else { return }
    lastPosted = condition
    lastDetail = detail
    sink.post(
      .device(DeviceStatus(device: device, condition: condition, detail: detail, sameConnection: sameConnection)))
  }
}

/// A device driven by a loop on its own thread. `session` opens the device and works it until
/// the stop signal (then returns) or until it fails (then throws); failures are reported once
/// and retried after a doubling backoff, which a working session resets.
final class DeviceRunner: Sendable {
  typealias Session = (_ reporter: inout DeviceReporter, _ signal: StopSignal) throws(DeviceProblem) -> Void

  let name: String
  private let device: DeviceKind
  private let backoff: Backoff
  private let session: @Sendable () -> Session
  /// Set by `start` and taken by `stop` (the engine thread and the service's, in turn); a stop
  /// signal per start, so a stopped device can be started again.
  private let running = Mutex<Running?>(nil)

  /// `@unchecked Sendable`: held only inside the `running` mutex.
  private struct Running: @unchecked Sendable {
    var thread: DeviceThread
    var signal: StopSignal
  }

  /// `makeSession` is called on the device's thread, so per-thread state stays there.
  init(name: String, device: DeviceKind, backoff: Backoff, makeSession: @escaping @Sendable () -> Session) {
    self.name = name
    self.device = device
    self.backoff = backoff
    self.session = makeSession
  }

  /// Starts the device's thread; does nothing if it is running already.
  func start(sink: any InputSink) {
    running.withLock { running in
      guard running == nil else { return }
      let signal = StopSignal()
      if let thread = launch(sink: sink, signal: signal) { running = Running(thread: thread, signal: signal) }
    }
  }

  private func launch(sink: any InputSink, signal: StopSignal) -> DeviceThread? {
    let (device, initialBackoff, makeSession) = (device, backoff, session)
    do {
      let started = try DeviceThread.start(name: device.rawValue) {
        var reporter = DeviceReporter(device: device, sink: sink)
        var backoff = initialBackoff
        let work = makeSession()
        while !signal.isStopRequested {
          reporter.beginAttempt()
          do throws(DeviceProblem) {
            try work(&reporter, signal)
            return
          } catch {
            reporter.problem(error)
            if reporter.workedThisAttempt { backoff.reset() }
            if signal.wait(seconds: error.retryAfter ?? backoff.next()) { return }
          }
        }
      }
      return started
    } catch {
      sink.post(.device(DeviceStatus(device: device, condition: .failing, detail: "cannot start: \(error)")))
      return nil
    }
  }

  /// Wakes the thread and returns when it has ended; returns whether it was running.
  @discardableResult
  func stop() -> Bool {
    let current = running.withLock { running in
      defer { running = nil }
      return running
    }
    guard let current else { return false }
    current.signal.stop()
    current.thread.join()
    return true
  }
}

/// What a device is made from: its own settings, and how long it waits before it retries.
public protocol DeviceSettings: Sendable {
  var backoff: Backoff { get }
}

/// One attempt at a device, made from its settings: it runs until `signal` stops it (returns)
/// or the device fails (throws), reporting what it reads as it goes. Made on the device's own
/// thread, hence `SendableMetatype`.
protocol DeviceSession: SendableMetatype {
  associatedtype Settings: DeviceSettings
  init(settings: Settings, signal: StopSignal)
  func run(_ reporter: inout DeviceReporter) throws(DeviceProblem)
}

/// A device of the board on its own `DeviceRunner` thread, with the settings it was made from.
/// Each kind (the barometer, the buttons, a BLE sensor) is this type with its own settings and
/// an initializer saying what its session does.
public final class BoardDevice<Settings: DeviceSettings>: DeviceSource, Sendable {
  public let settings: Settings
  private let runner: DeviceRunner

  typealias Session = @Sendable (Settings, StopSignal, inout DeviceReporter) throws(DeviceProblem) -> Void

  init(settings: Settings, name: String, device: DeviceKind, session: @escaping Session) {
    self.settings = settings
    runner = DeviceRunner(name: name, device: device, backoff: settings.backoff) {
      { reporter, signal throws(DeviceProblem) in try session(settings, signal, &reporter) }
    }
  }

  typealias ThreadSession = (Settings, StopSignal, inout DeviceReporter) throws(DeviceProblem) -> Void

  /// `makeSession` is called once, on the device's thread: what the session keeps from one
  /// attempt to the next (the reporters of devices it reports itself) lives in what it returns.
  init(settings: Settings, name: String, device: DeviceKind, makeSession: @escaping @Sendable () -> ThreadSession) {
    self.settings = settings
    runner = DeviceRunner(name: name, device: device, backoff: settings.backoff) {
      let session = makeSession()
      return { reporter, signal throws(DeviceProblem) in try session(settings, signal, &reporter) }
    }
  }

  /// A device whose every attempt is a new `S` made from the settings and the stop signal.
  convenience init<S: DeviceSession>(settings: Settings, name: String, device: DeviceKind, session _: S.Type)
  where S.Settings == Settings {
    self.init(settings: settings, name: name, device: device) { settings, signal, reporter throws(DeviceProblem) in
      try S(settings: settings, signal: signal).run(&reporter)
    }
  }

  public var name: String { runner.name }
  public func start(sink: any InputSink) { runner.start(sink: sink) }
  public func stop() { runner.stop() }
}
