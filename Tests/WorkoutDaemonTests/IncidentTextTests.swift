import Foundation
import Testing
import WorkoutControl
import WorkoutTestSupport

@testable import WorkoutCore

/// The incident alarm in `workoutctl status` (its line while on, `--brief`'s field, `--json`'s
/// `incident`) and its events in `workoutctl show`, from the engine's own status and events.
struct IncidentTextTests {
  /// Riding, then a fall 11 s after its impact (6 g, turned 88°): the alarm's countdown runs.
  func fallen() -> EngineHarness {
    var (h, position) = EngineHarness.riding()
    h.ride(seconds: 11, speed: 0, from: &position)
    h.send(.fall(Fall(impactAt: 500, peak: 6 * MotionSample.gravity, tilt: 88, at: 511)))
    return h
  }

  func events(_ h: EngineHarness) -> [SessionEvent] { h.events { $0.rawValue.hasPrefix("incident") } }

  func shown(_ event: SessionEvent) -> String? {
    IncidentText.event(kind: event.kind.rawValue, cause: event.cause, detail: event.detail, value: event.value)
  }

  /// An alarm carried across a restart knows its impact but not the tilt: the line leaves it out.
  @Test func aResumedAlarmIsSaidWithoutItsTilt() throws {
    let h = fallen()
    let session = try #require(h.engine.session)
    let (engine, _) = SessionEngine.resuming(
      session, settings: h.engine.settings, nextSessionID: 2, gap: RecoveryGap(seconds: 9, basis: .monotonic),
      at: h.now, incident: OpenIncident(phase: .confirmed, peak: 4 * MotionSample.gravity))
    let incident = try #require(engine.status(at: h.now).incident)
    #expect(
      IncidentText.line(incident)
        == "INCIDENT: a fall confirmed, impact 4.0 g; the alarm goes on (workoutctl fine or any button stops it)")
  }

  @Test func statusSaysTheAlarmItsCountdownAndHowToStopIt() throws {
    var h = fallen()
    h.advance(by: 6.5)
    h.send(.wakeup)
    let incident = try #require(h.engine.status(at: h.now).incident)
    #expect(
      IncidentText.line(incident)
        == "INCIDENT: a fall suspected, impact 6.0 g, the board turned 88°; confirmed in 24 s unless answered (workoutctl fine or any button stops it)"
    )
    #expect(IncidentText.brief(incident) == "INCIDENT 24 s")
    let report = StatusReport(
      engine: h.engine.status(at: h.now), board: "sim", boardTime: 0, devices: [:],
      storage: .init(database: "db", pendingWrites: 0, failing: false, lastError: nil))
    let json = try ControlJSON.encode(report)
    #expect(
      json.contains("\"incident\":{\"impact\":6,\"phase\":\"suspected\",\"remaining\":23.5,\"tilt\":88}"), "\(json)")
    for _ in 0..<6 {
      h.advance(by: 5)
      h.send(.wakeup)
    }
    let confirmed = try #require(h.engine.status(at: h.now).incident)
    #expect(
      IncidentText.line(confirmed)
        == "INCIDENT: a fall confirmed, impact 6.0 g, the board turned 88°; the alarm goes on (workoutctl fine or any button stops it)"
    )
    #expect(IncidentText.brief(confirmed) == "INCIDENT CONFIRMED")
  }

  @Test func showTellsWhatHappenedNotWhatToDoThen() throws {
    var h = fallen()
    for _ in 0..<7 {
      h.advance(by: 5)
      h.send(.wakeup)
    }
    _ = h.send(.riderIsFine(.control))
    let lines = events(h).map(shown)
    #expect(
      lines == [
        "a fall while riding: an impact of 6.0 g, the board turned 88° and still",
        "no answer to the incident alarm: the incident is confirmed",
        "the rider is fine: the incident alarm is off (workoutctl fine or the phone page)",
      ])
    #expect(IncidentText.event(kind: "lap", cause: nil, detail: "x", value: 1) == nil, "other kinds as they were")
    #expect(
      IncidentText.event(kind: "incidentSuspected", cause: nil, detail: nil, value: 4.25)
        == "a fall while riding: an impact of 4.2 g", "a row without its detail")
    #expect(
      IncidentText.event(kind: "incidentCancelled", cause: "gpio", detail: nil, value: nil)
        == "the rider is fine: the incident alarm is off (a button)")
  }
}
