#if canImport(Glibc)
  import Glibc
#endif

/// A stop request that a device thread can sleep on: `wait(seconds:)` returns early when
/// `requestStop()` is called, so backoff sleeps never delay a shutdown.
final class GPSDStopSignal: @unchecked Sendable {
  // The mutex and condition live at stable heap addresses (pthread objects must not move).
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  private var stopped = false

  init() {
    pthread_mutex_init(mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
    condition.deallocate()
  }

  var isStopRequested: Bool {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return stopped
  }

  func requestStop() {
    pthread_mutex_lock(mutex)
    stopped = true
    pthread_cond_broadcast(condition)
    pthread_mutex_unlock(mutex)
  }

  /// Sleeps up to `seconds` (monotonic); true if a stop was requested.
  func wait(seconds: Double) -> Bool {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let total = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 + max(0, seconds)
    var deadline = timespec(
      tv_sec: Int(total.rounded(.down)), tv_nsec: Int((total - total.rounded(.down)) * 1e9))
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    while !stopped {
      if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
    }
    return stopped
  }
}

/// A plain POSIX thread for a device loop: blocking C calls (libgps's `select`/`recv`) belong
/// on their own thread, not on Swift's cooperative pool.
final class GPSDWorkerThread: @unchecked Sendable {
  private var thread = pthread_t()
  private let body: () -> Void

  private init(body: @escaping @Sendable () -> Void) {
    self.body = body
  }

  /// Starts `body` on a new thread that blocks SIGPIPE (a write to a peer that has gone then
  /// fails with EPIPE instead of killing the process); nil if the thread could not be created.
  static func start(_ body: @escaping @Sendable () -> Void) -> GPSDWorkerThread? {
    let worker = GPSDWorkerThread(body: body)
    let retained = Unmanaged.passRetained(worker).toOpaque()
    let status = pthread_create(
      &worker.thread, nil,
      { argument in
        guard let argument else { return nil }
        let worker = Unmanaged<GPSDWorkerThread>.fromOpaque(argument).takeRetainedValue()
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        worker.body()
        return nil
      }, retained)
    if status != 0 {
      Unmanaged<GPSDWorkerThread>.fromOpaque(retained).release()
      return nil
    }
    return worker
  }

  /// Waits for the thread to finish.
  func join() {
    pthread_join(thread, nil)
  }
}
