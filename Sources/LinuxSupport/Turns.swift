/// A few places for a costly job that many threads may ask for at once (a ride's file made for
/// a download): each waits for a free place, so what the jobs hold at once is bounded by the
/// places, not by the number asking.
public final class Turns: @unchecked Sendable {
  public let places: Int
  private let condition = MonotonicCondition()
  private var taken = 0

  public init(places: Int) {
    precondition(places > 0)
    self.places = places
  }

  /// Runs `body` in a place, once one is free; nil, with nothing run, when `giveUp` (asked
  /// every 0.2 s while waiting) says so.
  public func run<T>(giveUp: () -> Bool, _ body: () throws -> T) rethrows -> T? {
    let got = condition.locked { () -> Bool in
      while taken >= places {
        if giveUp() { return false }
        _ = condition.wait(until: SystemClocks.monotonic() + 0.2)
      }
      taken += 1
      return true
    }
    guard got else { return nil }
    defer {
      condition.locked { taken -= 1 }
      condition.signal()
    }
    return try body()
  }
}
