/// The workout's plan (`WorkoutPlan`) as the engine uses it: each input goes to the plan with
/// the session, and what the plan returns becomes commands and the request's outcome.
extension SessionEngine {
  /// `EngineInput.customZones`. Returns whether the session changed.
  mutating func setCustomZones(_ configuration: ZoneConfiguration, into step: inout EngineStep) -> Bool {
    var workout = session
    let result = workoutPlan.setZones(configuration, of: &workout)
    if result.changesWorkout { session = workout }
    return carryOut(result, for: workout?.id, into: &step)
  }

  /// `EngineInput.targetZone`. Returns whether the session changed.
  mutating func setTargetZone(
    _ quantity: ZoneQuantity, _ target: TargetZone?, at now: Moment, into step: inout EngineStep
  ) -> Bool {
    var workout = session
    let result = workoutPlan.setTarget(quantity, target, of: &workout, at: now)
    if result.changesWorkout { session = workout }
    return carryOut(result, for: workout?.id, into: &step)
  }

  /// The announced zone of `quantity` is now `zone` (from 1). Returns whether the session
  /// changed.
  mutating func checkTarget(_ quantity: ZoneQuantity, zone: Int, at now: Moment, into step: inout EngineStep) -> Bool {
    guard var workout = session, workout.targetZones != nil else { return false }
    let result = workoutPlan.checkTarget(quantity, zone: zone, of: &workout, at: now)
    if result.changesWorkout { session = workout }
    return carryOut(result, for: workout.id, into: &step)
  }

  /// `EngineInput.nextActivity`, or a long press of lap. Returns whether the session changed.
  mutating func startNextActivity(
    _ requested: ActivityType?, from source: RequestSource, at now: Moment, into step: inout EngineStep
  ) -> Bool {
    var workout = session
    let result = workoutPlan.startNextActivity(requested, from: source, of: &workout, at: now)
    if result.changesWorkout { session = workout }
    return carryOut(result, for: workout?.id, into: &step)
  }

  /// Closes the current lap of `current` (a press or an automatic one). Returns the closed
  /// lap's number.
  @discardableResult
  func closeLap(
    of current: inout ActiveSession, trigger: LapSummary.Trigger, cause: String, at now: Moment,
    into step: inout EngineStep
  ) -> Int {
    let result = workoutPlan.closeLap(of: &current, trigger: trigger, cause: cause, at: now)
    _ = carryOut(result, for: current.id, into: &step)
    return result.closedLap!.number  // closing a lap always closes one
  }

  /// Turns what the plan returned into commands (its events and laps are `sessionID`'s) and the
  /// request's outcome. Returns whether the session changed.
  func carryOut(_ result: WorkoutPlan.Step, for sessionID: Int64?, into step: inout EngineStep) -> Bool {
    for effect in result.effects {
      switch effect {
      case .event(let event): step.commands.append(.recordEvent(sessionID: sessionID, event))
      case .lap(let lap):
        if let sessionID { step.commands.append(.recordLap(sessionID: sessionID, lap)) }
      case .log(let level, let text): step.commands.append(.log(level, text))
      case .chirp(let pattern): step.commands.append(.chirp(pattern))
      }
    }
    switch result.answer {
    case .accepted?: step.outcome = .accepted(state)
    case .refused(let refusal)?: step.outcome = .refused(refusal, state: state)
    case nil: break
    }
    return result.changesWorkout
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
