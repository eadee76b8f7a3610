/// The latest value of each channel and when (monotonic) it arrived.
public struct LatestReadings: Sendable, Hashable, Codable {
  public var fix: GPSFix?
  public var fixAt: Double?
  /// Speed over ground, m/s: the receiver's own when it gives one, else derived from positions.
  public var speed: Double?
  public var heartRate: Int?
  public var heartRateAt: Double?
  public var cadence: Double?
  public var cadenceAt: Double?
  public var power: Int?
  public var powerAt: Double?
  /// Speed from a wheel sensor, m/s.
  public var wheelSpeed: Double?
  public var wheelSpeedAt: Double?
  public var temperature: Double?
  public var temperatureAt: Double?
  /// Relative humidity, %RH (BME280).
  public var humidity: Double?
  public var humidityAt: Double?

  public init() {}
}

/// How old a reading may be and still describe "now".
public struct Freshness: Sendable, Hashable, Codable {
  /// A position older than this is not put in a point (the GPS has stalled or lost its fix).
  public var position: Double
  /// Straps notify about once a second; allow a few missed notifications.
  public var sensor: Double

  public init(position: Double = 2.5, sensor: Double = 5) {
    self.position = position
    self.sensor = sensor
  }
}

/// Live statistics of one session, updated as samples stream in, in constant memory however
/// long the ride: running sums and extremes, the current lap, and the latest readings. Finished
/// laps and points leave as values for the store to keep.
public struct LiveBuilder: Sendable, Hashable, Codable {
  public private(set) var totals = IntervalTotals()
  public private(set) var lapTotals = IntervalTotals()
  /// The lap being recorded, from 1.
  public private(set) var lapNumber = 1
  public private(set) var lapStart: Moment?
  /// When the session first started running (after the countdown).
  public private(set) var startMoment: Moment?
  public private(set) var pointCount = 0
  public private(set) var latest = LatestReadings()
  public var freshness: Freshness
  public private(set) var elevation = ElevationTracker()
  /// Filtered position, distance and speed from GPS fixes (no creep while standing still).
  public private(set) var track = GPSTrack()

  /// Monotonic time up to which elapsed and timer time have been counted.
  private var countedUntil: Double?
  /// Whether the start and the current lap's start happened in this run of the service (see
  /// `ActiveSession.openedThisRun`).
  private var startedThisRun = true
  private var lapStartedThisRun = true
  /// RR intervals since the last point, for the next one (only while running). Optional, so
  /// that checkpoints written before it existed still decode.
  private var pendingRR: [UInt16]?
  /// Wheel distance was counted while GPS gave none (a tunnel, indoors): the next fix starts a
  /// new GPS segment, so the straight line across the gap is not counted a second time.
  /// Optional, so that checkpoints written before it existed still decode.
  private var wheelCountedSinceFix: Bool?
  /// Time in zone, one tracker per zone configuration of the workout (heart rate, power), and
  /// the training metrics. Optional, so that checkpoints written before they existed still
  /// decode (such a session has none; `show` derives them from its points).
  public private(set) var zoneTrackers: [ZoneTracker]?
  public private(set) var metrics: TrainingMetrics?
  /// Zone changes since the last point, for the engine to send as events.
  private var pendingZoneChanges: [ZoneChange]?
  /// At most this many RR intervals go with one point: 4 a second is 240 bpm, and a strap
  /// repeating old intervals after a dropout sends a few more; beyond that is not a heart.
  static let rrIntervalsPerPoint = 16
  /// Seconds a new zone must hold before it is an event (see `ZoneTracker.announceAfter`).
  public static let zoneAnnounceAfter = 3.0

  public init(freshness: Freshness = Freshness(), elevation: ElevationTracker = ElevationTracker()) {
    self.freshness = freshness
    self.elevation = elevation
  }

  /// Starts the clock when the session first runs.
  public mutating func begin(at now: Moment) {
    startMoment = now
    lapStart = now
    startedThisRun = true
    lapStartedThisRun = true
    countedUntil = now.monotonic
  }

  /// The workout's zone configurations (one per quantity) and its training metrics, counted
  /// from the next point on: set when the session first runs.
  public mutating func trackZones(_ configurations: [ZoneConfiguration]) {
    zoneTrackers = configurations.map {
      ZoneTracker(configuration: $0, freshness: freshness.sensor, announceAfter: Self.zoneAnnounceAfter)
    }
    if metrics == nil { metrics = TrainingMetrics() }
  }

  /// Counts the time since the last call into elapsed time (running or paused) and timer time
  /// (running only), by the state the session was in during that time.
  public mutating func advance(to now: Moment, in state: SessionState) {
    guard let since = countedUntil else { return }
    let seconds = max(0, now.monotonic - since)
    countedUntil = max(since, now.monotonic)
    if state != .running { pendingRR = nil }
    guard state == .running || state == .paused else { return }
    totals.elapsed += seconds
    lapTotals.elapsed += seconds
    if state == .running {
      totals.timer += seconds
      lapTotals.timer += seconds
    }
  }

  /// Takes in one sensor reading. Distance grows while running, and while auto-paused (the
  /// rider stood still, and the metres ridden while auto-resume made sure they were moving
  /// again are real): `countingDistance` overrides that rule.
  public mutating func observe(
    _ reading: SensorReading, at now: Moment, in state: SessionState, countingDistance: Bool? = nil
  ) {
    let t = now.monotonic
    switch reading {
    case .gps(let fix):
      if wheelCountedSinceFix == true {
        track.startNewSegment()
        wheelCountedSinceFix = nil
      }
      let update = track.add(fix, at: t, counting: countingDistance ?? (state == .running))
      latest.speed = update.speed
      latest.fix = fix
      latest.fixAt = t
      count(elevation.fix(fix, at: t), in: state)
      totals.distance += update.distanceAdded
      lapTotals.distance += update.distanceAdded
    case .gpsNoFix, .gpsRejected:
      latest.speed = nil
    case .heartRate(let bpm):
      latest.heartRate = bpm
      latest.heartRateAt = t
    case .rrIntervals(let intervals):
      guard state == .running else { return }
      var pending = pendingRR ?? []
      pending += intervals.prefix(max(0, Self.rrIntervalsPerPoint - pending.count))
      pendingRR = pending.isEmpty ? nil : pending
    case .cadence(let rpm):
      latest.cadence = rpm
      latest.cadenceAt = t
    case .power(let watts):
      latest.power = watts
      latest.powerAt = t
    case .wheelSpeed(let speed, let distance):
      latest.wheelSpeed = speed
      latest.wheelSpeedAt = t
      // GPS measures the ride while it has a current fix; the wheel only where GPS has none.
      // (A wheel sensor is not used to correct GPS: its circumference is the rider's guess.)
      guard !hasCurrentFix(at: t), countingDistance ?? (state == .running), distance > 0 else { return }
      totals.distance += distance
      lapTotals.distance += distance
      wheelCountedSinceFix = true
    case .temperature(let celsius):
      latest.temperature = celsius
      latest.temperatureAt = t
    case .barometer(let pressure, let celsius, let humidity):
      count(elevation.pressure(pressure, at: t), in: state)
      if let humidity {
        latest.humidity = humidity
        latest.humidityAt = t
      }
      if let celsius, latest.temperatureAt.map({ t - $0 > freshness.sensor }) ?? true {
        // The sensor's own temperature (warmed by the board) only when nothing better reports.
        latest.temperature = celsius
        latest.temperatureAt = t
      }
    case .battery:
      // The board's power, not the ride's: the engine's battery watch takes it.
      break
    case .motion:
      // Kept by the engine beside the session, not in its checkpoint: a second stale after a
      // restart (`SessionEngine.motion`).
      break
    }
  }

  private mutating func count(_ climb: (ascent: Double, descent: Double), in state: SessionState) {
    guard state == .running else { return }
    totals.ascent += climb.ascent
    totals.descent += climb.descent
    lapTotals.ascent += climb.ascent
    lapTotals.descent += climb.descent
  }

  /// Marks the start of a run of the service (after a restart): what came before was stamped
  /// by another boot's clocks.
  public mutating func beginRun() {
    startedThisRun = startMoment == nil
    lapStartedThisRun = lapStart == nil
  }

  /// Moves the wall times of this run's moments by `seconds` (a GPS clock correction).
  public mutating func shiftWallTimes(by seconds: Double) {
    if startedThisRun { startMoment?.wall += seconds }
    if lapStartedThisRun { lapStart?.wall += seconds }
  }

  /// Starts a new distance segment: after a rider's own pause, where they went meanwhile is
  /// not part of the ride.
  public mutating func startNewSegment() {
    track.startNewSegment()
  }

  /// A sensor lost or removed: its channels have no value from now on (not the last one for
  /// as long as it would have stayed fresh). Another sensor of a channel (cadence from a power
  /// meter and a pod) gives it again with its next reading.
  public mutating func forgetReadings(of device: DeviceKind) {
    switch device {
    case .heartRateStrap:
      latest.heartRate = nil
      latest.heartRateAt = nil
      pendingRR = nil
    case .powerMeter:
      latest.power = nil
      latest.powerAt = nil
      latest.cadence = nil
      latest.cadenceAt = nil
    case .speedCadenceSensor:
      latest.wheelSpeed = nil
      latest.wheelSpeedAt = nil
      latest.cadence = nil
      latest.cadenceAt = nil
    default:
      break
    }
  }

  /// Distance counts from the rider's position now (see GPSTrack.startCountingHere).
  public mutating func startCountingHere() {
    track.startCountingHere()
  }

  /// The current speed if it is fresh: GPS's while there is a current fix, else a wheel
  /// sensor's.
  public func currentSpeed(at now: Moment) -> Double? {
    if hasCurrentFix(at: now.monotonic) { return latest.speed }
    return currentWheelSpeed(at: now)
  }

  /// The wheel sensor's speed if it is fresh.
  public func currentWheelSpeed(at now: Moment) -> Double? {
    fresh(latest.wheelSpeed, at: latest.wheelSpeedAt, now: now, within: freshness.sensor)
  }

  /// Whether a GPS position is fresh enough to describe now.
  func hasCurrentFix(at monotonic: Double) -> Bool {
    guard let at = latest.fixAt else { return false }
    return monotonic - at <= freshness.position
  }

  /// The current heart rate if it is fresh.
  public func currentHeartRate(at now: Moment) -> Int? {
    fresh(latest.heartRate, at: latest.heartRateAt, now: now, within: freshness.sensor)
  }

  /// The relative humidity (BME280) if it is fresh.
  public func currentHumidity(at now: Moment) -> Double? {
    fresh(latest.humidity, at: latest.humidityAt, now: now, within: freshness.sensor)
  }

  /// Records one second: a point with every fresh reading, counted into the statistics, and
  /// the inertial sensor's `motion` when it is fresh. On foot
  /// (`cadenceFromSteps`), with no cadence from a sensor, the inertial sensor's step cadence
  /// is the point's, as strides (one foot's steps) a minute: FIT's running cadence (its
  /// profile's `record.cadence`, "rpm", is strides for running) and TCX's `RunCadence`.
  public mutating func recordPoint(
    at now: Moment, motion: MotionSecond? = nil, cadenceFromSteps: Bool = false
  ) -> TrackPoint {
    var point = TrackPoint(
      sequence: pointCount, moment: now, elapsed: totals.elapsed, timer: totals.timer,
      distance: totals.distance)
    if let fix = latest.fix, let at = latest.fixAt, now.monotonic - at <= freshness.position {
      point.latitude = fix.latitude
      point.longitude = fix.longitude
      point.altitude = fix.altitude
      point.speed = latest.speed
      point.fixDimension = fix.dimension.rawValue
      point.horizontalError = fix.horizontalError
    }
    if let at = elevation.barometricAltitudeAt, now.monotonic - at <= freshness.sensor {
      point.barometricAltitude = elevation.barometricAltitude
      point.pressure = elevation.pressure
    }
    point.heartRate = fresh(latest.heartRate, at: latest.heartRateAt, now: now, within: freshness.sensor)
    point.cadence = fresh(latest.cadence, at: latest.cadenceAt, now: now, within: freshness.sensor)
    point.power = fresh(latest.power, at: latest.powerAt, now: now, within: freshness.sensor)
    point.wheelSpeed = currentWheelSpeed(at: now)
    point.temperature = fresh(
      latest.temperature, at: latest.temperatureAt, now: now, within: freshness.sensor * 12)
    point.humidity = currentHumidity(at: now)
    if let motion {
      point.vibration = motion.vibration
      point.peakAcceleration = motion.peak
      if cadenceFromSteps, point.cadence == nil, let steps = motion.stepCadence { point.cadence = steps / 2 }
    }
    if let speed = point.statisticsSpeed { addSample(speed, to: \.speed) }
    if let bpm = point.heartRate { addSample(Double(bpm), to: \.heartRate) }
    if let rpm = point.cadence { addSample(rpm, to: \.cadence) }
    if let watts = point.power { addSample(Double(watts), to: \.power) }
    countTraining(point, reportingChanges: true)
    pointCount += 1
    return point
  }

  /// One point into the metrics and the time in zone; the zone changes are kept for the
  /// engine (`takeZoneChanges`) when `reportingChanges`.
  private mutating func countTraining(_ point: TrackPoint, reportingChanges: Bool) {
    if metrics != nil {
      if let watts = point.power { metrics?.addPower(watts) }
      if let bpm = point.heartRate { metrics?.addHeartRate(bpm) }
    }
    guard var trackers = zoneTrackers else { return }
    let sample = TrainingSample(timer: point.timer, heartRate: point.heartRate, power: point.power)
    for index in trackers.indices {
      let value = sample.value(of: trackers[index].configuration.quantity)
      if let change = trackers[index].sample(value, atTimer: point.timer), reportingChanges {
        pendingZoneChanges = (pendingZoneChanges ?? []) + [change]
      }
    }
    zoneTrackers = trackers
  }

  /// The zone changes of the point just recorded, if any.
  public mutating func takeZoneChanges() -> [ZoneChange]? {
    defer { pendingZoneChanges = nil }
    return pendingZoneChanges
  }

  /// The RR intervals that arrived since the last point (only while running), oldest first,
  /// for the point just recorded; nil when none did. Kept apart from `TrackPoint`, which
  /// stays a plain value copied on every second's path.
  public mutating func takeRRIntervals() -> [UInt16]? {
    defer { pendingRR = nil }
    return pendingRR
  }

  /// Ends the current activity's time in zone (the lap is closed first, by the engine).
  public mutating func closeActivity() {
    guard var trackers = zoneTrackers else { return }
    for index in trackers.indices { _ = trackers[index].closeActivity(atTimer: totals.timer) }
    zoneTrackers = trackers
  }

  /// Starts the current lap's time in zone afresh at timer time `timer` (a session rebuilt from
  /// its points, at the open lap's start).
  mutating func restartLapZones(atTimer timer: Double) {
    guard var trackers = zoneTrackers else { return }
    for index in trackers.indices { _ = trackers[index].closeLap(atTimer: timer) }
    zoneTrackers = trackers
  }

  /// Closes the current lap and starts the next one.
  public mutating func closeLap(at now: Moment, trigger: LapSummary.Trigger) -> LapSummary {
    var lap = LapSummary(
      number: lapNumber, start: lapStart ?? now, end: now, totals: lapTotals, trigger: trigger)
    if var trackers = zoneTrackers {
      lap.zoneTimes = trackers.indices.map { trackers[$0].closeLap(atTimer: totals.timer) }
      zoneTrackers = trackers
    }
    lapTotals = IntervalTotals()
    lapNumber += 1
    lapStart = now
    lapStartedThisRun = true
    return lap
  }

  /// Picks up after a restart. The time away counts as elapsed time, and as timer time if the
  /// session was running (as HealthKit's session keeps running while its app is dead); an
  /// unknown gap counts as nothing. Readings from before are stale and are dropped.
  public mutating func resume(after gap: RecoveryGap, at now: Moment, in state: SessionState) {
    let seconds = gap.seconds ?? 0
    if startMoment != nil, state == .running || state == .paused {
      totals.elapsed += seconds
      lapTotals.elapsed += seconds
      if state == .running {
        totals.timer += seconds
        lapTotals.timer += seconds
      }
    }
    if startMoment != nil { countedUntil = now.monotonic }
    latest = LatestReadings()
    track.resume(afterGap: gap.seconds)
    elevation.resume()
  }

  // MARK: - Rebuilding from recorded points

  /// A builder for a session whose saved state cannot be used: it starts at `start` (the
  /// first `running`), with `closedLaps` already closed, and takes its statistics from the
  /// session's points through `absorb`.
  public init(
    rebuildingFrom start: Moment?, closedLaps: ClosedLaps, freshness: Freshness, elevation: ElevationTracker
  ) {
    self.freshness = freshness
    self.elevation = elevation
    startMoment = start
    lapNumber = closedLaps.count + 1
    lapStart = closedLaps.lastEnd ?? start
    countedUntil = start?.monotonic
  }

  /// Counts a point recorded after this builder's state was saved into the statistics, as
  /// `recordPoint` counted it when it was made: elapsed, timer and distance are the point's
  /// own (they are cumulative), its samples join the session's and the lap's, and ascent is
  /// taken from its altitudes through `climbing` (one for the whole run of points, counting as
  /// the live `ElevationTracker` did). A point already counted is ignored.
  public mutating func absorb(_ point: TrackPoint, climbing: inout RecordedClimb) {
    guard point.sequence >= pointCount else { return }
    let elapsed = max(0, point.elapsed - totals.elapsed)
    let timer = max(0, point.timer - totals.timer)
    let distance = max(0, point.distance - totals.distance)
    totals.elapsed += elapsed
    lapTotals.elapsed += elapsed
    totals.timer += timer
    lapTotals.timer += timer
    totals.distance += distance
    lapTotals.distance += distance
    // Points are recorded only while running, so all of it counts.
    count(climbing.add(point), in: .running)
    if let speed = point.statisticsSpeed { addSample(speed, to: \.speed) }
    if let bpm = point.heartRate { addSample(Double(bpm), to: \.heartRate) }
    if let rpm = point.cadence { addSample(rpm, to: \.cadence) }
    if let watts = point.power { addSample(Double(watts), to: \.power) }
    countTraining(point, reportingChanges: false)
    if startMoment == nil {
      startMoment = point.moment
      lapStart = lapStart ?? point.moment
    }
    pointCount = point.sequence + 1
  }

  /// Numbers the next point after `sequence`: a recorded second that cannot be read back (a
  /// damaged record) keeps its number, so the next one is not written over it.
  public mutating func numberPoints(after sequence: Int) {
    pointCount = max(pointCount, sequence + 1)
  }

  /// Makes the current lap's totals what is left of the session's once the closed laps are
  /// taken out, keeping only `openLap`'s samples (those of the points after the last lap).
  mutating func settleOpenLap(closedLaps: ClosedLaps, openLap samples: IntervalTotals) {
    lapTotals = samples
    lapTotals.elapsed = max(0, totals.elapsed - closedLaps.elapsed)
    lapTotals.timer = max(0, totals.timer - closedLaps.timer)
    lapTotals.distance = max(0, totals.distance - closedLaps.distance)
    lapTotals.ascent = max(0, totals.ascent - closedLaps.ascent)
    lapTotals.descent = max(0, totals.descent - closedLaps.descent)
  }

  private mutating func addSample(_ value: Double, to channel: WritableKeyPath<IntervalTotals, SampleStatistics>) {
    totals[keyPath: channel].add(value)
    lapTotals[keyPath: channel].add(value)
  }

  private func fresh<Value>(_ value: Value?, at: Double?, now: Moment, within: Double) -> Value? {
    guard let value, let at, now.monotonic - at <= within else { return nil }
    return value
  }
}
