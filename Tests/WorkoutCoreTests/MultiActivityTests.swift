import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// A multisport workout (HKWorkoutActivity): one session, several activities in turn, each
/// with its own time, distance and zones.
struct MultiActivityTests {
  func harness(plan: [ActivityType] = [.running, .cycling, .running]) throws -> EngineHarness {
    var settings = EngineSettings(activity: plan.first ?? .running, countdown: 0)
    settings.activityPlan = plan
    settings.zones = [try ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175])]
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    return h
  }

  func longLap(_ h: inout EngineHarness) -> EngineStep {
    h.send(
      .button(
        ButtonEvent(button: .lap, gesture: .longPress, time: h.now.monotonic, heldFor: 2.1), .gpio))
  }

  func activityEvents(_ h: EngineHarness) -> [SessionEvent] {
    h.commands.compactMap {
      if case .recordEvent(_, let event) = $0, event.kind == .activity { return event }
      return nil
    }
  }

  @Test func aLongLapPressGoesOnToThePlansNextActivity() throws {
    var h = try harness()
    var position = GeoPoint(latitude: 46, longitude: 14.5)
    h.ride(seconds: 100, speed: 3, heartRate: 130, from: &position)
    #expect(longLap(&h).outcome == .accepted(.running))
    var status = h.engine.status(at: h.now)
    #expect(status.activity == .cycling && status.activityNumber == 2)
    #expect(h.laps.map(\.trigger) == [.activityEnd])
    let event = try #require(activityEvents(h).first)
    #expect(event.detail == "cycling" && event.value == 2 && event.cause == "button")
    // Cycling's auto-pause thresholds from here.
    #expect(h.engine.session?.autoPause?.settings == ActivityType.cycling.defaultAutoPause)
    h.ride(seconds: 60, speed: 9, heartRate: 150, from: &position)
    status = h.engine.status(at: h.now)
    #expect(abs((status.activityTimer ?? 0) - 60) < 1.01, "\(status.activityTimer ?? -1)")
    #expect(abs((status.activityDistance ?? 0) - 540) < 10, "\(status.activityDistance ?? -1)")
    // The activity's zone times start afresh; the workout's go on.
    let tracker = try #require(h.engine.session?.builder.zoneTrackers?.first)
    #expect(abs(tracker.activity.total - 60) <= 1 && abs(tracker.workout.total - 160) <= 1)
    // workoutctl's way: the next of the plan again.
    #expect(h.send(.nextActivity(nil, .control)).outcome == .accepted(.running))
    #expect(h.engine.status(at: h.now).activity == .running)
    #expect(activityEvents(h).map(\.detail) == ["cycling", "running"])
    #expect(activityEvents(h).last?.cause == "button" && activityEvents(h).last?.value == 3)
    // The plan is done.
    #expect(h.send(.nextActivity(nil, .control)).outcome == .refused(.noNextActivity, state: .running))
    _ = h.press(.stop)
    #expect(h.laps.map(\.trigger) == [.activityEnd, .activityEnd, .sessionEnd])
  }

  @Test func aNamedActivityNeedsNoPlanButMustDiffer() throws {
    var h = try harness(plan: [])
    #expect(h.send(.nextActivity(.running, .control)).outcome == .refused(.sameActivity, state: .running))
    #expect(h.send(.nextActivity(.walking, .control)).outcome == .accepted(.running))
    #expect(h.send(.nextActivity(nil, .control)).outcome == .refused(.noNextActivity, state: .running))
    // Without a plan a long lap press does nothing, as before (a squeezed bag).
    _ = longLap(&h)
    #expect(activityEvents(h).count == 1)
  }

  @Test func onlyWhileTheWorkoutRecords() throws {
    var settings = EngineSettings(countdown: 10)
    settings.activityPlan = [.cycling, .running]
    var h = EngineHarness(settings: settings)
    #expect(h.send(.nextActivity(.running, .control)).outcome == .refused(.notRunning, state: .notStarted))
    _ = h.press(.start)
    #expect(h.send(.nextActivity(.running, .control)).outcome == .refused(.notRunning, state: .prepared))
    h.finishCountdown()
    _ = h.press(.pause)
    #expect(h.send(.nextActivity(.running, .control)).outcome == .accepted(.paused), "a transition while paused")
  }
}
