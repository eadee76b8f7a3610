/// What a zone configuration divides: heart rate in count/min or cycling power in watts (as
/// HealthKit's `HKWorkoutZoneConfiguration` takes a quantity type and its unit).
public enum ZoneQuantity: String, Sendable, Hashable, Codable, CaseIterable {
  case heartRate
  case cyclingPower

  /// The unit boundaries are given in.
  public var unit: String {
    switch self {
    case .heartRate: "count/min"
    case .cyclingPower: "W"
    }
  }

  /// Other spellings of the unit a rider may write ("bpm", "watts").
  static func unit(_ text: String) -> ZoneQuantity? {
    switch text.lowercased() {
    case "count/min", "bpm", "/min": .heartRate
    case "w", "watt", "watts": .cyclingPower
    default: nil
    }
  }
}

/// Where a configuration comes from, as HealthKit's zone sources: computed by the system (age,
/// resting heart rate, FTP), the rider's own from the config file, or set for one workout.
public enum ZoneSource: String, Sendable, Hashable, Codable, CaseIterable {
  case system
  case user
  case custom
}

/// One zone: from `lower` (inclusive) to `upper` (exclusive); the first zone is open below
/// (from 0), the last open above (`upper` nil).
public struct Zone: Sendable, Hashable, Codable {
  public var lower: Double
  public var upper: Double?

  public func contains(_ value: Double) -> Bool {
    value >= lower && upper.map { value < $0 } ?? true
  }
}

/// Why a zone configuration is refused: each case names the rule it breaks.
public enum ZoneConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
  /// 3 to 9 zones.
  case zoneCount(Int)
  /// The first zone starts at 0 (open below).
  case firstNotOpenBelow(Double)
  /// The last zone has no upper bound (open above).
  case lastNotOpenAbove(Double)
  /// Only the last zone is open above.
  case openAboveBeforeTheLast(zone: Int)
  /// A zone ends above where it starts.
  case empty(zone: Int, lower: Double, upper: Double)
  /// Each zone starts where the one before ends: no gap, no overlap.
  case notContiguous(zone: Int, previousUpper: Double, lower: Double)
  /// Boundaries are finite, not negative numbers.
  case notANumber(zone: Int)
  /// The unit of every boundary is the quantity's.
  case unit(given: String, quantity: ZoneQuantity)
  /// Text that is not a zone list.
  case syntax(String)

  public var description: String {
    switch self {
    case .zoneCount(let n): "a zone configuration has 3 to 9 zones, not \(n)"
    case .firstNotOpenBelow(let lower):
      "the first zone must be open below (start at 0), not at \(ZoneConfiguration.format(lower))"
    case .lastNotOpenAbove(let upper):
      "the last zone must be open above (no upper bound), not end at \(ZoneConfiguration.format(upper))"
    case .openAboveBeforeTheLast(let zone): "only the last zone may be open above; zone \(zone) is"
    case .empty(let zone, let lower, let upper):
      "zone \(zone) must end above where it starts (\(ZoneConfiguration.format(lower))–\(ZoneConfiguration.format(upper)))"
    case .notContiguous(let zone, let previousUpper, let lower):
      "zones must be contiguous and not overlap: zone \(zone - 1) ends at \(ZoneConfiguration.format(previousUpper)) "
        + "but zone \(zone) starts at \(ZoneConfiguration.format(lower))"
    case .notANumber(let zone): "zone \(zone) has a boundary that is not a number of 0 or more"
    case .unit(let given, let quantity):
      "boundaries of \(quantity.rawValue) zones are in \(quantity.unit), not \(given)"
    case .syntax(let text): text
    }
  }
}

/// A workout zone configuration, after HealthKit's `HKWorkoutZoneConfiguration`: a quantity,
/// its source, and 3 to 9 zones ordered by boundary, contiguous and not overlapping, the first
/// open below and the last open above. Only a configuration that keeps every rule can be made.
public struct ZoneConfiguration: Sendable, Hashable, Codable {
  public static let zoneCounts = 3...9

  public let quantity: ZoneQuantity
  public let source: ZoneSource
  public let zones: [Zone]

  /// Checks every rule; the first broken one is the error.
  public init(
    quantity: ZoneQuantity, source: ZoneSource, zones: [Zone], unit: String? = nil
  ) throws(ZoneConfigurationError) {
    if let unit, ZoneQuantity.unit(unit) != quantity { throw .unit(given: unit, quantity: quantity) }
    guard Self.zoneCounts.contains(zones.count) else { throw .zoneCount(zones.count) }
    for (index, zone) in zones.enumerated() {
      let number = index + 1
      guard zone.lower.isFinite, zone.lower >= 0, zone.upper.map({ $0.isFinite && $0 >= 0 }) ?? true else {
        throw .notANumber(zone: number)
      }
      if index == 0, zone.lower != 0 { throw .firstNotOpenBelow(zone.lower) }
      if let upper = zone.upper, upper <= zone.lower { throw .empty(zone: number, lower: zone.lower, upper: upper) }
      if index > 0 {
        guard let previousUpper = zones[index - 1].upper else { throw .openAboveBeforeTheLast(zone: index) }
        if previousUpper != zone.lower {
          throw .notContiguous(zone: number, previousUpper: previousUpper, lower: zone.lower)
        }
      }
    }
    if let upper = zones[zones.count - 1].upper { throw .lastNotOpenAbove(upper) }
    self.quantity = quantity
    self.source = source
    self.zones = zones
  }

  /// The zones whose lower bounds, after the first zone's 0, are `boundaries`: 4 boundaries
  /// make 5 zones.
  public init(quantity: ZoneQuantity, source: ZoneSource, boundaries: [Double]) throws(ZoneConfigurationError) {
    var zones: [Zone] = []
    var lower = 0.0
    for boundary in boundaries {
      zones.append(Zone(lower: lower, upper: boundary))
      lower = boundary
    }
    zones.append(Zone(lower: lower, upper: nil))
    try self.init(quantity: quantity, source: source, zones: zones)
  }

  /// Reads "0-120,120-140,140-160,160-175,175-" (zones), or "120,140,160,175" (the
  /// boundaries between them), optionally followed by a unit ("bpm", "W"), as a rider writes
  /// them for `workoutctl zones set`.
  public init(parsing text: String, quantity: ZoneQuantity, source: ZoneSource) throws(ZoneConfigurationError) {
    var body = Substring(text.trimmingWhitespace())
    var unit: String?
    if let space = body.lastIndex(of: " ") {
      let word = body[body.index(after: space)...]
      if word.contains(where: \.isLetter) {
        unit = String(word)
        body = body[..<space]
      }
    }
    let items = body.split(separator: ",", omittingEmptySubsequences: false).map {
      String($0).trimmingWhitespace()
    }
    guard items.count > 0, items.allSatisfy({ !$0.isEmpty }) else {
      throw .syntax("a zone list is boundaries (120,140,160,175) or zones (0-120,120-140,...,175-): '\(text)'")
    }
    func number(_ s: Substring) throws(ZoneConfigurationError) -> Double {
      guard let value = Double(s.trimmingWhitespace()) else { throw .syntax("'\(s)' is not a number in '\(text)'") }
      return value
    }
    if items.contains(where: { $0.contains("-") }) {
      var zones: [Zone] = []
      for item in items {
        let parts = item.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].trimmingWhitespace().isEmpty else {
          throw .syntax("a zone is LOWER-UPPER, or LOWER- for the last: '\(item)' in '\(text)'")
        }
        let upper = parts[1].trimmingWhitespace()
        zones.append(Zone(lower: try number(parts[0]), upper: upper.isEmpty ? nil : try number(Substring(upper))))
      }
      try self.init(quantity: quantity, source: source, zones: zones, unit: unit)
    } else {
      var boundaries: [Double] = []
      for item in items { boundaries.append(try number(Substring(item))) }
      try self.init(quantity: quantity, source: source, boundaries: boundaries)
      if let unit, ZoneQuantity.unit(unit) != quantity { throw .unit(given: unit, quantity: quantity) }
    }
  }

  /// The zone `value` falls in, from 0; the last zone holds everything above.
  public func zoneIndex(of value: Double) -> Int {
    // Few zones (at most 9): a scan from the top is as fast as a search.
    for index in zones.indices.reversed() where value >= zones[index].lower { return index }
    return 0
  }

  /// "0-120,120-140,...,175- bpm": the form `init(parsing:)` reads.
  public var text: String {
    let list = zones.map { "\(Self.format($0.lower))-\($0.upper.map(Self.format) ?? "")" }.joined(separator: ",")
    return list + (quantity == .heartRate ? " bpm" : " W")
  }

  static func format(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
  }
}

extension StringProtocol {
  fileprivate func trimmingWhitespace() -> String {
    String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
  }
}
