import Foundation
import WorkoutCore

/// Drives a `SessionEngine` with a manual clock, playing the runtime's part: it keeps every
/// command, and answers `finalizeSession` with `sessionFinalized` as a store would.
public struct EngineHarness {
  public var engine: SessionEngine
  public var now: Moment
  public var commands: [EngineCommand] = []
  public var outcomes: [RequestOutcome] = []

  public init(
    settings: EngineSettings = EngineSettings(), nextSessionID: Int64 = 1,
    start: Moment = Moment(monotonic: 1000, wall: 1_700_000_000)
  ) {
    engine = SessionEngine(settings: settings, nextSessionID: nextSessionID)
    now = start
  }

  /// A multisport workout of `plan`, started (no countdown, no auto-pause) and running its first
  /// activity.
  public static func multisport(_ plan: [ActivityType]) -> EngineHarness {
    var settings = EngineSettings(activity: plan.first ?? .running, countdown: 0, autoPause: .some(nil))
    settings.activityPlan = plan
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    return h
  }

  /// A session of `activity` with the incident alarm on, started (no countdown, no auto-pause)
  /// and ridden for 30 s at 6 m/s; and where it got to.
  public static func riding(_ activity: ActivityType = .cycling) -> (EngineHarness, GeoPoint) {
    var settings = EngineSettings(activity: activity, countdown: 0, autoPause: .some(nil))
    settings.incident = IncidentSettings()
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    h.ride(seconds: 30, speed: 6, from: &position)
    return (h, position)
  }

  @discardableResult
  public mutating func send(_ input: EngineInput) -> EngineStep {
    let step = engine.handle(input, at: now)
    checkScheduling()
    commands += step.commands
    if let outcome = step.outcome { outcomes.append(outcome) }
    for case .finalizeSession(let id, _) in step.commands {
      send(.sessionFinalized(sessionID: id))
    }
    return step
  }

  /// What the runtime schedules by (`state`, `needsTick`, `nextDeadline`) is kept beside the
  /// session, not read from it: after every input of every engine test, both must agree.
  public func checkScheduling() {
    let session = engine.session
    precondition(engine.state == (session?.state ?? .notStarted), "engine.state \(engine.state) is not its session's")
    precondition(engine.needsTick == (session?.state == .running), "engine.needsTick disagrees with its session")
    let deadlines = [
      session?.countdownDeadline, engine.fixMonitor.deadline, engine.watch.deadline, engine.damageIndicatedUntil,
      engine.sentIndicatedUntil, engine.battery.deadline, engine.incident.deadline,
    ]
    .compactMap { $0 }
    precondition(
      engine.nextDeadline == deadlines.min(),
      "engine.nextDeadline \(String(describing: engine.nextDeadline)) is not its session's")
  }

  public mutating func press(_ request: SessionRequest) -> RequestOutcome? {
    send(.request(request, .gpio)).outcome
  }

  public mutating func advance(by seconds: Double) {
    now = now.advanced(by: seconds)
  }

  /// Advances second by second, sending a fix (moving east at `speed` m/s from `position`) and
  /// then a tick each second, as a 1 Hz receiver and the recording clock would. `altering`
  /// changes second n's fix (from 0) before it is sent.
  public mutating func ride(
    seconds: Int, speed: Double, heartRate: Int? = nil, from position: inout GeoPoint,
    altering: (Int, inout GPSFix) -> Void = { _, _ in }
  ) {
    for second in 0..<seconds {
      advance(by: 1)
      position = position.moved(eastBy: speed)
      var fix = GPSFix(
        dimension: .threeD, latitude: position.latitude, longitude: position.longitude, altitude: 100,
        speed: speed, horizontalError: 3)
      altering(second, &fix)
      send(.reading(.gps(fix)))
      if let heartRate { send(.reading(.heartRate(bpm: heartRate))) }
      send(.tick)
    }
  }

  /// Runs the countdown out.
  public mutating func finishCountdown() {
    advance(by: engine.settings.countdown)
    send(.wakeup)
  }

  public var transitions: [SessionEvent] { events(.transition) }

  /// The events recorded of the kinds `matching` takes.
  public func events(where matching: (SessionEvent.Kind) -> Bool) -> [SessionEvent] {
    commands.compactMap {
      if case .recordEvent(_, let event) = $0, matching(event.kind) { return event }
      return nil
    }
  }

  public func events(_ kind: SessionEvent.Kind) -> [SessionEvent] { events { $0 == kind } }

  public var points: [TrackPoint] {
    commands.compactMap {
      if case .recordPoint(_, let point) = $0 { return point }
      return nil
    }
  }

  public var laps: [LapSummary] {
    commands.compactMap {
      if case .recordLap(_, let lap) = $0 { return lap }
      return nil
    }
  }

  public var summaries: [SessionSummary] {
    commands.compactMap {
      if case .finalizeSession(_, let summary) = $0 { return summary }
      return nil
    }
  }
}

extension GeoPoint {
  /// The point `metres` due east (small distances).
  public func moved(eastBy metres: Double) -> GeoPoint {
    let metresPerDegree = GeoPoint.earthRadius * .pi / 180 * cos(latitude * .pi / 180)
    return GeoPoint(latitude: latitude, longitude: longitude + metres / metresPerDegree)
  }
}
