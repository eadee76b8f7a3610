#if canImport(Glibc)
  import Glibc
#endif

/// A thread-safe FIFO that one consumer drains, waiting for the next element or a deadline on
/// CLOCK_MONOTONIC (so a wall-clock change, say from GPS time, cannot stretch or cut a wait).
public final class InputQueue<Element: Sendable>: @unchecked Sendable {
  // pthread objects must not move in memory: they live on the heap.
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  private var items: [Element] = []
  private var head = 0

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

  public func post(_ element: Element) {
    pthread_mutex_lock(mutex)
    items.append(element)
    pthread_cond_signal(condition)
    pthread_mutex_unlock(mutex)
  }

  /// The next element, waiting for one until `deadline` (CLOCK_MONOTONIC seconds; nil or
  /// infinity waits for ever). Returns nil when the deadline passes first.
  public func next(until deadline: Double?) -> Element? {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    while head == items.count {
      if let deadline, deadline.isFinite {
        var spec = timespec()
        let whole = deadline.rounded(.down)
        spec.tv_sec = Int(whole)
        spec.tv_nsec = Int((deadline - whole) * 1e9)
        if pthread_cond_timedwait(condition, mutex, &spec) == ETIMEDOUT, head == items.count {
          return nil
        }
      } else {
        pthread_cond_wait(condition, mutex)
      }
    }
    return dequeueLocked()
  }

  /// Takes the head element; the mutex is held.
  private func dequeueLocked() -> Element {
    let element = items[head]
    head += 1
    if head > 1024 && head * 2 > items.count {
      items.removeFirst(head)
      head = 0
    }
    return element
  }

  /// The head element, left in the queue.
  public func peek() -> Element? {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return head < items.count ? items[head] : nil
  }

  /// The next element if one is waiting, without waiting.
  public func poll() -> Element? {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    guard head < items.count else { return nil }
    return dequeueLocked()
  }

  /// How many elements wait.
  public var count: Int {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return items.count - head
  }
}
