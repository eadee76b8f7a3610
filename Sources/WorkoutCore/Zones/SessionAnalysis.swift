/// One recorded second as the zones and training metrics read it.
public struct TrainingSample: Sendable, Hashable {
  /// Timer time of the point, s (pauses excluded).
  public var timer: Double
  public var heartRate: Int?
  public var power: Int?

  public init(timer: Double, heartRate: Int?, power: Int?) {
    self.timer = timer
    self.heartRate = heartRate
    self.power = power
  }

  /// The sample's value of `quantity`, if it has one.
  public func value(of quantity: ZoneQuantity) -> Double? {
    switch quantity {
    case .heartRate: heartRate.map(Double.init)
    case .cyclingPower: power.map(Double.init)
    }
  }
}

/// Time in zone of one configuration over a stored workout: the whole and each lap.
public struct ZoneBreakdown: Sendable, Hashable, Codable {
  public var configuration: ZoneConfiguration
  public var workout: ZoneTimes
  /// One per lap, in order.
  public var laps: [ZoneTimes]
}

/// A stored workout's zones and metrics, derived from its points (the truth, migrated with the
/// schema), so any configuration can be applied afterwards: the one in force during the ride,
/// or another to compare with (re-bucketing, as HealthKit advises for workouts recorded with
/// different zone counts). Streams the points; memory is per zone and lap, not per point.
public enum SessionAnalysis {
  /// `lapEnds`: the timer time at which each lap ended, in order (the last at the workout's
  /// end); `endTimer`: the workout's timer time at its end.
  public static func analyze(
    _ samples: some Sequence<TrainingSample>, zones: [ZoneConfiguration], lapEnds: [Double], endTimer: Double,
    freshness: Double = 5
  ) -> (zones: [ZoneBreakdown], metrics: TrainingMetrics) {
    var trackers = zones.map { ZoneTracker(configuration: $0, freshness: freshness) }
    var laps = Array(repeating: [ZoneTimes](), count: trackers.count)
    var metrics = TrainingMetrics()
    var ends = lapEnds.filter { $0 < endTimer }[...]
    func closeLaps(upTo timer: Double) {
      while let end = ends.first, end <= timer {
        for index in trackers.indices { laps[index].append(trackers[index].closeLap(atTimer: end)) }
        ends = ends.dropFirst()
      }
    }
    for sample in samples {
      closeLaps(upTo: sample.timer)
      if let watts = sample.power { metrics.addPower(watts) }
      if let bpm = sample.heartRate { metrics.addHeartRate(bpm) }
      for index in trackers.indices {
        _ = trackers[index].sample(sample.value(of: trackers[index].configuration.quantity), atTimer: sample.timer)
      }
    }
    closeLaps(upTo: endTimer)
    for index in trackers.indices { laps[index].append(trackers[index].closeLap(atTimer: endTimer)) }
    let breakdowns = trackers.indices.map {
      ZoneBreakdown(configuration: trackers[$0].configuration, workout: trackers[$0].workout, laps: laps[$0])
    }
    return (breakdowns, metrics)
  }

  /// A zone configuration from its event's detail ("heartRate user 0-120,...,175- bpm", as
  /// `SessionEngine.describe` writes it); nil when this binary cannot read it.
  public static func configuration(fromEvent detail: String) -> ZoneConfiguration? {
    let words = detail.split(separator: " ", maxSplits: 2)
    guard words.count == 3, let quantity = ZoneQuantity(rawValue: String(words[0])),
      let source = ZoneSource(rawValue: String(words[1]))
    else { return nil }
    return try? ZoneConfiguration(parsing: String(words[2]), quantity: quantity, source: source)
  }
}
