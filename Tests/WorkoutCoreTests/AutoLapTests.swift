import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// Automatic laps by distance or by timer time (`[session] auto_lap_distance` / `auto_lap_time`).
struct AutoLapTests {
  func harness(_ autoLap: AutoLap, zones: Bool = false) throws -> EngineHarness {
    var settings = EngineSettings(countdown: 0, autoPause: .some(nil))
    settings.autoLap = autoLap
    if zones {
      settings.zones = [try ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175])]
    }
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    return h
  }

  func lapEvents(_ h: EngineHarness) -> [SessionEvent] {
    h.commands.compactMap {
      if case .recordEvent(_, let event) = $0, event.kind == .lap { return event }
      return nil
    }
  }

  @Test func aLapEveryFiveKilometresRiddenEndingOnTheSecondThatReachesIt() throws {
    var h = try harness(.distance(metres: 5000))
    var position = GeoPoint(latitude: 46, longitude: 14.5)
    h.ride(seconds: 1250, speed: 10, from: &position)
    _ = h.press(.stop)
    let laps = h.laps
    #expect(laps.map(\.trigger) == [.distance, .distance, .sessionEnd])
    for lap in laps.prefix(2) {
      #expect(lap.totals.distance >= 5000 && lap.totals.distance < 5000 + 10 + 1, "\(lap.totals.distance)")
    }
    let total = laps.map(\.totals.distance).reduce(0, +)
    #expect(abs(total - (h.summaries.last?.totals.distance ?? 0)) < 0.01, "the laps make up the ride")
    let events = lapEvents(h)
    #expect(events.map(\.cause) == ["autoLap", "autoLap"])
    #expect(events.map(\.detail) == ["distance", "distance"])
    #expect(events.map(\.value) == [1, 2])
    #expect(
      h.commands.contains {
        if case .log(_, let text) = $0 { return text.hasSuffix("lap 1 closed (auto lap by distance)") }
        return false
      })
  }

  @Test func aLapPressStartsTheCountAgain() throws {
    var h = try harness(.distance(metres: 1000))
    var position = GeoPoint(latitude: 46, longitude: 14.5)
    h.ride(seconds: 30, speed: 10, from: &position)
    _ = h.press(.lap)
    h.ride(seconds: 105, speed: 10, from: &position)
    #expect(h.laps.map(\.trigger) == [.lapPress, .distance])
    #expect(h.laps.last.map { $0.totals.distance >= 1000 && $0.totals.distance < 1011 } == true)
  }

  @Test func byTimeTheTimerCountsAndPausesDoNot() throws {
    var h = try harness(.time(seconds: 60), zones: true)
    var position = GeoPoint(latitude: 46, longitude: 14.5)
    h.ride(seconds: 40, speed: 8, heartRate: 130, from: &position)
    _ = h.press(.pause)
    h.advance(by: 300)
    h.send(.tick)
    _ = h.press(.resume)
    h.ride(seconds: 100, speed: 8, heartRate: 150, from: &position)
    _ = h.press(.stop)
    let laps = h.laps
    #expect(laps.map(\.trigger) == [.time, .time, .sessionEnd])
    #expect(laps.prefix(2).allSatisfy { abs($0.totals.timer - 60) < 0.001 }, "\(laps.map(\.totals.timer))")
    // Time in zone over the laps sums to the timer, to the second.
    let timer = try #require(h.summaries.last?.totals.timer)
    let inZones = laps.compactMap { $0.zoneTimes?.first?.total }.reduce(0, +)
    #expect(abs(inZones - timer) <= 1, "\(inZones) s in zones, \(timer) s timer")
  }

  @Test func noAutoLapsUnlessSet() throws {
    var settings = EngineSettings(countdown: 0, autoPause: .some(nil))
    settings.autoLap = nil
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 46, longitude: 14.5)
    h.ride(seconds: 1000, speed: 10, from: &position)
    _ = h.press(.stop)
    #expect(h.laps.map(\.trigger) == [.sessionEnd])
  }
}
