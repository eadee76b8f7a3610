/// The workout's plan: its own zones and target zone ranges, the alert when the rider leaves a
/// target and comes back, a multisport workout's activities in turn, and its laps. Like
/// `DeviceWatch`, a value that takes an input and the moment and returns what happened (a
/// `WorkoutPlan.Step`: the answer to the request, and the events, laps, log lines and chirps in
/// order); the engine turns that into commands. It reads no clock and writes nothing.
///
/// It keeps what is set for the next workout until that workout opens. The open workout's part
/// of the plan (its zones, targets and activity) stays on `ActiveSession`, whose stored
/// properties are the checkpoint's format, so the methods that change it take the session
/// `inout`.
///
/// ```swift
/// let step = plan.setTarget(.heartRate, target, of: &session, at: now)
/// // step.answer: accepted, or refused and why; step.effects: what to record, log and sound
/// ```
public struct WorkoutPlan: Sendable, Hashable {
  /// What one input to the plan led to.
  public struct Step: Sendable, Hashable {
    /// What the plan says to a rider's request.
    public enum Answer: Sendable, Hashable {
      case accepted
      case refused(Refusal)
    }

    /// Something for the engine to carry out, in the order given.
    public enum Effect: Sendable, Hashable {
      /// An event of the open workout.
      case event(SessionEvent)
      /// A lap of the open workout closed: its summary, for the store.
      case lap(LapSummary)
      case log(LogLevel, String)
      case chirp(ChirpPattern)
    }

    /// nil when the input was no request (a zone the rider moved to, a lap closing).
    public var answer: Answer?
    public var effects: [Effect] = []
    /// Whether the open workout changed, so its checkpoint is saved.
    public var changesWorkout = false

    public init(answer: Answer? = nil, effects: [Effect] = [], changesWorkout: Bool = false) {
      self.answer = answer
      self.effects = effects
      self.changesWorkout = changesWorkout
    }

    static func refused(_ refusal: Refusal) -> Step { Step(answer: .refused(refusal)) }

    /// The lap this step closed, if it closed one.
    public var closedLap: LapSummary? {
      for case .lap(let lap) in effects { return lap }
      return nil
    }
  }

  /// The configured zones (`[rider]`, `[zones]`); a workout's own replace those of their
  /// quantity.
  public let configuredZones: [ZoneConfiguration]
  /// The configured target ranges: every workout's, unless others are set for it.
  public let configuredTargets: [TargetZone]
  /// A multisport workout's activities in turn (`[session] activities`).
  public let activities: [ActivityType]
  /// Whether auto-pause is on: a new activity then pauses by its own thresholds.
  public let autoPauses: Bool
  /// Zones set for the next workout before it opens (its `customZones`).
  public internal(set) var nextZones: [ZoneConfiguration]?
  /// Target ranges set for the next workout before it opens.
  public internal(set) var nextTargets: [TargetZone]?

  public init(settings: EngineSettings) {
    configuredZones = settings.zones
    configuredTargets = settings.targetZones
    activities = settings.activityPlan
    autoPauses = settings.autoPause != nil
  }

  /// The zones and targets of a workout being opened: those set for it, else the configured
  /// targets. What was set is used up.
  public mutating func takeForNewWorkout() -> (zones: [ZoneConfiguration]?, targets: [TargetZone]?) {
    let taken = (zones: nextZones, targets: nextTargets ?? (configuredTargets.isEmpty ? nil : configuredTargets))
    nextZones = nil
    nextTargets = nil
    return taken
  }

  /// The zones a workout runs with: the configured ones, each replaced by its own of the same
  /// quantity; heart rate first, then power.
  public func zones(custom: [ZoneConfiguration]?) -> [ZoneConfiguration] {
    let own = custom ?? []
    let order = ZoneQuantity.allCases
    return (configuredZones.filter { c in !own.contains { $0.quantity == c.quantity } } + own).sorted {
      order.firstIndex(of: $0.quantity)! < order.firstIndex(of: $1.quantity)!
    }
  }

  /// A workout's own zones for one quantity: the next workout's while none is open (or the last
  /// stopped or ended), the open one's while it is prepared; refused once it runs or is paused.
  public mutating func setZones(_ configuration: ZoneConfiguration, of workout: inout ActiveSession?) -> Step {
    func replacing(_ list: [ZoneConfiguration]?) -> [ZoneConfiguration] {
      (list ?? []).filter { $0.quantity != configuration.quantity } + [configuration]
    }
    let state = workout?.state ?? .notStarted
    switch state {
    case .notStarted, .stopped, .ended:
      nextZones = replacing(nextZones)
    case .prepared:
      let zones = replacing(workout?.customZones)
      workout?.customZones = zones
    case .running, .paused:
      return .refused(.zonesAfterStart)
    }
    let whose = state == .prepared ? "the workout's" : "the next workout's"
    return Step(
      answer: .accepted, effects: [.log(.info, "\(whose) own zones: \(Self.describe(configuration))")],
      changesWorkout: state == .prepared)
  }

  /// A target zone range of one quantity, or none: the next workout's while none is open (or
  /// the last stopped or ended), else the open one's, checked against its zones (those it
  /// tracks once it runs, else those it will). Set while it runs, it is checked at once against
  /// the zone the rider is in.
  public mutating func setTarget(
    _ quantity: ZoneQuantity, _ target: TargetZone?, of workout: inout ActiveSession?, at now: Moment
  ) -> Step {
    func replacing(_ list: [TargetZone]?) -> [TargetZone]? {
      let kept = (list ?? []).filter { $0.quantity != quantity } + (target.map { [$0] } ?? [])
      return kept.isEmpty ? nil : kept
    }
    let words = target.map { "\(quantity.rawValue) zones \($0.text)" } ?? "no \(quantity.rawValue) target"
    guard var current = workout, current.state.isUnfinished, current.state != .stopped else {
      nextTargets = replacing(nextTargets ?? (configuredTargets.isEmpty ? nil : configuredTargets))
      return Step(answer: .accepted, effects: [.log(.info, "the next workout's target: \(words)")])
    }
    if let target {
      let zones = current.builder.zoneTrackers?.map(\.configuration) ?? zones(custom: current.customZones)
      guard let configuration = zones.first(where: { $0.quantity == quantity }) else {
        return .refused(.noZonesForTarget)
      }
      guard target.upper <= configuration.zones.count else { return .refused(.targetBeyondZones) }
    }
    current.targetZones = replacing(current.targetZones)
    var step = Step(answer: .accepted, changesWorkout: true)
    if current.state == .running || current.state == .paused {
      step.effects.append(.event(Self.targetEvent(quantity, target, at: now)))
    }
    step.effects.append(.log(.info, "session \(current.id): target \(words)"))
    if let announced = current.builder.zoneTrackers?.first(where: { $0.configuration.quantity == quantity })?
      .announced
    {
      step.effects += checkTarget(quantity, zone: announced + 1, of: &current, at: now).effects
    }
    workout = current
    return step
  }

  /// The announced zone of `quantity` is `zone` (from 1): an event, a log line and a chirp when
  /// that takes the rider out of the workout's target range or back into it. The first zone
  /// known alerts only when outside.
  public func checkTarget(
    _ quantity: ZoneQuantity, zone: Int, of workout: inout ActiveSession, at now: Moment
  ) -> Step {
    guard var targets = workout.targetZones, let index = targets.firstIndex(where: { $0.quantity == quantity })
    else { return Step() }
    let target = targets[index]
    let outside = !target.contains(zone: zone)
    guard target.outside != outside else { return Step() }
    targets[index].outside = outside
    workout.targetZones = targets
    var step = Step(changesWorkout: true)
    if !outside, target.outside == nil { return step }
    let name = quantity == .heartRate ? "heart rate" : "power"
    let detail =
      outside
      ? "\(name) zone \(zone), \(zone < target.lower ? "below" : "above") the target \(target.text)"
      : "\(name) back in the target \(target.text) (zone \(zone))"
    step.effects = [
      .event(
        SessionEvent(
          kind: outside ? .targetZoneLeft : .targetZoneReached, moment: now, detail: detail, value: Double(zone))),
      .log(.info, "session \(workout.id): \(detail)"),
      .chirp(outside ? .offTarget : .single),
    ]
    return step
  }

  /// The workout goes on to its next activity (`requested`, else the next of `activities`):
  /// the lap and the activity's time in zone close, an `activity` event says which, auto-pause
  /// takes the new activity's thresholds (unless it is off), and the activity's own timer and
  /// distance count from here. Only while the workout runs or is paused.
  public func startNextActivity(
    _ requested: ActivityType?, from source: RequestSource, of workout: inout ActiveSession?, at now: Moment
  ) -> Step {
    guard var current = workout, current.state == .running || current.state == .paused else {
      return .refused(.notRunning)
    }
    let number = current.activityNumber ?? 1
    let from = current.currentActivity ?? current.activity
    guard let next = requested ?? (activities.count > number ? activities[number] : nil) else {
      return .refused(.noNextActivity)
    }
    guard next != from else { return .refused(.sameActivity) }
    let cause = TransitionCause.button(source).kind
    var step = closeLap(of: &current, trigger: .activityEnd, cause: cause, at: now)
    current.builder.closeActivity()
    current.activityStart = current.builder.totals
    current.activityNumber = number + 1
    current.currentActivity = next
    if autoPauses {
      current.autoPause = next.defaultAutoPause.map(AutoPauseDetector.init(settings:))
    }
    workout = current
    step.answer = .accepted
    step.effects.append(
      .event(SessionEvent(kind: .activity, moment: now, cause: cause, detail: next.rawValue, value: Double(number + 1)))
    )
    step.effects.append(
      .log(.info, "session \(current.id): activity \(number + 1), \(next.rawValue) (after \(from.rawValue))"))
    return step
  }

  /// Closes the workout's current lap (a press, an automatic lap, the end of an activity): its
  /// summary and a `lap` event, a log line, a chirp.
  public func closeLap(
    of workout: inout ActiveSession, trigger: LapSummary.Trigger, cause: String, at now: Moment
  ) -> Step {
    let lap = workout.builder.closeLap(at: now, trigger: trigger)
    let how = trigger == .lapPress ? "" : " (auto lap by \(trigger.rawValue))"
    return Step(
      effects: [
        .lap(lap),
        .event(
          SessionEvent(
            kind: .lap, moment: now, cause: cause, detail: trigger == .lapPress ? nil : trigger.rawValue,
            value: Double(lap.number))),
        .log(.info, "session \(workout.id): lap \(lap.number) closed\(how)"),
        .chirp(.single),
      ], changesWorkout: true)
  }

  /// The record of a target set (nil: cleared), as `TargetZone.fromEvents` reads it back.
  public static func targetEvent(_ quantity: ZoneQuantity, _ target: TargetZone?, at now: Moment) -> SessionEvent {
    SessionEvent(kind: .targetZoneSet, moment: now, detail: "\(quantity.rawValue) \(target?.text ?? "off")")
  }

  /// "heartRate system 0-132,132-144,144-156,156-168,168- bpm": the quantity, the source, and
  /// the zones as `ZoneConfiguration(parsing:)` reads them.
  public static func describe(_ configuration: ZoneConfiguration) -> String {
    "\(configuration.quantity.rawValue) \(configuration.source.rawValue) \(configuration.text)"
  }
}
