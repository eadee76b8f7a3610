#if canImport(Glibc)
  import Glibc
#endif

/// The threads a server gives its clients, one each and detached: at most `limit` clients at
/// once and `perPeer` from one peer (`ClientCounts`), and a stop waits for the last thread to
/// end (each client has a deadline of its own).
///
/// A client's place is given back before its connection is closed (`start`'s `closing`), so a
/// client that sees the close and connects again finds its place free, as a server that counts
/// connections does; its thread counts as running until the close is done.
///
/// `@unchecked Sendable`: `counts` and `running` are only touched inside `condition.locked`.
public final class ClientThreads: @unchecked Sendable {
  public var limit: Int { counts.limit }
  private let condition = MonotonicCondition()
  private var counts: ClientCounts
  private var running = 0

  /// `perPeer`: at most this many from one peer; by default, as many as `limit`.
  public init(limit: Int, perPeer: Int? = nil) {
    counts = ClientCounts(limit: limit, perPeer: perPeer ?? limit)
  }

  /// Runs `body` on a detached thread named `name`, then gives the client's place back, then
  /// runs `closing` (the connection's close). Returns nil when it started; else, with nothing
  /// run, why not (a thread the system refused is `.full`: the server has no room).
  public func start(
    name: String, peer: String = "", _ body: @escaping @Sendable () -> Void,
    closing: @escaping @Sendable () -> Void
  ) -> ClientCounts.Refusal? {
    let refusal = condition.locked { () -> ClientCounts.Refusal? in
      let refusal = counts.admit(peer)
      if refusal == nil { running += 1 }
      return refusal
    }
    if let refusal { return refusal }
    do {
      try DeviceThread.detach(name: name) { [self] in
        body()
        condition.locked { counts.release(peer) }
        closing()
        ended()
      }
      return nil
    } catch {
      condition.locked { counts.release(peer) }
      ended()
      return .full
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
