#if canImport(Glibc)
  import Glibc
#endif

/// The threads a server gives its clients, one each and detached: at most `limit` clients at
/// once, and a stop waits for the last thread to end (each client has a deadline of its own).
///
/// A client's place is given back before its connection is closed (`start`'s `closing`), so a
/// client that sees the close and connects again finds its place free, as a server that counts
/// connections does; its thread counts as running until the close is done.
///
/// `@unchecked Sendable`: `admitted` and `running` are only touched inside `condition.locked`.
public final class ClientThreads: @unchecked Sendable {
  public let limit: Int
  private let condition = MonotonicCondition()
  private var admitted = 0
  private var running = 0

  public init(limit: Int) {
    self.limit = limit
  }

  /// Runs `body` on a detached thread named `name`, then gives the client's place back, then
  /// runs `closing` (the connection's close); false, with nothing run, when `limit` clients
  /// are admitted already or the system refused a thread.
  public func start(
    name: String, _ body: @escaping @Sendable () -> Void, closing: @escaping @Sendable () -> Void
  ) -> Bool {
    let taken = condition.locked { () -> Bool in
      guard admitted < limit else { return false }
      admitted += 1
      running += 1
      return true
    }
    guard taken else { return false }
    do {
      try DeviceThread.detach(name: name) { [self] in
        body()
        condition.locked { admitted -= 1 }
        closing()
        ended()
      }
      return true
    } catch {
      condition.locked { admitted -= 1 }
      ended()
      return false
    }
  }

  /// Waits until no client thread runs, or until `deadline` (CLOCK_MONOTONIC seconds); true
  /// when none runs.
  public func waitUntilNone(until deadline: Double) -> Bool {
    condition.locked {
      while running > 0 {
        if !condition.wait(until: deadline) { break }
      }
      return running == 0
    }
  }

  private func ended() {
    condition.locked {
      running -= 1
      condition.broadcast()
    }
  }
}
