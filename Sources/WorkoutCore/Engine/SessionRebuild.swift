/// The saved state of a live session (its resume checkpoint) is a cache, not the record.
///
/// What a session *is* lives in rows the schema migrates: its events (every transition), its
/// points (one per recorded second, each with cumulative elapsed, timer and distance) and its
/// laps. The checkpoint — the JSON of `ActiveSession` — saves re-reading them after a restart,
/// and is written only when the session changes (a transition, a lap, a clock correction) and
/// every `SessionEngine.checkpointInterval` points, never every second: the points recorded
/// after it are folded back in on resume.
///
/// Compatibility rule for future releases: `ResumeCheckpoint.format` names the JSON shape of
/// `ActiveSession` and everything inside it. Change that shape (add, rename or retype a stored
/// property of `ActiveSession`, `LiveBuilder`, `SessionMachine`, the trackers...) and bump the
/// format; `CheckpointShapeTests` pins each format's shape (`Tests/Fixtures/checkpoint/`) so that
/// the bump is not forgotten. A binary reads only its own format: any other, or a checkpoint
/// that does not decode, is ignored and the session is rebuilt from its events, points and
/// laps. Nothing in a checkpoint may be needed that those rows cannot give back.
public enum ResumeCheckpoint {
  /// 1: the synthesized Codable of `ActiveSession` as written by every release up to schema v3.
  public static let format = 1
}

/// The laps a session has closed, in sum: what a rebuilt session needs of them.
public struct ClosedLaps: Sendable, Hashable {
  public var count = 0
  /// When the last closed lap ended (the open lap's start).
  public var lastEnd: Moment?
  public var elapsed = 0.0
  public var timer = 0.0
  public var distance = 0.0
  public var ascent = 0.0
  public var descent = 0.0

  public init() {}

  public mutating func add(_ lap: LapSummary) {
    count += 1
    lastEnd = lap.end
    elapsed += lap.totals.elapsed
    timer += lap.totals.timer
    distance += lap.totals.distance
    ascent += lap.totals.ascent
    descent += lap.totals.descent
  }
}

/// Puts an unfinished session back together after a restart, from its checkpoint and the
/// points recorded after it, or — when the checkpoint cannot be read — from its event log and
/// all its points. Feed it the points in order (`add`), then take `session`. O(points fed).
public struct SessionRebuild: Sendable {
  private var rebuilt: ActiveSession
  private var climbing = RecordedClimb()
  /// Set when rebuilding from nothing: the laps to take out of the open lap's totals, and the
  /// samples of the points recorded after the last of them.
  private var closedLaps: ClosedLaps?
  private var openLapSamples = IntervalTotals()
  /// The last point folded in.
  public private(set) var lastPoint: TrackPoint?
  /// Whether the open lap's first point has come (its zone times start there).
  private var inOpenLap = false

  /// From a readable checkpoint: points from `firstPoint` on are those it has not counted.
  public init(checkpoint: ActiveSession) {
    rebuilt = checkpoint
  }

  /// From the record alone. `machine` is the state the event log ends in; `start` the moment
  /// of the first `prepared → running`; `openedAt` when the session was opened; `zones` those
  /// its `zoneConfiguration` events name, so that its time in zone and training metrics are
  /// counted again from all its points, not from the restart.
  public init(
    id: Int64, activity: ActivityType, machine: SessionMachine, openedAt: Moment, start: Moment?,
    closedLaps: ClosedLaps, settings: EngineSettings, zones: [ZoneConfiguration] = []
  ) {
    let elevation = ElevationTracker(
      calibrator: settings.seaLevelPressure.flatMap { SeaLevelCalibrator(configuredSeaLevelPressure: $0) }
        ?? SeaLevelCalibrator())
    rebuilt = ActiveSession(
      id: id, activity: activity, machine: machine,
      builder: LiveBuilder(
        rebuildingFrom: start, closedLaps: closedLaps, freshness: settings.freshness, elevation: elevation),
      autoPause: settings.autoPause.map(AutoPauseDetector.init(settings:)), countdownDeadline: nil,
      openedAt: openedAt, lastMoment: openedAt, openedThisRun: false, epochFirstPoint: 0,
      epochFirstLap: closedLaps.count + 1)
    if start != nil, !zones.isEmpty { rebuilt.builder.trackZones(zones) }
    self.closedLaps = closedLaps
  }

  /// The sequence number of the first point not yet counted.
  public var firstPoint: Int { rebuilt.builder.pointCount }

  public mutating func add(_ point: TrackPoint) {
    guard point.sequence >= rebuilt.builder.pointCount else { return }
    if let closedLaps, !inOpenLap, point.elapsed > closedLaps.elapsed {
      // The closed laps' zone times are in their rows; the open lap's start here.
      inOpenLap = true
      rebuilt.builder.restartLapZones(atTimer: closedLaps.timer)
    }
    rebuilt.builder.absorb(point, climbing: &climbing)
    if let closedLaps, point.elapsed > closedLaps.elapsed {
      if let speed = point.statisticsSpeed { openLapSamples.speed.add(speed) }
      if let bpm = point.heartRate { openLapSamples.heartRate.add(Double(bpm)) }
      if let rpm = point.cadence { openLapSamples.cadence.add(rpm) }
      if let watts = point.power { openLapSamples.power.add(Double(watts)) }
    }
    if point.moment.monotonic.isFinite { rebuilt.lastMoment = point.moment }
    lastPoint = point
  }

  /// The session's highest point number, readable or not: the next point comes after it.
  public mutating func numberPoints(after sequence: Int) {
    rebuilt.builder.numberPoints(after: sequence)
  }

  /// The session as it stood at its last recorded point (or checkpoint).
  public var session: ActiveSession {
    var session = rebuilt
    if let closedLaps {
      session.builder.settleOpenLap(closedLaps: closedLaps, openLap: openLapSamples)
    }
    return session
  }
}
