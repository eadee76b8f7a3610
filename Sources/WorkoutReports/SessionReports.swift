import Foundation
import WorkoutCore
import WorkoutStore

// What `workoutctl sessions`/`show` print as JSON and the phone's ride page shows: one
// derivation of a stored session, shared by the two.

/// What `sessions` and `show` print for a session.
public struct SessionSummaryJSON: Codable {
  public var id: Int64
  public var activity: String
  public var state: String
  public var start: Double?
  public var end: Double?
  public var elapsed: Double
  public var timer: Double
  public var distance: Double
  public var ascent: Double
  public var descent: Double
  public var points: Int
  public var averageSpeed: Double?
  public var maxSpeed: Double?
  public var averageHeartRate: Double?
  public var maxHeartRate: Double?
  public var laps: Int?

  public init(record: SessionRecord, store: WorkoutStore) throws {
    id = record.id
    activity = record.activity
    state = record.state
    start = record.startWall
    end = record.endWall
    points = record.points
    var totals = IntervalTotals()
    /// Where neither a summary nor the live builder has them: speed and heart rate from the
    /// points' channels.
    var channels: [ChannelTotals]?
    if let summary = try store.summary(of: record) {
      totals = summary.totals
      laps = summary.laps
    } else if let live = try? store.current(of: record) {
      totals = live.builder.totals
      laps = live.builder.lapNumber - 1
      points = live.builder.pointCount
    } else {
      // No summary, and no session this binary can put back together (its activity or state
      // a newer release's, or its record damaged): what its row and its points say, never an
      // error, which would hide every other session of the list with it.
      points = try store.pointCount(sessionID: record.id)
      // The row's figures are its last checkpoint's; its last point, when newer, has the later.
      let last = try store.lastPoint(sessionID: record.id)
      totals.elapsed = max(record.elapsed, last?.elapsed ?? 0)
      totals.timer = max(record.timer, last?.timer ?? 0)
      totals.distance = max(record.distance, last?.distance ?? 0)
      totals.ascent = record.ascent
      totals.descent = record.descent
      channels = try store.channelTotals(sessionID: record.id)
    }
    elapsed = totals.elapsed
    timer = totals.timer
    distance = totals.distance
    ascent = totals.ascent
    descent = totals.descent
    averageSpeed = totals.averageSpeed
    if let channels {
      let heartRate = channels.first { $0.channel == .heartRate }
      maxSpeed = channels.first { $0.channel == .gpsSpeed }?.maximum
      averageHeartRate = heartRate?.average
      maxHeartRate = heartRate?.maximum
    } else {
      maxSpeed = totals.maxSpeed
      averageHeartRate = totals.heartRate.mean
      maxHeartRate = totals.heartRate.maximum
    }
  }
}

/// A stored session's time in zone (whole and per lap) and training metrics, as `show` and
/// `zones rebucket` print them: derived from its points.
public struct TrainingJSON: Codable {
  public struct ZoneJSON: Codable {
    public var quantity: String
    public var source: String
    /// "0-120,120-140,...,175- bpm".
    public var zones: String
    /// Seconds in each zone, from zone 1.
    public var seconds: [Double]
    /// Per lap, seconds in each zone.
    public var laps: [[Double]]
  }

  public struct MetricsJSON: Codable {
    public var workKilojoules: Double?
    public var averagePower: Double?
    public var averagePowerWithoutZeros: Double?
    /// Which of the two the rider's setting made the average ("withZeros", "withoutZeros").
    public var powerAveraging: String
    public var normalizedPower: Double?
    public var ftp: Double?
    public var intensityFactor: Double?
    public var trainingStressScore: Double?
    /// Seconds → best mean power, W.
    public var bestPower: [String: Double]
    public var estimatedFTP: Double?
    public var bestTwentyMinuteHeartRate: Double?
    /// kcal: from the work when there is power, else from heart rate with the rider's age,
    /// weight and sex (`EnergyTally`).
    public var calories: Double?
  }

  /// One lap's training figures (its time in zone is in `zones`).
  public struct LapMetricsJSON: Codable {
    public var workKilojoules: Double?
    public var normalizedPower: Double?
    public var intensityFactor: Double?
    public var trainingStressScore: Double?
    public var calories: Double?

    init(_ figures: StretchMetrics) {
      workKilojoules = figures.work.map { $0 / 1000 }
      normalizedPower = figures.normalizedPower
      intensityFactor = figures.intensityFactor
      trainingStressScore = figures.trainingStressScore
      calories = figures.kilocalories
    }
  }

  /// A multisport workout's activities (one for any other), each derived from its points:
  /// those after its `activity` event and up to the next.
  public struct ActivityJSON: Codable {
    public var number: Int
    public var type: String
    public var startWall: Double?
    public var timer: Double
    public var distance: Double
    public var averageHeartRate: Double?
    public var maxHeartRate: Double?
    public var averagePower: Double?
    /// Per zone configuration (as `zones`), seconds in each zone during this activity.
    public var zones: [[Double]]
  }

  public var zones: [ZoneJSON]
  public var metrics: MetricsJSON
  /// Per lap, in order.
  public var laps: [LapMetricsJSON]
  public var activities: [ActivityJSON]

  /// The session's own zones come from its `zoneConfiguration` events and FTP from its `ftp`
  /// event, unless `zones` (re-bucketing) or `ftp` are given.
  public init(
    store: WorkoutStore, sessionID: Int64, endTimer: Double, events: [EventRecord], laps: [LapRecord],
    firstActivity: String = "", zones override: [ZoneConfiguration]? = nil, ftp overrideFTP: Double? = nil
  ) throws {
    let recorded = RecordedSettings(events: events)
    let configurations = override ?? recorded.zones
    let ftp = overrideFTP ?? recorded.ftp
    let averaging = recorded.powerAveraging
    var lapEnds: [Double] = []
    var sum = 0.0
    for lap in laps {
      sum += lap.timer
      lapEnds.append(sum)
    }
    var analyzer = SessionAnalyzer(
      zones: configurations, lapEnds: lapEnds, endTimer: endTimer, ftp: ftp, rider: recorded.rider)
    // The activities: the first from the session, each further one from its event; a point
    // after an activity's event is that activity's (as a point up to a lap's end is the lap's).
    let changes = events.filter { $0.kind == SessionEvent.Kind.activity.rawValue }.sorted { $0.wall < $1.wall }
    let starts: [(String, Double?)] = [(firstActivity, nil)] + changes.map { ($0.detail ?? "other", $0.wall) }
    var groups = [ActivityTally](repeating: ActivityTally(), count: changes.count + 1)
    var group = 0
    try Self.eachPoint(of: sessionID, in: store) { point in
      analyzer.add(TrainingSample(timer: point.timer, heartRate: point.hr, power: point.power))
      while group < changes.count, point.wall > changes[group].wall { group += 1 }
      groups[group].add(point)
    }
    let analysis = analyzer.finish()
    let (breakdowns, metrics) = (analysis.zones, analysis.metrics)
    self.laps = analysis.laps.map(LapMetricsJSON.init)
    self.zones = breakdowns.map {
      ZoneJSON(
        quantity: $0.configuration.quantity.rawValue, source: $0.configuration.source.rawValue,
        zones: $0.configuration.text, seconds: $0.workout.seconds, laps: $0.laps.map(\.seconds))
    }
    // Each activity's zones: the same configurations, the activity's points only (a second
    // pass over them, for a multisport workout only).
    var activityEnds: [Double] = []
    for group in groups.dropLast() { activityEnds.append(group.last?.timer ?? activityEnds.last ?? 0) }
    var byActivity = breakdowns.map { [$0.workout.seconds] }
    if !changes.isEmpty {
      var split = SessionAnalyzer(zones: configurations, lapEnds: activityEnds, endTimer: endTimer, freshness: 5)
      try Self.eachPoint(of: sessionID, in: store) { point in
        split.add(TrainingSample(timer: point.timer, heartRate: point.hr, power: point.power))
      }
      byActivity = split.finish().zones.map { $0.laps.map(\.seconds) }
    }
    activities = groups.enumerated().map { index, group in
      let before = index == 0 ? nil : groups[index - 1].last
      return ActivityJSON(
        number: index + 1, type: starts[index].0, startWall: starts[index].1 ?? group.first?.wall,
        timer: (group.last?.timer ?? 0) - (before?.timer ?? 0),
        distance: (group.last?.distance ?? 0) - (before?.distance ?? 0),
        averageHeartRate: group.heartRates > 0 ? Double(group.heartRateSum) / Double(group.heartRates) : nil,
        maxHeartRate: group.maxHeartRate.map(Double.init),
        averagePower: averaging == .withZeros
          ? (group.powers > 0 ? Double(group.powerSum) / Double(group.powers) : nil)
          : group.pedalled > 0 ? Double(group.powerSum) / Double(group.pedalled) : nil,
        zones: byActivity.map { index < $0.count ? $0[index] : [] })
    }
    var best: [String: Double] = [:]
    for seconds in [5, 60, 300, 1200] { best[String(seconds)] = metrics.bestPower(seconds) }
    self.metrics = MetricsJSON(
      workKilojoules: metrics.powerSamples > 0 ? metrics.work / 1000 : nil, averagePower: metrics.averagePower,
      averagePowerWithoutZeros: metrics.averagePowerWithoutZeros, powerAveraging: averaging.rawValue,
      normalizedPower: metrics.normalizedPower,
      ftp: ftp, intensityFactor: ftp.flatMap { metrics.intensityFactor(ftp: $0) },
      trainingStressScore: ftp.flatMap { metrics.trainingStressScore(ftp: $0) }, bestPower: best,
      estimatedFTP: metrics.estimatedFTP, bestTwentyMinuteHeartRate: metrics.bestTwentyMinuteHeartRate,
      calories: analysis.whole.kilocalories)
  }

  /// A session's points in order, read 2,000 at a time: a 12-hour ride's 43,200 read whole
  /// took 10 MB for each page that asked.
  static func eachPoint(
    of sessionID: Int64, in store: WorkoutStore, _ body: (PointRecord) -> Void
  ) throws {
    var from = 0
    while true {
      let page = try store.points(sessionID: sessionID, from: from, limit: 2000)
      page.forEach(body)
      guard let last = page.last else { return }
      from = last.seq + 1
    }
  }

  /// One activity's points as they stream by: its first and last, its heart rate and power.
  struct ActivityTally {
    var first: PointRecord?
    var last: PointRecord?
    var heartRateSum = 0
    var heartRates = 0
    var maxHeartRate: Int?
    var powerSum = 0
    var powers = 0
    var pedalled = 0

    mutating func add(_ point: PointRecord) {
      if first == nil { first = point }
      last = point
      if let hr = point.hr {
        heartRateSum += hr
        heartRates += 1
        maxHeartRate = max(maxHeartRate ?? hr, hr)
      }
      if let watts = point.power {
        powerSum += watts
        powers += 1
        if watts > 0 { pedalled += 1 }
      }
    }
  }
}
