import CLinuxShims
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A thread-safe FIFO that one consumer drains, waiting for the next element or a deadline on
/// CLOCK_MONOTONIC (so a wall-clock change, say from GPS time, cannot stretch or cut a wait).
///
/// The wait is a futex on a sequence word that every `post` bumps: a waiter sleeps only while
/// the word still holds the value it read before finding the queue empty, so a post between
/// its look and its sleep is never missed, and a post with nobody waiting makes no system
/// call. Why not a pthread condition variable: glibc takes the mutex back after a timed wait
/// as if contended, so each of the engine's timed waits (one a recorded second) cost a second
/// system call, a FUTEX_WAKE that woke nobody.
///
/// Its methods are `@inlinable`, so that the engine's module specializes them for its own
/// message type: unspecialized, every call looked up the generic lock's and array's type
/// metadata at run time (a locked hash table), several times a recorded second.
///
/// `@unchecked Sendable`: the items are behind a Mutex, and the two words are only read and
/// changed through the shims' atomics and futex calls.
public final class InputQueue<Element: Sendable>: @unchecked Sendable {
  @usableFromInline
  struct Items {
    @usableFromInline var items: [Element] = []
    @usableFromInline var head = 0

    @inlinable init() {}
  }

  @usableFromInline let state = Mutex(Items())
  /// [0]: the sequence word posts bump; [1]: how many threads wait on it. Never moves.
  @usableFromInline let words: UnsafeMutablePointer<UInt32>

  @inlinable
  public init() {
    words = .allocate(capacity: 2)
    words.initialize(repeating: 0, count: 2)
  }

  @inlinable
  deinit { words.deallocate() }

  @inlinable var sequence: UnsafeMutablePointer<UInt32> { words }
  @inlinable var waiters: UnsafeMutablePointer<UInt32> { words + 1 }

  @inlinable
  public func post(_ element: Element) {
    state.withLock { $0.items.append(element) }
    shim_word_add(sequence, 1)
    if shim_word_load(waiters) > 0 { shim_word_wake(sequence) }
  }

  /// The next element, waiting for one until `deadline` (CLOCK_MONOTONIC seconds; nil or
  /// infinity waits for ever). Returns nil when the deadline passes first.
  @inlinable
  public func next(until deadline: Double?) -> Element? {
    guard wait(until: deadline) else { return nil }
    return poll()
  }

  /// Waits until an element is waiting or `deadline` passes (CLOCK_MONOTONIC seconds; nil or
  /// infinity waits for ever), and leaves it in the queue: the consumer then decides, by its
  /// time, whether it goes before something else that fell due meanwhile. True if one waits.
  @inlinable
  @discardableResult
  public func wait(until deadline: Double?) -> Bool {
    while true {
      let seen = shim_word_load(sequence)
      if count > 0 { return true }
      shim_word_add(waiters, 1)
      let result = shim_word_wait(sequence, seen, deadline ?? .infinity)
      shim_word_add(waiters, UInt32.max)  // - 1
      if result == ETIMEDOUT { return count > 0 }
    }
  }

  /// The head element, left in the queue.
  @inlinable
  public func peek() -> Element? {
    state.withLock { $0.head < $0.items.count ? $0.items[$0.head] : nil }
  }

  /// The next element if one is waiting, without waiting.
  @inlinable
  public func poll() -> Element? {
    state.withLock { queue in
      guard queue.head < queue.items.count else { return nil }
      let element = queue.items[queue.head]
      queue.head += 1
      if queue.head > 1024 && queue.head * 2 > queue.items.count {
        queue.items.removeFirst(queue.head)
        queue.head = 0
      }
      return element
    }
  }

  /// How many elements wait.
  @inlinable
  public var count: Int {
    state.withLock { $0.items.count - $0.head }
  }
}
