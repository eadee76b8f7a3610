import Testing

@testable import WorkoutCore

/// The workout's plan on its own, without the engine: the session it is given and the step it
/// returns are all there is to see.
struct WorkoutPlanTests {
  let now = Moment(monotonic: 2000, wall: 1_700_000_000)
  /// Heart-rate zones 0-120, 120-140, 140-160, 160-175, 175- (five).
  let heartRateZones: ZoneConfiguration

  init() throws {
    heartRateZones = try ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175])
  }

  func plan(zones: [ZoneConfiguration] = [], activities: [ActivityType] = []) -> WorkoutPlan {
    var settings = EngineSettings(activity: .running, countdown: 0)
    settings.zones = zones
    settings.activityPlan = activities
    return WorkoutPlan(settings: settings)
  }

  /// Workout 7 in `state`; one that has run has run for a minute.
  func workout(_ state: SessionState, targets: [TargetZone]? = nil) -> ActiveSession {
    var builder = LiveBuilder()
    if state == .running || state == .paused { builder.begin(at: now.advanced(by: -60)) }
    return ActiveSession(
      id: 7, activity: .running, machine: SessionMachine(state: state), builder: builder, autoPause: nil,
      countdownDeadline: nil, customZones: nil, targetZones: targets, openedAt: now.advanced(by: -90),
      lastMoment: now, openedThisRun: true, epochFirstPoint: 0, epochFirstLap: 1)
  }

  func events(_ step: WorkoutPlan.Step) -> [SessionEvent] {
    step.effects.compactMap {
      if case .event(let event) = $0 { return event }
      return nil
    }
  }

  func chirps(_ step: WorkoutPlan.Step) -> [ChirpPattern] {
    step.effects.compactMap {
      if case .chirp(let pattern) = $0 { return pattern }
      return nil
    }
  }

  // MARK: - Zones

  @Test func zonesBeforeAWorkoutAreTheNextOnesAndAreUsedUpWhenItOpens() throws {
    var plan = plan()
    var none: ActiveSession?
    let own = try ZoneConfiguration(parsing: "130,150,170", quantity: .heartRate, source: .custom)
    let step = plan.setZones(own, of: &none)
    #expect(step.answer == .accepted)
    #expect(!step.changesWorkout, "no workout to save")
    #expect(step.effects == [.log(.info, "the next workout's own zones: \(WorkoutPlan.describe(own))")])
    #expect(none == nil)
    // Another of the same quantity replaces it.
    let again = try ZoneConfiguration(parsing: "125,145,165", quantity: .heartRate, source: .custom)
    _ = plan.setZones(again, of: &none)
    #expect(plan.nextZones == [again])
    let opened = plan.takeForNewWorkout()
    #expect(opened.zones == [again] && opened.targets == nil)
    #expect(plan.nextZones == nil, "used up by the workout opened")
  }

  @Test func zonesWhilePreparedAreThatWorkoutsAndNotTheNext() throws {
    var plan = plan(zones: [heartRateZones])
    var prepared: ActiveSession? = workout(.prepared)
    let power = try ZoneConfiguration(parsing: "100,150,200", quantity: .cyclingPower, source: .custom)
    let step = plan.setZones(power, of: &prepared)
    #expect(step.answer == .accepted && step.changesWorkout)
    #expect(step.effects == [.log(.info, "the workout's own zones: \(WorkoutPlan.describe(power))")])
    #expect(prepared?.customZones == [power])
    #expect(plan.nextZones == nil)
    #expect(plan.zones(custom: prepared?.customZones) == [heartRateZones, power], "heart rate first")
  }

  @Test(arguments: [SessionState.running, .paused])
  func zonesOnceTheWorkoutRunsAreRefusedAndChangeNothing(_ state: SessionState) throws {
    var plan = plan()
    let before = workout(state)
    var running: ActiveSession? = before
    let own = try ZoneConfiguration(parsing: "130,150,170", quantity: .heartRate, source: .custom)
    let step = plan.setZones(own, of: &running)
    #expect(step == WorkoutPlan.Step(answer: .refused(.zonesAfterStart)))
    #expect(running == before)
    #expect(plan.nextZones == nil)
  }

  // MARK: - Targets

  @Test func aTargetIsCheckedAgainstTheZonesThePreparedWorkoutWillHave() throws {
    var plan = plan(zones: [heartRateZones])
    let before = workout(.prepared)
    var prepared: ActiveSession? = before
    let power = try TargetZone(parsing: "2", quantity: .cyclingPower)
    #expect(plan.setTarget(.cyclingPower, power, of: &prepared, at: now).answer == .refused(.noZonesForTarget))
    let beyond = try TargetZone(parsing: "5-6", quantity: .heartRate)
    #expect(plan.setTarget(.heartRate, beyond, of: &prepared, at: now).answer == .refused(.targetBeyondZones))
    #expect(prepared == before, "a refused target changes nothing")
    let top = try TargetZone(parsing: "4-5", quantity: .heartRate)
    let step = plan.setTarget(.heartRate, top, of: &prepared, at: now)
    #expect(step.answer == .accepted && step.changesWorkout)
    #expect(events(step).isEmpty, "recorded when the workout starts running")
    #expect(prepared?.targetZones == [top])
    #expect(plan.nextTargets == nil)
  }

  @Test func aTargetWithNoWorkoutOpenIsTheNextOnesBesideTheConfiguredOnes() throws {
    var settings = EngineSettings(countdown: 0)
    settings.targetZones = [try TargetZone(parsing: "2-3", quantity: .heartRate)]
    var plan = WorkoutPlan(settings: settings)
    #expect(plan.takeForNewWorkout().targets?.map(\.text) == ["2-3"], "the configured ones by default")
    var ended: ActiveSession? = workout(.ended)
    let power = try TargetZone(parsing: "4", quantity: .cyclingPower)
    let step = plan.setTarget(.cyclingPower, power, of: &ended, at: now)
    #expect(step.answer == .accepted && !step.changesWorkout)
    #expect(step.effects == [.log(.info, "the next workout's target: cyclingPower zones 4")])
    #expect(ended?.targetZones == nil)
    #expect(plan.takeForNewWorkout().targets?.map(\.text) == ["2-3", "4"])
  }

  @Test func leavingTheTargetAndComingBackAreOneEventEach() throws {
    let plan = plan()
    var running = workout(.running, targets: [try TargetZone(parsing: "2-3", quantity: .heartRate)])
    // The first zone known, inside: kept, nothing to say.
    var step = plan.checkTarget(.heartRate, zone: 2, of: &running, at: now)
    #expect(step.changesWorkout && step.effects.isEmpty)
    #expect(running.targetZones?.first?.outside == false)
    #expect(plan.checkTarget(.heartRate, zone: 3, of: &running, at: now) == WorkoutPlan.Step(), "still inside")
    #expect(plan.checkTarget(.cyclingPower, zone: 5, of: &running, at: now) == WorkoutPlan.Step(), "no target")
    step = plan.checkTarget(.heartRate, zone: 4, of: &running, at: now)
    #expect(events(step).map(\.kind) == [.targetZoneLeft])
    #expect(events(step).first?.detail == "heart rate zone 4, above the target 2-3")
    #expect(events(step).first?.value == 4)
    #expect(step.effects.contains(.log(.info, "session 7: heart rate zone 4, above the target 2-3")))
    #expect(chirps(step) == [.offTarget])
    #expect(running.targetZones?.first?.outside == true)
    #expect(plan.checkTarget(.heartRate, zone: 5, of: &running, at: now) == WorkoutPlan.Step(), "still outside")
    step = plan.checkTarget(.heartRate, zone: 2, of: &running, at: now)
    #expect(events(step).map(\.kind) == [.targetZoneReached])
    #expect(events(step).first?.detail == "heart rate back in the target 2-3 (zone 2)")
    #expect(chirps(step) == [.single])
    step = plan.checkTarget(.heartRate, zone: 1, of: &running, at: now)
    #expect(events(step).map(\.detail) == ["heart rate zone 1, below the target 2-3"])
  }

  // MARK: - Activities

  @Test func theNextActivityIsRefusedWhenThereIsNoneOrItIsTheSame() throws {
    let plan = plan(activities: [.running, .cycling])
    var none: ActiveSession?
    #expect(plan.startNextActivity(.cycling, from: .control, of: &none, at: now) == .refused(.notRunning))
    var prepared: ActiveSession? = workout(.prepared)
    #expect(plan.startNextActivity(.cycling, from: .control, of: &prepared, at: now) == .refused(.notRunning))
    let before = workout(.running)
    var running: ActiveSession? = before
    #expect(plan.startNextActivity(.running, from: .control, of: &running, at: now) == .refused(.sameActivity))
    #expect(running == before, "a refused activity changes nothing")
    let step = plan.startNextActivity(nil, from: .gpio, of: &running, at: now)
    #expect(step.answer == .accepted && step.changesWorkout)
    #expect(running?.currentActivity == .cycling && running?.activityNumber == 2)
    #expect(step.closedLap?.trigger == .activityEnd)
    #expect(events(step).map(\.kind) == [.lap, .activity])
    let activity = try #require(events(step).last)
    #expect(activity.detail == "cycling" && activity.value == 2 && activity.cause == "button")
    // The plan is done; a named activity still goes.
    #expect(plan.startNextActivity(nil, from: .control, of: &running, at: now) == .refused(.noNextActivity))
    #expect(plan.startNextActivity(.walking, from: .control, of: &running, at: now).answer == .accepted)
    #expect(running?.activityNumber == 3)
  }

  @Test func withoutAPlanOnlyANamedActivityGoesOn() {
    let plan = plan()
    var running: ActiveSession? = workout(.paused)
    #expect(plan.startNextActivity(nil, from: .control, of: &running, at: now) == .refused(.noNextActivity))
    #expect(running?.activityNumber == nil)
  }

  // MARK: - Laps

  @Test func aLapClosesWithItsSummaryEventLogLineAndChirp() throws {
    let plan = plan()
    var running = workout(.running)
    let step = plan.closeLap(of: &running, trigger: .lapPress, cause: "button", at: now)
    let lap = try #require(step.closedLap)
    #expect(lap.number == 1 && lap.trigger == .lapPress && lap.end == now)
    #expect(running.builder.lapNumber == 2)
    #expect(step.answer == nil && step.changesWorkout)
    #expect(
      step.effects == [
        .lap(lap), .event(SessionEvent(kind: .lap, moment: now, cause: "button", value: 1)),
        .log(.info, "session 7: lap 1 closed"), .chirp(.single),
      ])
    let auto = plan.closeLap(of: &running, trigger: .distance, cause: "autoLap", at: now.advanced(by: 30))
    #expect(events(auto).first?.detail == "distance" && events(auto).first?.value == 2)
    #expect(auto.effects.contains(.log(.info, "session 7: lap 2 closed (auto lap by distance)")))
  }
}
