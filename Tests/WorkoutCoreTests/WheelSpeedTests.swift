import Testing
import WorkoutTestSupport

@testable import WorkoutCore

@Suite("Wheel speed: beside GPS speed, and the ride's distance where GPS has none")
struct WheelSpeedTests {
  private func at(_ t: Double) -> Moment { Moment(monotonic: t, wall: 1_800_000_000 + t) }

  private func fix(_ t: Double, north metres: Double) -> GPSFix {
    // 1e-5 degree of latitude is about 1.11 m.
    GPSFix(
      dimension: .threeD, time: 1_800_000_000 + t, latitude: 45 + metres / 111_195, longitude: 7, altitude: 300,
      speed: 8, horizontalError: 3)
  }

  @Test("indoors: distance from the wheel's revolutions, speed statistics and status from the wheel")
  func indoors() {
    var b = LiveBuilder()
    b.begin(at: at(0))
    var last: TrackPoint?
    for s in 1...10 {
      let t = Double(s)
      b.advance(to: at(t), in: .running)
      b.observe(.wheelSpeed(metersPerSecond: 8.4, distance: 8.42), at: at(t), in: .running)
      last = b.recordPoint(at: at(t))
    }
    #expect(abs(b.totals.distance - 84.2) < 1e-9)
    #expect(abs(b.lapTotals.distance - 84.2) < 1e-9)
    #expect(last?.wheelSpeed == 8.4)
    #expect(last?.speed == nil, "the speed column is GPS's")
    #expect(last?.distance == b.totals.distance)
    #expect(abs((b.totals.speed.mean ?? 0) - 8.4) < 1e-9 && b.totals.speed.count == 10)
    #expect(b.currentSpeed(at: at(10)) == 8.4)
    // Paused by the rider: the wheel turning (bike on a stand) is not the ride's distance.
    b.observe(.wheelSpeed(metersPerSecond: 5, distance: 5), at: at(11), in: .paused)
    #expect(abs(b.totals.distance - 84.2) < 1e-9)
    // A stale wheel speed is no speed.
    #expect(b.currentSpeed(at: at(20)) == nil)
    #expect(b.recordPoint(at: at(20)).wheelSpeed == nil)
  }

  @Test("with a current GPS fix: GPS measures the distance, the wheel's speed is recorded beside it")
  func besideGPS() {
    var b = LiveBuilder()
    b.begin(at: at(0))
    var point: TrackPoint?
    for s in 0...20 {
      let t = Double(s)
      b.advance(to: at(t), in: .running)
      b.observe(.gps(fix(t, north: 8 * t)), at: at(t), in: .running)
      b.observe(.wheelSpeed(metersPerSecond: 7.5, distance: 7.5), at: at(t), in: .running)
      point = b.recordPoint(at: at(t))
    }
    let distance = b.totals.distance
    // 160 m north by GPS, whatever the filter's start; never GPS + wheel.
    #expect(distance > 100 && distance < 170, "GPS distance only, got \(distance)")
    #expect(point?.speed != nil && point?.wheelSpeed == 7.5)
  }

  @Test("a tunnel: the wheel counts while GPS has no fix, and the line across the gap is not counted again")
  func tunnel() {
    var b = LiveBuilder()
    b.begin(at: at(0))
    var t = 0.0
    for _ in 0...20 {
      b.advance(to: at(t), in: .running)
      b.observe(.gps(fix(t, north: 8 * t)), at: at(t), in: .running)
      _ = b.recordPoint(at: at(t))
      t += 1
    }
    let before = b.totals.distance
    // 30 s without a fix: 240 m by the wheel.
    for _ in 0..<30 {
      b.advance(to: at(t), in: .running)
      b.observe(.wheelSpeed(metersPerSecond: 8, distance: 8), at: at(t), in: .running)
      _ = b.recordPoint(at: at(t))
      t += 1
    }
    #expect(b.totals.distance - before > 200, "the wheel counted in the tunnel")
    let afterTunnel = b.totals.distance
    // Out of the tunnel, GPS again from 8 m/s × t further on.
    for _ in 0...20 {
      b.advance(to: at(t), in: .running)
      b.observe(.gps(fix(t, north: 8 * t)), at: at(t), in: .running)
      b.observe(.wheelSpeed(metersPerSecond: 8, distance: 8), at: at(t), in: .running)
      _ = b.recordPoint(at: at(t))
      t += 1
    }
    let added = b.totals.distance - afterTunnel
    // About 160 m by GPS after it; the 240 m across the tunnel are not bridged a second time.
    #expect(added < 200, "GPS after the tunnel added \(added) m")
    #expect(b.totals.distance < 8 * t + 30)
  }
}

@Suite("Auto-pause indoors follows the wheel")
struct WheelAutoPauseTests {
  @Test("with no GPS, the wheel's speed pauses and resumes the ride; with a fix, GPS's does")
  func indoors() {
    var h = EngineHarness()  // cycling: stop below 1.0 m/s for 2 s, resume at 1.5 m/s for 1 s
    _ = h.press(.start)
    h.finishCountdown()
    func wheel(seconds: Int, speed: Double) {
      for _ in 0..<seconds {
        h.advance(by: 1)
        h.send(.reading(.wheelSpeed(metersPerSecond: speed, distance: speed)))
        h.send(.tick)
      }
    }
    wheel(seconds: 10, speed: 7)
    #expect(h.engine.state == .running)
    // The wheel's "stopped" reading is 0 m/s.
    wheel(seconds: 4, speed: 0)
    #expect(h.engine.state == .paused)
    #expect(h.engine.status(at: h.now).pausedBySystem)
    wheel(seconds: 3, speed: 5)
    #expect(h.engine.state == .running)
    #expect(h.transitions.suffix(2).map(\.detail) == ["autoPause", "autoResume"])
    // 10 × 7 m, then 5 m a second: the first second moving again counted while auto-paused.
    let distance = h.engine.status(at: h.now).distance
    #expect(abs(distance - (70 + 15)) < 1e-9, "distance \(distance)")
    #expect(h.engine.status(at: h.now).speed == 5)
  }
}
