import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutCore

@Suite("The incident alarm in the engine")
struct IncidentEngineTests {
  /// A fall whose impact was `ago` seconds before it is reported.
  func fall(impactAgo ago: Double = 11) -> EngineInput {
    .fall(Fall(impactAt: 500, peak: 6 * MotionSample.gravity, tilt: 88, at: 500 + ago))
  }

  func events(_ h: EngineHarness, _ kind: SessionEvent.Kind) -> [SessionEvent] { h.events(kind) }

  func riding(activity: ActivityType = .cycling) -> (EngineHarness, GeoPoint) { EngineHarness.riding(activity) }

  @Test("a fall while riding: event, alarm, LED and status; a button answers it and does nothing else")
  func aFallWhileRidingSoundsTheAlarmAndAButtonAnswers() throws {
    var (h, position) = riding()
    // The crash: the board reports the fall 11 s after the impact; the GPS says it stopped.
    h.ride(seconds: 11, speed: 0, from: &position)
    h.send(fall())
    let suspected = try #require(events(h, .incidentSuspected).first)
    #expect(suspected.value == 6)
    #expect(suspected.detail?.contains("6.0 g") == true)
    #expect(h.commands.last { if case .chirp = $0 { true } else { false } } == .chirp(.incident))
    #expect(h.engine.indicator == .incident)
    let status = try #require(h.engine.status(at: h.now).incident)
    #expect(status.phase == .suspected)
    #expect(status.remaining == 30)
    #expect(h.engine.nextDeadline == h.now.monotonic + IncidentAlarm.soundEvery)

    // The alarm again every 5 s (the ride's ticks and wakeups both advance it).
    let chirpsBefore = h.commands.filter { $0 == .chirp(.incident) }.count
    h.advance(by: 5)
    h.send(.wakeup)
    #expect(h.commands.filter { $0 == .chirp(.incident) }.count == chirpsBefore + 1)

    // Lap is pressed: it answers the alarm, and marks no lap.
    let laps = h.laps.count
    h.send(.button(ButtonEvent(button: .lap, gesture: .shortPress, time: 0, heldFor: 0.1), .gpio))
    #expect(h.laps.count == laps)
    #expect(h.engine.state == .running)
    let cancelled = try #require(events(h, .incidentCancelled).first)
    #expect(cancelled.cause == "gpio")
    #expect(h.engine.status(at: h.now).incident == nil)
    #expect(h.engine.indicator == .running)
    h.send(.button(ButtonEvent(button: .lap, gesture: .shortPress, time: 0, heldFor: 0.1), .gpio))
    #expect(h.laps.count == laps + 1, "the next press is a lap again")
  }

  @Test("no answer: confirmed at the countdown's end, the alarm going on; the phone's I'm fine ends it")
  func noAnswerConfirms() throws {
    var (h, position) = riding()
    h.ride(seconds: 11, speed: 0, from: &position)
    h.send(fall())
    for _ in 0..<6 {
      h.advance(by: 5)
      h.send(.wakeup)
    }
    #expect(events(h, .incidentConfirmed).count == 1)
    #expect(h.engine.status(at: h.now).incident?.phase == .confirmed)
    #expect(h.engine.indicator == .incident)
    #expect(h.send(.riderIsFine(.control)).outcome == .accepted(.running))
    #expect(events(h, .incidentCancelled).first?.cause == "control")
    #expect(!h.engine.incident.isOn)
  }

  @Test("a fall at a stop, or with no [imu] incident settings, is no incident")
  func noIncidentUnlessRiding() {
    var (h, position) = riding()
    h.ride(seconds: 20, speed: 0, from: &position)  // stopped
    h.send(fall())
    #expect(events(h, .incidentSuspected).isEmpty)
    #expect(!h.engine.incident.isOn)
    #expect(h.send(.riderIsFine(.control)).outcome == .refused(.noIncidentAlarm, state: .running))

    var settings = EngineSettings(activity: .cycling, countdown: 0, autoPause: .some(nil))
    settings.incident = nil
    var off = EngineHarness(settings: settings)
    _ = off.press(.start)
    off.finishCountdown()
    off.ride(seconds: 30, speed: 6, from: &position)
    off.send(fall(impactAgo: 0))
    #expect(events(off, .incidentSuspected).isEmpty)

    // Indoors, on a trainer, the wheel's speed says it rides, but a fall is no incident; the
    // same seconds outdoors arm the alarm.
    for (activity, alarms) in [(ActivityType.indoorCycling, false), (.cycling, true)] {
      var (h, _) = riding(activity: activity)
      for _ in 0..<10 {
        h.advance(by: 1)
        h.send(.reading(.wheelSpeed(metersPerSecond: 8, distance: 8)))
        h.send(.tick)
      }
      h.send(fall(impactAgo: 0))
      #expect(events(h, .incidentSuspected).isEmpty == !alarms, "\(activity)")
      #expect(h.engine.incident.isOn == alarms, "\(activity)")
    }
  }

  @Test("each point carries the road's feel; on foot the steps give the cadence, as strides a minute")
  func pointsCarryTheMotion() throws {
    var (h, position) = riding(activity: .running)
    h.send(.reading(.motion(MotionSecond(vibration: 1.25, peak: 14, stepCadence: 172))))
    h.ride(seconds: 1, speed: 3, from: &position)
    let point = try #require(h.points.last)
    #expect(point.vibration == 1.25)
    #expect(point.peakAcceleration == 14)
    #expect(point.cadence == 86)
    // A sensor's cadence wins; riding a bike, steps are no cadence.
    h.send(.reading(.cadence(rpm: 90)))
    h.send(.reading(.motion(MotionSecond(vibration: 1, peak: 12, stepCadence: 172))))
    h.ride(seconds: 1, speed: 3, from: &position)
    #expect(h.points.last?.cadence == 90)
    var (bike, at) = riding()
    bike.send(.reading(.motion(MotionSecond(vibration: 1, peak: 12, stepCadence: 172))))
    bike.ride(seconds: 1, speed: 6, from: &at)
    #expect(bike.points.last?.cadence == nil)
    #expect(bike.points.last?.vibration == 1)
    // Gone stale (the sensor lost): no value.
    bike.ride(seconds: 3, speed: 6, from: &at)
    #expect(bike.points.last?.vibration == nil)
  }

  @Test("auto-start: a started session waits, prepared, until the board has moved 3 s in a row")
  func autoStartWaitsForMotion() throws {
    var settings = EngineSettings(activity: .cycling, countdown: 3, autoPause: .some(nil))
    settings.autoStart = AutoStartSettings()
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    #expect(h.engine.state == .prepared)
    #expect(h.engine.session?.countdownDeadline == nil)
    h.advance(by: 60)
    h.send(.wakeup)
    #expect(h.engine.state == .prepared, "no countdown")
    let rolling = MotionSecond(vibration: 2, peak: 13)
    let standing = MotionSecond(vibration: 0.3, peak: 10)
    for second in [rolling, rolling, standing, rolling, rolling] {
      h.advance(by: 1)
      h.send(.reading(.motion(second)))
    }
    #expect(h.engine.state == .prepared, "two seconds, a stop, two more")
    h.advance(by: 1)
    h.send(.reading(.motion(rolling)))
    #expect(h.engine.state == .running)
    let start = try #require(h.transitions.last)
    #expect(start.cause == "system" && start.detail == "autoStart")
    // Steps start a run as well.
    var run = EngineHarness(settings: settings)
    _ = run.press(.start)
    for _ in 0..<3 {
      run.advance(by: 1)
      run.send(.reading(.motion(MotionSecond(vibration: 0.5, peak: 15, stepCadence: 170))))
    }
    #expect(run.engine.state == .running)
  }

  @Test("after a restart the alarm sounds again while the session goes on, and the LED shows it")
  func aResumedSessionCarriesItsAlarmOn() throws {
    var (h, position) = riding()
    h.ride(seconds: 11, speed: 0, from: &position)
    h.send(fall())
    let session = try #require(h.engine.session)
    let open = OpenIncident(phase: .suspected, peak: 6 * MotionSample.gravity)
    let later = h.now.advanced(by: 20)
    let gap = RecoveryGap(seconds: 20, basis: .monotonic)
    let (engine, commands) = SessionEngine.resuming(
      session, settings: h.engine.settings, nextSessionID: 2, gap: gap, at: later, incident: open)
    let status = try #require(engine.status(at: later).incident)
    #expect(status.phase == .suspected && status.remaining == 30 && status.impact == 6 && status.tilt == nil)
    #expect(commands.contains(.chirp(.incident)))
    #expect(commands.contains(.indicate(.incident)))
    #expect(engine.indicator == .incident)
    #expect(engine.nextDeadline == later.monotonic + IncidentAlarm.soundEvery)

    // Not with `[imu]` no longer asking for the alarm, nor for a session that was stopped.
    var off = h.engine.settings
    off.incident = nil
    #expect(
      !SessionEngine.resuming(session, settings: off, nextSessionID: 2, gap: gap, at: later, incident: open).0.incident
        .isOn)
    _ = h.press(.stop)
    let stopped = try #require(h.engine.session)
    let (afterStop, _) = SessionEngine.resuming(
      stopped, settings: h.engine.settings, nextSessionID: 2, gap: gap, at: later, incident: open)
    #expect(!afterStop.incident.isOn)
  }
}
