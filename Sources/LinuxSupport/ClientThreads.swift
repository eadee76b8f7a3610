#if canImport(Glibc)
  import Glibc
#endif

/// The threads a server gives its clients, one each and detached: at most `limit` at once, and
/// a stop waits for the last of them to end (each client has a deadline of its own).
///
/// `@unchecked Sendable`: `count` is only touched inside `condition.locked`.
public final class ClientThreads: @unchecked Sendable {
  public let limit: Int
  private let condition = MonotonicCondition()
  private var count = 0

  public init(limit: Int) {
    self.limit = limit
  }

  /// Runs `body` on a detached thread named `name`; false, with nothing run, when `limit`
  /// clients are running already or the system refused a thread.
  public func start(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
    let admitted = condition.locked { () -> Bool in
      guard count < limit else { return false }
      count += 1
      return true
    }
    guard admitted else { return false }
    do {
      try DeviceThread.detach(name: name) { [self] in
        defer { ended() }
        body()
      }
      return true
    } catch {
      ended()
      return false
    }
  }

  /// Waits until no client runs, or until `deadline` (CLOCK_MONOTONIC seconds); true when none runs.
  public func waitUntilNone(until deadline: Double) -> Bool {
    condition.locked {
      while count > 0 {
        if !condition.wait(until: deadline) { break }
      }
      return count == 0
    }
  }

  private func ended() {
    condition.locked {
      count -= 1
      condition.broadcast()
    }
  }
}
