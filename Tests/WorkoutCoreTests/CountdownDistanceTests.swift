import Testing
import WorkoutCore
import WorkoutTestSupport

/// The metres ridden while the start counts down are not the workout's, as its seconds are not.
struct CountdownDistanceTests {
  @Test func distanceRiddenDuringTheCountdownIsNotCounted() {
    var h = EngineHarness(settings: EngineSettings(countdown: 60, autoPause: .some(nil)))
    _ = h.press(.start)
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    // 59 s at 9.5 m/s while prepared (560 m), then the countdown ends on the next tick.
    h.ride(seconds: 59, speed: 9.5, from: &position)
    #expect(h.engine.state == .prepared)
    h.ride(seconds: 1, speed: 9.5, from: &position)
    #expect(h.engine.state == .running)
    #expect(h.engine.status(at: h.now).distance < 20, "the countdown's 560 m are not counted")
    h.ride(seconds: 10, speed: 9.5, from: &position)
    let status = h.engine.status(at: h.now)
    #expect(status.timer == 10)
    #expect(status.distance > 75 && status.distance < 115, "10 s at 9.5 m/s: \(status.distance) m")
    #expect((status.averageSpeed ?? 0) < 12, "average \(status.averageSpeed ?? 0) m/s")
  }
}
