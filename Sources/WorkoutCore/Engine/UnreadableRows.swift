/// A session's rows that a damaged record made unreadable (a flipped type byte: a NULL or text
/// where a number must be): they cannot be placed in the ride, and are left out of what is read
/// of it.
public struct UnreadableRows: Sendable, Hashable, Codable {
  public var points = 0
  public var events = 0
  public var laps = 0

  public init(points: Int = 0, events: Int = 0, laps: Int = 0) {
    self.points = points
    self.events = events
    self.laps = laps
  }

  public var isEmpty: Bool { points == 0 && events == 0 && laps == 0 }

  /// "2 points, 1 event": what cannot be read, for a log line or `show`.
  public var description: String {
    [(points, "point"), (events, "event"), (laps, "lap")].filter { $0.0 > 0 }
      .map { "\($0.0) \($0.1)\($0.0 == 1 ? "" : "s")" }.joined(separator: ", ")
  }
}
