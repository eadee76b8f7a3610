/// A range of zones the rider means to stay in for a workout (an interval at threshold, an
/// endurance ride in zone 2): the buzzer and the LED say when the announced zone leaves the
/// range and when it is back (`ZoneTracker.announceAfter` keeps a wavering heart rate from
/// alerting every second). Zones are counted from 1, as the rider sees them.
public struct TargetZone: Sendable, Hashable, Codable {
  public var quantity: ZoneQuantity
  public var lower: Int
  public var upper: Int
  /// Whether the last announced zone was outside the range; nil until one is known.
  public var outside: Bool?

  public init(quantity: ZoneQuantity, lower: Int, upper: Int) throws(ZoneConfigurationError) {
    guard (1...9).contains(lower), (1...9).contains(upper), lower <= upper else {
      throw .syntax("a target is a zone or a range of zones from 1 to 9, low to high (\"2\", \"2-3\")")
    }
    self.quantity = quantity
    self.lower = lower
    self.upper = upper
  }

  /// "3" or "2-3".
  public init(parsing text: String, quantity: ZoneQuantity) throws(ZoneConfigurationError) {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false).map {
      Int($0.trimmingCharacters(in: " "))
    }
    guard parts.count == 1 || parts.count == 2, let lower = parts.first ?? nil, let upper = parts.last ?? nil else {
      throw .syntax("a target is a zone or a range of zones from 1 to 9, low to high (\"2\", \"2-3\"), not \"\(text)\"")
    }
    try self.init(quantity: quantity, lower: lower, upper: upper)
  }

  /// The targets a session's `targetZoneSet` event details leave in force, in order ("heartRate
  /// 2-3", "heartRate off"); details this binary cannot read are skipped. nil for none.
  public static func fromEvents(_ details: [String]) -> [TargetZone]? {
    var targets: [TargetZone] = []
    for detail in details {
      let words = detail.split(separator: " ", maxSplits: 1)
      guard words.count == 2, let quantity = ZoneQuantity(rawValue: String(words[0])) else { continue }
      if words[1] == "off" {
        targets.removeAll { $0.quantity == quantity }
      } else if let target = try? TargetZone(parsing: String(words[1]), quantity: quantity) {
        targets.removeAll { $0.quantity == quantity }
        targets.append(target)
      }
    }
    return targets.isEmpty ? nil : targets
  }

  public func contains(zone: Int) -> Bool { (lower...upper).contains(zone) }

  public var text: String { lower == upper ? "\(lower)" : "\(lower)-\(upper)" }
}

extension Substring {
  fileprivate func trimmingCharacters(in set: Character) -> Substring {
    var text = self
    while text.first == set { text.removeFirst() }
    while text.last == set { text.removeLast() }
    return text
  }
}
