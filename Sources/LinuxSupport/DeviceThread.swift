import CLinuxShims
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A stop request a device thread can sleep on: `wait(seconds:)` returns early when `stop()` is
/// called, so a backoff sleep never delays a shutdown; and `poll(_:until:)` waits on the
/// device's own descriptors and the stop request together (an eventfd that becomes readable at
/// `stop()`), so a device loop blocks with no timeout at all instead of waking to check a flag.
///
/// `@unchecked Sendable`: `stopped` is only touched inside `condition.locked`.
public final class StopSignal: @unchecked Sendable {
  private let condition = MonotonicCondition()
  private var stopped = false
  /// Readable once `stop()` was called; nil if the kernel refused an eventfd, and then `poll`
  /// falls back to waking every `fallbackInterval` to look at the flag.
  private let event = WakeEvent()
  static let fallbackInterval = 0.25

  public init() {}

  public var isStopRequested: Bool {
    condition.locked { stopped }
  }

  public func stop() {
    condition.locked {
      stopped = true
      condition.broadcast()
    }
    event?.signal()
  }

  /// Sleeps up to `seconds` on CLOCK_MONOTONIC; returns true if a stop was requested.
  @discardableResult
  public func wait(seconds: Double) -> Bool {
    let deadline = SystemClocks.monotonic() + max(0, seconds)
    return condition.locked {
      while !stopped {
        if !condition.wait(until: deadline) { break }
      }
      return stopped
    }
  }

  /// `poll(2)` on `descriptors` and the stop request, until one is ready or `deadline`
  /// (CLOCK_MONOTONIC seconds; nil waits for ever). `revents` are set in `descriptors`;
  /// returns true if a stop was requested. EINTR is retried; another poll failure is thrown.
  public func poll(_ descriptors: inout [pollfd], until deadline: Double?) throws(SystemError) -> Bool {
    var all = descriptors
    if let event { all.append(event.pollEntry) }
    while true {
      if isStopRequested { return true }
      var timeout: Double? = deadline.map { max(0, $0 - SystemClocks.monotonic()) }
      if event == nil { timeout = min(timeout ?? Self.fallbackInterval, Self.fallbackInterval) }
      // Rounded up to whole milliseconds: a deadline is never woken for early.
      let milliseconds = timeout.map { Int32(min(($0 * 1000).rounded(.up), Double(Int32.max))) } ?? -1
      for index in all.indices { all[index].revents = 0 }
      let ready = Glibc.poll(&all, nfds_t(all.count), milliseconds)
      if ready < 0 {
        if errno == EINTR { continue }
        throw SystemError("poll", errno: errno)
      }
      for index in descriptors.indices { descriptors[index].revents = all[index].revents }
      if isStopRequested { return true }
      if ready > 0 || event != nil || deadline.map({ SystemClocks.monotonic() >= $0 }) ?? false { return false }
    }
  }
}

/// A plain POSIX thread for a device loop: blocking C calls (poll, ioctl, libgps reads) belong on
/// their own thread, not on Swift's cooperative pool. `join()` waits for it to end. SIGPIPE is
/// blocked in it.
///
/// `@unchecked Sendable`: `thread` is written once, by `pthread_create` before the handle is
/// returned, and only read afterwards (`join`).
public final class DeviceThread: @unchecked Sendable {
  private var thread = pthread_t()

  private final class Body {
    let name: String
    let number: Int
    let run: () -> Void
    init(name: String, number: Int, _ run: @escaping () -> Void) {
      self.name = name
      self.number = number
      self.run = run
    }
  }

  private init() {}

  /// Every thread started here that has not returned yet, by a number of its own: how a stop
  /// shows that every part joined what it started (`running`).
  private static let live = Mutex<(next: Int, names: [Int: String])>((0, [:]))

  /// The names of the threads started here that are still running, oldest first.
  public static var running: [String] {
    live.withLock { live in live.names.sorted { $0.key < $1.key }.map(\.value) }
  }

  private static func enlist(_ name: String) -> Int {
    live.withLock { live in
      live.next += 1
      live.names[live.next] = name
      return live.next
    }
  }

  private static func discharge(_ number: Int) {
    _ = live.withLock { $0.names.removeValue(forKey: number) }
  }

  /// Starts `body` on a new thread named `name` (at most 15 characters show in `ps`).
  public static func start(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) -> DeviceThread {
    try start(name: name, detached: false, body)
  }

  /// Starts `body` on a thread nobody joins (a control client's): its resources go back to the
  /// system when it returns.
  public static func detach(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
    _ = try start(name: name, detached: true, body)
  }

  /// Lowers the calling thread's scheduling priority to `nice` (0 to 19), for work that may
  /// take a while but must never hold up the engine (the exports). Linux keeps the nice value
  /// per thread: `setpriority(PRIO_PROCESS, 0, …)` applies to the caller alone (setpriority(2),
  /// BUGS). Raising it again would need CAP_SYS_NICE, so this is for threads that stay low.
  public static func lowerThisThreadsPriority(toNice nice: Int32) throws(SystemError) {
    guard setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) == 0 else {
      throw SystemError("setpriority", errno: errno, context: "nice \(nice)")
    }
  }

  private static func start(
    name: String, detached: Bool, _ body: @escaping @Sendable () -> Void
  ) throws(SystemError) -> DeviceThread {
    let handle = DeviceThread()
    let number = enlist(name)
    let context = Unmanaged.passRetained(Body(name: name, number: number, body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
    let result = pthread_create(
      &handle.thread, &attributes,
      { context in
        let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
        shim_name_this_thread(String(body.name.prefix(15)))
        // A write to a peer that has gone (gpsd, a socket) must fail with EPIPE, not kill the
        // process, even where SIGPIPE is not ignored process-wide (a test runner).
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        body.run()
        DeviceThread.discharge(body.number)
        return nil
      }, context)
    guard result == 0 else {
      Unmanaged<Body>.fromOpaque(context).release()
      discharge(number)
      throw SystemError("pthread_create", errno: result, context: name)
    }
    return handle
  }

  public func join() {
    pthread_join(thread, nil)
  }
}

/// The wait before the next attempt at a device that failed: doubling from `initial` to
/// `maximum`, back to `initial` after a success.
public struct Backoff: Sendable, Hashable {
  public let initial: Double
  public let maximum: Double
  public private(set) var current: Double

  public init(initial: Double = 1, maximum: Double = 30) {
    self.initial = max(0.01, initial)
    self.maximum = max(self.initial, maximum)
    current = self.initial
  }

  /// The wait to use now; the next one will be twice as long (up to `maximum`).
  public mutating func next() -> Double {
    defer { current = min(current * 2, maximum) }
    return current
  }

  public mutating func reset() { current = initial }
}
