import Foundation
import Logging
import Testing
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

@testable import WorkoutDaemon

/// A board clock that stands still: what a start reads once.
private struct StillClock: BoardClock {
  let epoch = "still"
  var moment: Moment
  var wallTrusted: Bool { true }
  func now() -> Moment { moment }
  func hostDeadline(forBoardTime monotonic: Double) -> Double { 0 }
}

struct ResumeUnfinishedTests {
  /// Two sessions left open (the older one's start was missed: a store that could not be read
  /// at a start, and a ride recorded after it): the latest is resumed, and the older, which
  /// no later start would ever resume, end or export, is closed with an `abandoned` event that
  /// says why, its points kept.
  @Test func anOlderUnfinishedSessionIsClosedAndTheLatestResumed() throws {
    let directory = NSTemporaryDirectory() + "workoutd-resume-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let (store, _) = try WorkoutStore.open(at: directory + "/workoutd.db", wallNow: 0)
    let clock = StillClock(moment: Moment(monotonic: 5000, wall: 1_700_004_000))
    let stamp = ClockStamp(epoch: clock.epoch, moment: clock.moment, wallTrusted: true)
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    for id in Int64(1)...2 {
      var h = EngineHarness(
        nextSessionID: id, start: Moment(monotonic: 1000 * Double(id), wall: 1_700_000_000 + 1000 * Double(id)))
      _ = h.press(.start)
      h.finishCountdown()
      h.ride(seconds: 5, speed: 6, heartRate: 150, from: &position)
      try store.write(h.commands, clock: stamp)
    }
    #expect(try store.unfinishedSessions().count == 2)

    let (engine, _) = WorkoutService.resumeUnfinished(
      store: store, settings: EngineSettings(), clock: clock,
      log: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
    #expect(engine.session?.id == 2 && engine.state == .running)
    #expect(try store.unfinishedSessions().count == 1, "only the resumed one is open")
    #expect(try store.session(id: 1)?.state == "ended")
    let abandoned = try store.events(sessionID: 1).filter { $0.kind == "abandoned" }
    #expect(abandoned.count == 1)
    #expect(abandoned.first?.detail == "session 2, later, was also left unfinished and is the one resumed")
    #expect(try store.pointCount(sessionID: 1) == 5)
  }

  /// The service stopped while the incident alarm was on (a crash, a watchdog restart): the
  /// resumed engine finds it in the session's events and sounds it again; one the rider
  /// answered stays off.
  @Test func theIncidentAlarmIsOnAgainAfterARestart() throws {
    let directory = NSTemporaryDirectory() + "workoutd-resume-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let (store, _) = try WorkoutStore.open(at: directory + "/workoutd.db", wallNow: 0)
    var (h, position) = EngineHarness.riding()
    h.ride(seconds: 11, speed: 0, from: &position)
    h.send(.fall(Fall(impactAt: 500, peak: 6 * MotionSample.gravity, tilt: 88, at: 511)))
    let stamp = ClockStamp(epoch: "still", moment: h.now, wallTrusted: true)
    try store.write(h.commands, clock: stamp)
    let clock = StillClock(moment: h.now.advanced(by: 15))
    let log = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    let (engine, commands) = WorkoutService.resumeUnfinished(
      store: store, settings: h.engine.settings, clock: clock, log: log)
    #expect(engine.incident.phase == .suspected)
    #expect(engine.status(at: clock.moment).incident?.impact == 6)
    #expect(commands.contains(.chirp(.incident)))

    // The rider answers: after the next restart, the alarm is off.
    var resumed = engine
    let step = resumed.handle(.riderIsFine(.control), at: clock.moment)
    try store.write(
      commands + step.commands, clock: ClockStamp(epoch: "still", moment: clock.moment, wallTrusted: true))
    let (again, _) = WorkoutService.resumeUnfinished(
      store: store, settings: h.engine.settings, clock: clock, log: log)
    #expect(again.state == .running)
    #expect(!again.incident.isOn)
  }
}
