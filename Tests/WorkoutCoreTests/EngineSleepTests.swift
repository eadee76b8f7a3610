import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// What the runtime may sleep through: the engine asks for its 1 Hz tick only while a session
/// runs, and names every other moment it must be woken (`nextDeadline`); a runtime that sleeps
/// until the earlier of those and the next input misses nothing.
struct EngineSleepTests {
  let origin = GeoPoint(latitude: 52.37, longitude: 5.2)

  @Test func theTickIsNeededOnlyWhileRunning() {
    var h = EngineHarness(settings: EngineSettings(autoPause: .some(nil)))
    #expect(!h.engine.needsTick, "idle: nothing to record")
    #expect(h.engine.nextDeadline == nil)
    _ = h.press(.start)
    #expect(!h.engine.needsTick, "the countdown ends on its deadline, not on a tick")
    #expect(h.engine.nextDeadline == h.now.monotonic + h.engine.settings.countdown)
    h.finishCountdown()
    #expect(h.engine.needsTick)
    _ = h.press(.pause)
    #expect(!h.engine.needsTick, "paused: no points")
    _ = h.press(.resume)
    #expect(h.engine.needsTick)
    _ = h.press(.stop)
    #expect(!h.engine.needsTick)
  }

  @Test func aFixLostWhileIdleIsNoticedAtItsDeadlineWithNoTick() throws {
    var h = EngineHarness()
    h.advance(by: 1)
    h.send(.reading(.gps(GPSFix(dimension: .threeD, latitude: 52.37, longitude: 5.2, horizontalError: 3))))
    #expect(h.engine.gps == .fix)
    let deadline = try #require(h.engine.nextDeadline, "a fix can be lost: the engine must be woken for it")
    #expect(deadline == h.now.monotonic + h.engine.settings.fixLostAfter)
    // The runtime sleeps until exactly the deadline and sends a wakeup, never a tick.
    h.now = Moment(monotonic: deadline, wall: h.now.wall + (deadline - h.now.monotonic))
    h.send(.wakeup)
    #expect(h.engine.gps == .searching)
    #expect(h.engine.nextDeadline == nil, "lost once: nothing more to wait for")
    let lost = h.commands.compactMap { if case .recordEvent(nil, let e) = $0, e.kind == .fixLost { e } else { nil } }
    #expect(lost.count == 1)
  }

  @Test func theDeadlineIsTheEarlierOfCountdownAndFixLoss() {
    var h = EngineHarness(settings: EngineSettings(countdown: 10))
    h.send(.reading(.gps(GPSFix(dimension: .threeD, latitude: 52.37, longitude: 5.2, horizontalError: 3))))
    _ = h.press(.start)
    #expect(h.engine.nextDeadline == h.now.monotonic + h.engine.settings.fixLostAfter)
  }

  @Test func pausedStatusKeepsCountingElapsedWithNoTick() {
    var h = EngineHarness(settings: EngineSettings(autoPause: .some(nil)))
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 10, speed: 5, from: &position)
    _ = h.press(.pause)
    h.advance(by: 30)  // nothing sent: the runtime sleeps
    let status = h.engine.status(at: h.now)
    #expect(abs(status.elapsed - 40) < 1e-9, "elapsed goes on while paused")
    #expect(abs(status.timer - 10) < 1e-9, "the timer does not")
  }
}
