#if canImport(Glibc)
  import Glibc
#endif

/// A pthread mutex with a condition variable whose timed waits run on CLOCK_MONOTONIC, so a
/// wall-clock change (GPS time, NTP) can neither stretch nor cut a wait.
///
/// `@unchecked Sendable`: the pthread mutex and condition are made for use from any thread;
/// the pointers to them never change after `init`.
public final class MonotonicCondition: @unchecked Sendable {
  // pthread objects must not move in memory: they live on the heap.
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  public init() {
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

  /// Runs `body` holding the mutex.
  public func locked<T>(_ body: () throws -> T) rethrows -> T {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }

  /// Wakes one waiter (with or without the mutex held: POSIX allows both).
  public func signal() { pthread_cond_signal(condition) }

  /// Wakes every waiter (with or without the mutex held).
  public func broadcast() { pthread_cond_broadcast(condition) }

  /// Waits (holding the mutex) until woken or until `deadline`, CLOCK_MONOTONIC seconds (nil or
  /// infinity: no deadline). Returns false when the deadline passed.
  public func wait(until deadline: Double?) -> Bool {
    guard let deadline, deadline.isFinite else {
      pthread_cond_wait(condition, mutex)
      return true
    }
    let whole = deadline.rounded(.down)
    var spec = timespec(tv_sec: Int(whole), tv_nsec: Int((deadline - whole) * 1e9))
    return pthread_cond_timedwait(condition, mutex, &spec) != ETIMEDOUT
  }
}
