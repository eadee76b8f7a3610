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

/// A lap's (or a whole workout's) training figures, kept when it closes: what a file's lap and
/// session carry beside their time in zone.
public struct StretchMetrics: Sendable, Hashable, Codable {
  /// Normalized power, W: nil before 30 s of power.
  public var normalizedPower: Double?
  /// Joules of work; nil without power.
  public var work: Double?
  /// Recorded seconds with power.
  public var powerSeconds: Int
  public var kilocalories: Double?
  public var intensityFactor: Double?
  public var trainingStressScore: Double?

  public init(_ metrics: TrainingMetrics, energy: EnergyTally, ftp: Double?) {
    normalizedPower = metrics.normalizedPower
    work = metrics.powerSamples > 0 ? metrics.work : nil
    powerSeconds = metrics.powerSamples
    kilocalories = energy.kilocalories
    intensityFactor = ftp.flatMap { metrics.intensityFactor(ftp: $0) }
    trainingStressScore = ftp.flatMap { metrics.trainingStressScore(ftp: $0) }
  }
}

/// A stored workout's zones and metrics, derived from its points (the truth, migrated with the
/// schema), so any configuration can be applied afterwards: the one in force during the ride,
/// or another to compare with (re-bucketing, as HealthKit advises for workouts recorded with
/// different zone counts). Fed the points in order (`add`), as a file's writer streams them;
/// memory is per zone and lap, not per point.
public struct SessionAnalyzer: Sendable {
  public struct Result: Sendable, Hashable {
    public var zones: [ZoneBreakdown]
    public var metrics: TrainingMetrics
    public var whole: StretchMetrics
    /// One per lap, in order.
    public var laps: [StretchMetrics]
  }

  private let endTimer: Double
  private let ftp: Double?
  private let rider: RiderProfile?
  private var trackers: [ZoneTracker]
  private var zoneLaps: [[ZoneTimes]]
  private var metrics = TrainingMetrics()
  private var energy = EnergyTally()
  private var lapMetrics = TrainingMetrics()
  private var lapEnergy = EnergyTally()
  private var laps: [StretchMetrics] = []
  /// The lap ends (timer time) not yet reached by the zones, and by the metrics.
  private var zoneEnds: ArraySlice<Double>
  private var metricEnds: ArraySlice<Double>

  /// `lapEnds`: the timer time at which each lap ended, in order (the last at the workout's
  /// end); `endTimer`: the workout's timer time at its end; `ftp` for IF and TSS; `rider` for
  /// calories from heart rate.
  public init(
    zones: [ZoneConfiguration], lapEnds: [Double], endTimer: Double, ftp: Double? = nil, rider: RiderProfile? = nil,
    freshness: Double = 5
  ) {
    self.endTimer = endTimer
    self.ftp = ftp
    self.rider = rider
    trackers = zones.map { ZoneTracker(configuration: $0, freshness: freshness) }
    zoneLaps = Array(repeating: [], count: zones.count)
    zoneEnds = lapEnds.filter { $0 < endTimer }[...]
    metricEnds = zoneEnds
  }

  private mutating func closeZoneLaps(upTo timer: Double) {
    while let end = zoneEnds.first, end <= timer {
      for index in trackers.indices { zoneLaps[index].append(trackers[index].closeLap(atTimer: end)) }
      zoneEnds = zoneEnds.dropFirst()
    }
  }

  private mutating func closeMetricLap() {
    laps.append(StretchMetrics(lapMetrics, energy: lapEnergy, ftp: ftp))
    lapMetrics = TrainingMetrics()
    lapEnergy = EnergyTally()
  }

  /// The next recorded second. A zone's time runs from a sample to the next, so a sample at a
  /// lap's end starts the next lap's; a point's power and heart rate are of the second up to
  /// it, so a point at a lap's end is that lap's (as the stored laps count it).
  public mutating func add(_ sample: TrainingSample) {
    closeZoneLaps(upTo: sample.timer)
    while let end = metricEnds.first, end < sample.timer {
      closeMetricLap()
      metricEnds = metricEnds.dropFirst()
    }
    if let watts = sample.power {
      metrics.addPower(watts)
      lapMetrics.addPower(watts)
    }
    if let bpm = sample.heartRate {
      metrics.addHeartRate(bpm)
      lapMetrics.addHeartRate(bpm)
    }
    energy.add(sample, rider: rider)
    lapEnergy.add(sample, rider: rider)
    for index in trackers.indices {
      _ = trackers[index].sample(sample.value(of: trackers[index].configuration.quantity), atTimer: sample.timer)
    }
  }

  /// The figures, every lap closed at its end.
  public func finish() -> Result {
    var copy = self
    copy.closeZoneLaps(upTo: endTimer)
    for index in copy.trackers.indices {
      copy.zoneLaps[index].append(copy.trackers[index].closeLap(atTimer: endTimer))
    }
    while !copy.metricEnds.isEmpty {
      copy.closeMetricLap()
      copy.metricEnds = copy.metricEnds.dropFirst()
    }
    copy.closeMetricLap()
    let breakdowns = copy.trackers.indices.map {
      ZoneBreakdown(
        configuration: copy.trackers[$0].configuration, workout: copy.trackers[$0].workout, laps: copy.zoneLaps[$0])
    }
    return Result(
      zones: breakdowns, metrics: copy.metrics, whole: StretchMetrics(copy.metrics, energy: copy.energy, ftp: ftp),
      laps: copy.laps)
  }
}

public enum SessionAnalysis {
  /// A workout's time in zone and metrics: `SessionAnalyzer` over `samples`.
  public static func analyze(
    _ samples: some Sequence<TrainingSample>, zones: [ZoneConfiguration], lapEnds: [Double], endTimer: Double,
    freshness: Double = 5
  ) -> (zones: [ZoneBreakdown], metrics: TrainingMetrics) {
    var analyzer = SessionAnalyzer(zones: zones, lapEnds: lapEnds, endTimer: endTimer, freshness: freshness)
    for sample in samples { analyzer.add(sample) }
    let result = analyzer.finish()
    return (result.zones, result.metrics)
  }

  /// A zone configuration from its event's detail ("heartRate user 0-120,...,175- bpm", as
  /// `WorkoutPlan.describe` writes it); nil when this binary cannot read it.
  public static func configuration(fromEvent detail: String) -> ZoneConfiguration? {
    let words = detail.split(separator: " ", maxSplits: 2)
    guard words.count == 3, let quantity = ZoneQuantity(rawValue: String(words[0])),
      let source = ZoneSource(rawValue: String(words[1]))
    else { return nil }
    return try? ZoneConfiguration(parsing: String(words[2]), quantity: quantity, source: source)
  }
}
