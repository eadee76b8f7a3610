#if canImport(Glibc)
  import Glibc
#endif

/// A thread-safe FIFO that one consumer drains, waiting for the next element or a deadline on
/// CLOCK_MONOTONIC (so a wall-clock change, say from GPS time, cannot stretch or cut a wait).
///
/// `@unchecked Sendable`: `items` and `head` are only touched inside `condition.locked`.
public final class InputQueue<Element: Sendable>: @unchecked Sendable {
  private let condition = MonotonicCondition()
  private var items: [Element] = []
  private var head = 0

  public init() {}

  public func post(_ element: Element) {
    condition.locked {
      items.append(element)
      condition.signal()
    }
  }

  /// The next element, waiting for one until `deadline` (CLOCK_MONOTONIC seconds; nil or
  /// infinity waits for ever). Returns nil when the deadline passes first.
  public func next(until deadline: Double?) -> Element? {
    condition.locked {
      while head == items.count {
        if !condition.wait(until: deadline) && head == items.count { return nil }
      }
      return dequeueLocked()
    }
  }

  /// Waits until an element is waiting or `deadline` passes (CLOCK_MONOTONIC seconds; nil or
  /// infinity waits for ever), and leaves it in the queue: the consumer then decides, by its
  /// time, whether it goes before something else that fell due meanwhile. True if one waits.
  @discardableResult
  public func wait(until deadline: Double?) -> Bool {
    condition.locked {
      while head == items.count {
        if !condition.wait(until: deadline) && head == items.count { return false }
      }
      return true
    }
  }

  /// The head element, left in the queue.
  public func peek() -> Element? {
    condition.locked { head < items.count ? items[head] : nil }
  }

  /// The next element if one is waiting, without waiting.
  public func poll() -> Element? {
    condition.locked { head < items.count ? dequeueLocked() : nil }
  }

  /// How many elements wait.
  public var count: Int {
    condition.locked { items.count - head }
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
}
