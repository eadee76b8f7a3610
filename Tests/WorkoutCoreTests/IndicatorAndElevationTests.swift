import Testing
import WorkoutTestSupport

@testable import WorkoutCore

struct IndicatorTests {
  @Test func everyPatternIsDistinctAndOffIsDark() {
    let timings = IndicatorPattern.allCases.map(\.timing)
    #expect(Set(timings.map { $0.description }).count == IndicatorPattern.allCases.count)
    #expect(!IndicatorPattern.off.isLit(after: 0.3))
    #expect(IndicatorPattern.saving.isLit(after: 123.4))
    // Paused: on for the first half second of each second.
    #expect(IndicatorPattern.paused.isLit(after: 10.2))
    #expect(!IndicatorPattern.paused.isLit(after: 10.7))
    // Fault: three flashes in the first half second, then dark.
    let fault = stride(from: 0.05, to: 2.0, by: 0.1).map { IndicatorPattern.fault.isLit(after: $0) }
    #expect(fault.prefix(6) == [true, false, true, false, true, false])
    #expect(!fault.dropFirst(6).contains(true))
  }

  @Test func theNextChangeIsWhereTheLightFlips() {
    for pattern in IndicatorPattern.allCases {
      guard pattern.timing.count > 1 else {
        #expect(pattern.untilNextChange(after: 3.3) == nil)
        continue
      }
      var t = 0.013
      for _ in 0..<40 {
        let wait = pattern.untilNextChange(after: t)!
        #expect(wait > 0)
        #expect(pattern.isLit(after: t) == pattern.isLit(after: t + wait * 0.99), "\(pattern) at \(t)")
        #expect(pattern.isLit(after: t) != pattern.isLit(after: t + wait + 1e-6), "\(pattern) at \(t)")
        t += wait + 1e-6
      }
    }
  }

  @Test func theLEDFollowsTheSession() {
    var h = EngineHarness()
    func patterns() -> [IndicatorPattern] {
      h.commands.compactMap { if case .indicate(let p) = $0 { p } else { nil } }
    }
    h.send(.device(DeviceStatus(device: .gps, condition: .available, detail: "gpsd")))
    #expect(patterns() == [.waitingForFix], "a GPS without a fix: wait before starting")
    h.send(.reading(.gps(GPSFix(dimension: .threeD, latitude: 1, longitude: 1, altitude: 3, speed: 0))))
    #expect(patterns().last == .off, "idle with a fix: dark")
    _ = h.press(.start)
    #expect(patterns().last == .countdown)
    h.finishCountdown()
    #expect(patterns().last == .running)
    _ = h.press(.pause)
    #expect(patterns().last == .paused)
    h.send(.storage(.failing("disk full")))
    #expect(patterns().last == .fault)
    h.send(.storage(.recovered("caught up")))
    #expect(patterns().last == .paused)
    h.send(.device(DeviceStatus(device: .barometer, condition: .failing, detail: "no answer")))
    #expect(patterns().last == .fault)
    h.send(.device(DeviceStatus(device: .barometer, condition: .available, detail: "back")))
    #expect(patterns().last == .paused)
    _ = h.press(.stop)
    // stopped (saving) then ended (dark) within the same second.
    #expect(Array(patterns().suffix(2)) == [.saving, .off])
  }
}

struct ChirpTests {
  @Test func theBuzzerConfirmsEachThingDoneToTheSession() {
    var h = EngineHarness()
    func chirps() -> [ChirpPattern] { h.commands.compactMap { if case .chirp(let c) = $0 { c } else { nil } } }
    _ = h.press(.start)
    h.finishCountdown()
    _ = h.press(.pause)
    _ = h.press(.resume)
    _ = h.press(.lap)
    h.send(.storage(.failing("disk full")))
    _ = h.press(.stop)
    #expect(chirps() == [.single, .long, .double, .single, .single, .alarm, .long])
    #expect(ChirpPattern.allCases.allSatisfy { !$0.timing.isEmpty && $0.timing.count % 2 == 1 }, "each ends silent")
  }
}

struct ButtonInputTests {
  func gesture(_ button: ButtonID, _ gesture: ButtonGesture) -> EngineInput {
    .button(ButtonEvent(button: button, gesture: gesture, time: 0, heldFor: gesture == .longPress ? 2 : 0.2), .gpio)
  }

  @Test func oneStartButtonStartsPausesAndResumes() {
    var h = EngineHarness()
    h.send(gesture(.start, .shortPress))
    #expect(h.engine.state == .prepared)
    let ignored = h.send(gesture(.start, .shortPress))
    #expect(h.engine.state == .prepared, "a second press during the countdown does nothing")
    #expect(!ignored.touchesStore)
    h.finishCountdown()
    h.send(gesture(.start, .shortPress))
    #expect(h.engine.state == .paused)
    h.send(gesture(.start, .shortPress))
    #expect(h.engine.state == .running)
    h.send(gesture(.lap, .shortPress))
    #expect(h.laps.count == 1)
    #expect(h.transitions.last?.detail == "gpio")
  }

  @Test func onlyALongPressOfStopEndsARide() {
    var h = EngineHarness()
    h.send(gesture(.start, .shortPress))
    h.finishCountdown()
    h.send(gesture(.stop, .shortPress))
    #expect(h.engine.state == .running, "a knock never ends a ride")
    h.send(gesture(.start, .longPress))
    #expect(h.engine.state == .running)
    h.send(gesture(.stop, .longPress))
    #expect(h.engine.state == .ended)
  }
}

struct ElevationTests {
  /// Pressure at `altitude` metres in the standard atmosphere.
  func pressure(_ altitude: Double) -> Double { BarometricAltitude.pressure(altitude: altitude)! }

  @Test func climbingIsCountedFromTheBarometerWhileRunning() {
    var h = EngineHarness()
    // Before the start: climbing does not count.
    for second in 0..<60 {
      h.advance(by: 1)
      h.send(.reading(.barometer(pressure: pressure(100 + Double(second)), temperature: 21)))
    }
    _ = h.press(.start)
    h.finishCountdown()
    for second in 0..<120 {
      h.advance(by: 1)
      h.send(.reading(.barometer(pressure: pressure(160 + Double(second) * 0.5), temperature: 21)))
      h.send(.tick)
    }
    let totals = h.engine.session!.builder.totals
    #expect(abs(totals.ascent - 60) < 3, "120 s at 0.5 m/s is 60 m, got \(totals.ascent)")
    #expect(totals.descent == 0)
    #expect(h.points.last?.barometricAltitude != nil)
    #expect(h.points.last?.temperature == 21)
    let status = h.engine.status(at: h.now)
    #expect(status.pressure == pressure(219.5))
    #expect(status.seaLevelSource == "standard", "no GPS fixes: not calibrated")
    #expect(status.seaLevelPressure == BarometricAltitude.standardSeaLevelPressure)
  }

  @Test func whenTheBarometerGoesGPSAltitudeCarriesOn() {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var altitude = 200.0
    for second in 0..<200 {
      h.advance(by: 1)
      altitude += 0.5
      // The barometer stops answering after 100 s; GPS altitude goes on.
      if second < 100 { h.send(.reading(.barometer(pressure: pressure(altitude), temperature: nil))) }
      h.send(
        .reading(
          .gps(GPSFix(dimension: .threeD, latitude: 46, longitude: 14, altitude: altitude, speed: 3, verticalError: 5)))
      )
      h.send(.tick)
    }
    let source = h.engine.session!.builder.elevation.source(at: h.now.monotonic)
    #expect(source == .gps)
    let ascent = h.engine.session!.builder.totals.ascent
    #expect(abs(ascent - 100) < 6, "200 s at 0.5 m/s is 100 m whichever sensor measured it, got \(ascent)")
    #expect(h.points.last?.barometricAltitude == nil, "no stale barometric altitude in points")
  }

  @Test func pressureAndBME280HumidityGoIntoPointsAndStatusWhileFresh() {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    for second in 0..<10 {
      h.advance(by: 1)
      h.send(.reading(.barometer(pressure: pressure(300 + Double(second)), temperature: 18, humidity: 62.5)))
      h.send(.tick)
    }
    #expect(h.points.last?.pressure == pressure(309))
    #expect(h.points.last?.humidity == 62.5)
    #expect(h.engine.status(at: h.now).humidity == 62.5)
    // The sensor goes quiet: neither value outlives the sensor's freshness in points or status.
    for _ in 0..<10 {
      h.advance(by: 1)
      h.send(.tick)
    }
    #expect(h.points.last?.pressure == nil)
    #expect(h.points.last?.humidity == nil)
    #expect(h.engine.status(at: h.now).humidity == nil)
  }

  @Test func twoDFixesGiveNoAltitude() {
    var tracker = ElevationTracker()
    var t = 0.0
    for _ in 0..<100 {
      t += 1
      let climb = tracker.fix(GPSFix(dimension: .twoD, latitude: 1, longitude: 1, altitude: t * 10), at: t)
      #expect(climb.ascent == 0)
    }
  }
}
