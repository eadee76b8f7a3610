/// The workout's plan as the engine keeps it: its zones and target ranges, its laps, and a
/// multisport workout's activities.
extension SessionEngine {
  /// Zones for the next workout (none open, or the last one stopped or ended) or the prepared
  /// one; refused while a workout runs or is paused.
  mutating func setCustomZones(_ configuration: ZoneConfiguration, into step: inout EngineStep) -> Bool {
    func replacing(_ list: [ZoneConfiguration]?) -> [ZoneConfiguration] {
      (list ?? []).filter { $0.quantity != configuration.quantity } + [configuration]
    }
    switch state {
    case .notStarted, .stopped, .ended:
      nextWorkoutZones = replacing(nextWorkoutZones)
    case .prepared:
      let zones = replacing(session?.customZones)
      session?.customZones = zones
    case .running, .paused:
      step.outcome = .refused(.zonesAfterStart, state: state)
      return false
    }
    step.outcome = .accepted(state)
    let whose = state == .prepared ? "the workout's" : "the next workout's"
    step.commands.append(.log(.info, "\(whose) own zones: \(Self.describe(configuration))"))
    return state == .prepared
  }

  /// A target zone range for the workout of one quantity, or none: for the next workout while
  /// none is open (or the last has stopped), else for the open one, checked against its zones (those it tracks once it
  /// runs, else those it will). Set while running, it is checked at once against the zone the
  /// rider is in.
  mutating func setTargetZone(
    _ quantity: ZoneQuantity, _ target: TargetZone?, at now: Moment, into step: inout EngineStep
  ) -> Bool {
    func replacing(_ list: [TargetZone]?) -> [TargetZone]? {
      let kept = (list ?? []).filter { $0.quantity != quantity } + (target.map { [$0] } ?? [])
      return kept.isEmpty ? nil : kept
    }
    let words = target.map { "\(quantity.rawValue) zones \($0.text)" } ?? "no \(quantity.rawValue) target"
    // None open, or the last one stopped or ended: the next workout's.
    guard var current = session, current.state.isUnfinished, current.state != .stopped else {
      nextWorkoutTargets = replacing(nextWorkoutTargets ?? (settings.targetZones.isEmpty ? nil : settings.targetZones))
      step.outcome = .accepted(state)
      step.commands.append(.log(.info, "the next workout's target: \(words)"))
      return false
    }
    if let target {
      let zones =
        current.builder.zoneTrackers?.map(\.configuration) ?? Self.zones(settings.zones, custom: current.customZones)
      guard let configuration = zones.first(where: { $0.quantity == quantity }) else {
        step.outcome = .refused(.noZonesForTarget, state: state)
        return false
      }
      guard target.upper <= configuration.zones.count else {
        step.outcome = .refused(.targetBeyondZones, state: state)
        return false
      }
    }
    current.targetZones = replacing(current.targetZones)
    session = current
    step.outcome = .accepted(state)
    if current.state == .running || current.state == .paused {
      step.commands.append(.recordEvent(sessionID: current.id, Self.targetEvent(quantity, target, at: now)))
    }
    step.commands.append(.log(.info, "session \(current.id): target \(words)"))
    if let announced = current.builder.zoneTrackers?.first(where: { $0.configuration.quantity == quantity })?
      .announced
    {
      _ = checkTarget(quantity, zone: announced + 1, at: now, into: &step)
    }
    return true
  }

  /// The record of a target set (nil: cleared), as `TargetZone.fromEvents` reads it back.
  static func targetEvent(_ quantity: ZoneQuantity, _ target: TargetZone?, at now: Moment) -> SessionEvent {
    SessionEvent(kind: .targetZoneSet, moment: now, detail: "\(quantity.rawValue) \(target?.text ?? "off")")
  }

  /// The announced zone of `quantity` is `zone` (from 1): an event, a chirp and a log line when
  /// that takes the rider out of the workout's target range or back into it. The first zone
  /// known alerts only when outside. Returns whether the session changed.
  mutating func checkTarget(
    _ quantity: ZoneQuantity, zone: Int, at now: Moment, into step: inout EngineStep
  ) -> Bool {
    guard var current = session, var targets = current.targetZones,
      let index = targets.firstIndex(where: { $0.quantity == quantity })
    else { return false }
    let target = targets[index]
    let outside = !target.contains(zone: zone)
    guard target.outside != outside else { return false }
    targets[index].outside = outside
    current.targetZones = targets
    session = current
    if !outside, target.outside == nil { return true }
    let name = quantity == .heartRate ? "heart rate" : "power"
    let detail =
      outside
      ? "\(name) zone \(zone), \(zone < target.lower ? "below" : "above") the target \(target.text)"
      : "\(name) back in the target \(target.text) (zone \(zone))"
    record(
      SessionEvent(
        kind: outside ? .targetZoneLeft : .targetZoneReached, moment: now, detail: detail, value: Double(zone)),
      into: &step)
    step.commands.append(.log(.info, "session \(current.id): \(detail)"))
    step.commands.append(.chirp(outside ? .offTarget : .single))
    return true
  }

  /// The workout goes on to its next activity: the lap and the activity's time in zone close,
  /// an `activity` event says which, auto-pause takes the new activity's thresholds (unless it
  /// is off), and status counts the activity's own timer and distance from here.
  mutating func startNextActivity(
    _ requested: ActivityType?, from source: RequestSource, at now: Moment, into step: inout EngineStep
  ) -> Bool {
    guard var current = session, current.state == .running || current.state == .paused else {
      step.outcome = .refused(.notRunning, state: state)
      return false
    }
    let number = current.activityNumber ?? 1
    let from = current.currentActivity ?? current.activity
    let plan = settings.activityPlan
    guard let next = requested ?? (plan.count > number ? plan[number] : nil) else {
      step.outcome = .refused(.noNextActivity, state: state)
      return false
    }
    guard next != from else {
      step.outcome = .refused(.sameActivity, state: state)
      return false
    }
    let cause = TransitionCause.button(source).kind
    closeLap(of: &current, trigger: .activityEnd, cause: cause, at: now, into: &step)
    current.builder.closeActivity()
    current.activityStart = current.builder.totals
    current.activityNumber = number + 1
    current.currentActivity = next
    if settings.autoPause != nil {
      current.autoPause = next.defaultAutoPause.map(AutoPauseDetector.init(settings:))
    }
    session = current
    step.commands.append(
      .recordEvent(
        sessionID: current.id,
        SessionEvent(kind: .activity, moment: now, cause: cause, detail: next.rawValue, value: Double(number + 1))))
    step.commands.append(
      .log(.info, "session \(current.id): activity \(number + 1), \(next.rawValue) (after \(from.rawValue))"))
    step.outcome = .accepted(state)
    return true
  }

  /// Closes the current lap (a press or an automatic one): its summary and a `lap` event to
  /// the store, a log line, a chirp. Returns the closed lap's number.
  @discardableResult
  func closeLap(
    of current: inout ActiveSession, trigger: LapSummary.Trigger, cause: String, at now: Moment,
    into step: inout EngineStep
  ) -> Int {
    let lap = current.builder.closeLap(at: now, trigger: trigger)
    step.commands.append(.recordLap(sessionID: current.id, lap))
    step.commands.append(
      .recordEvent(
        sessionID: current.id,
        SessionEvent(
          kind: .lap, moment: now, cause: cause, detail: trigger == .lapPress ? nil : trigger.rawValue,
          value: Double(lap.number))))
    let how = trigger == .lapPress ? "" : " (auto lap by \(trigger.rawValue))"
    step.commands.append(.log(.info, "session \(current.id): lap \(lap.number) closed\(how)"))
    step.commands.append(.chirp(.single))
    return lap.number
  }

  /// The zones a workout runs with: the configured ones, each replaced by its own of the same
  /// quantity; heart rate first, then power.
  static func zones(_ configured: [ZoneConfiguration], custom: [ZoneConfiguration]?) -> [ZoneConfiguration] {
    let own = custom ?? []
    let order = ZoneQuantity.allCases
    return (configured.filter { c in !own.contains { $0.quantity == c.quantity } } + own).sorted {
      order.firstIndex(of: $0.quantity)! < order.firstIndex(of: $1.quantity)!
    }
  }

  /// "heartRate system 0-132,132-144,144-156,156-168,168- bpm": the quantity, the source, and
  /// the zones as `ZoneConfiguration(parsing:)` reads them.
  public static func describe(_ configuration: ZoneConfiguration) -> String {
    "\(configuration.quantity.rawValue) \(configuration.source.rawValue) \(configuration.text)"
  }

  /// A zone change as an event: "heartRate zone 3 of 5 (was 2)", the new zone (from 1) as value.
  static func event(for change: ZoneChange, at now: Moment) -> SessionEvent {
    let count = change.times.seconds.count
    let was = change.previous.map { " (was \($0 + 1))" } ?? ""
    // HealthKit's zone-change event: the zone, the previous one, the group's running totals and
    // the time of the sample that moved (timer time).
    let totals = change.times.seconds.map { String(Int($0.rounded())) }.joined(separator: ",")
    return SessionEvent(
      kind: .zoneChange, moment: now,
      detail:
        "\(change.quantity.rawValue) zone \(change.zone + 1) of \(count)\(was); in zones \(totals) s; sample at \(Int(change.sampleTimer.rounded())) s",
      value: Double(change.zone + 1))
  }
}
