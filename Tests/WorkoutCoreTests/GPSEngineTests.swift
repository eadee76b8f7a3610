import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// GPS through the engine: fix loss as events, the LED's view of the GPS, GPS time.
struct GPSEngineTests {
  let origin = GeoPoint(latitude: 52.37, longitude: 5.2)

  @Test func aLostFixIsAnEventAndSoIsItsReturn() throws {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 20, speed: 5, from: &position)
    // A tunnel: ticks go on, no fixes.
    for _ in 0..<12 {
      h.advance(by: 1)
      h.send(.reading(.gpsNoFix))
      h.send(.tick)
    }
    #expect(h.engine.gps == .searching)
    h.ride(seconds: 5, speed: 5, from: &position)
    #expect(h.engine.gps == .fix)
    let events = h.commands.compactMap { if case .recordEvent(1, let e) = $0 { e } else { nil } }
    let lost = try #require(events.first { $0.kind == .fixLost })
    let regained = try #require(events.first { $0.kind == .fixRegained })
    #expect(lost.value == 5, "noticed after fix_lost_after seconds without a fix")
    #expect(abs((regained.value ?? 0) - 13) < 1e-9, "the gap since the last fix")
    #expect(h.engine.state == .running, "losing the fix does not stop the ride")
  }

  @Test func noFixBeforeTheFirstIsNotALoss() {
    var h = EngineHarness()
    for _ in 0..<30 {
      h.advance(by: 1)
      h.send(.reading(.gpsNoFix))
      h.send(.tick)
    }
    #expect(!h.commands.contains { if case .recordEvent(_, let e) = $0 { e.kind == .fixLost } else { false } })
    #expect(h.engine.gps == .searching, "a GPS that has not fixed yet: wait for it")
  }

  /// Settings whose GPS clock believes times from 2026 on.
  static let clockSettings: EngineSettings = {
    var settings = EngineSettings()
    settings.gpsClock = GPSClockSettings(earliestPlausible: 1_790_000_000)
    return settings
  }()

  /// Three fixes a second apart whose time is `offset` ahead of the board's wall clock: enough
  /// agreeing readings for the engine's GPS clock to trust it.
  static func sendTimedFixes(offset: Double, to h: inout EngineHarness, at position: GeoPoint) {
    for _ in 0..<3 {
      h.advance(by: 1)
      h.send(
        .reading(
          .gps(
            GPSFix(
              dimension: .threeD, time: h.now.wall + offset, latitude: position.latitude,
              longitude: position.longitude, altitude: 100, speed: 5, horizontalError: 3))))
    }
  }

  @Test func trustedGPSTimeCorrectsWhatTheSessionWroteThisBoot() throws {
    // The board booted thinking it was 1970 + 1000 s; GPS says 2026.
    var h = EngineHarness(settings: Self.clockSettings, start: Moment(monotonic: 1000, wall: 1000))
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 10, speed: 5, from: &position)
    _ = h.press(.lap)
    let offset = 1_795_000_000.0
    h.commands.removeAll()
    Self.sendTimedFixes(offset: offset, to: &h, at: position)
    let corrections = h.commands.compactMap { if case .correctBoardClock(let c) = $0 { c } else { nil } }
    #expect(corrections.count == 1, "the third agreeing fix establishes GPS time, once")
    #expect(corrections.first?.systemOffset == offset)
    #expect(h.commands.contains(.correctWallTimes(sessionID: 1, seconds: offset, firstPoint: 0, firstLap: 1)))
    let event = try #require(
      h.commands.compactMap { if case .recordEvent(1, let e) = $0, e.kind == .clockCorrected { e } else { nil } }
        .first)
    #expect(event.value == offset)
    #expect(event.moment.wall == h.now.wall + offset)
    let session = try #require(h.engine.session)
    #expect(session.openedAt.wall == 1000 + offset)
    #expect(session.builder.startMoment?.wall == 1003 + offset)
    #expect(h.engine.status(at: h.now).lastPoint!.moment.wall > offset)
    #expect(h.engine.gpsClock?.isTrusted == true)
  }

  @Test func gpsTimeThatContradictsASynchronisedClockIsNotBelieved() {
    var h = EngineHarness(settings: Self.clockSettings, start: Moment(monotonic: 1000, wall: 1_795_000_000))
    h.send(.systemClockTrusted(true))
    Self.sendTimedFixes(offset: 3600, to: &h, at: origin)
    #expect(!h.commands.contains { if case .correctBoardClock = $0 { true } else { false } })
    // The same hour off on a clock nobody synchronised is the clock's error: GPS wins.
    h.send(.systemClockTrusted(false))
    Self.sendTimedFixes(offset: 3600, to: &h, at: origin)
    #expect(h.commands.contains { if case .correctBoardClock(let c) = $0 { c.systemOffset == 3600 } else { false } })
  }

  @Test func aBoardWithoutAGPSClockIgnoresFixTimes() {
    var h = EngineHarness(start: Moment(monotonic: 1000, wall: 1000))
    Self.sendTimedFixes(offset: 1_795_000_000, to: &h, at: origin)
    #expect(h.engine.gpsClock == nil)
    #expect(!h.commands.contains { if case .correctBoardClock = $0 { true } else { false } })
  }

  @Test func aResumedSessionCorrectsOnlyWhatThisBootWrote() throws {
    var h = EngineHarness(settings: Self.clockSettings)
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 10, speed: 5, from: &position)
    _ = h.press(.lap)
    h.ride(seconds: 5, speed: 5, from: &position)
    let (engine, _) = SessionEngine.resuming(
      h.engine.session!, settings: Self.clockSettings, nextSessionID: 2,
      gap: RecoveryGap(seconds: nil, basis: .unknown), at: Moment(monotonic: 5, wall: 1_795_000_000))
    var resumed = EngineHarness(settings: Self.clockSettings, start: Moment(monotonic: 5, wall: 1_795_000_000))
    resumed.engine = engine
    Self.sendTimedFixes(offset: 100, to: &resumed, at: position)
    #expect(
      resumed.commands.contains(.correctWallTimes(sessionID: 1, seconds: 100, firstPoint: 15, firstLap: 2)))
    #expect(resumed.engine.session!.openedAt == h.engine.session!.openedAt, "opened in the earlier boot: left alone")
  }

  /// A fix between two points is the speed shown; the maximum shown counts it already, and
  /// the next point records it.
  @Test func theSpeedShownNeverReadsAboveTheMaximum() throws {
    var h = EngineHarness(settings: EngineSettings(countdown: 0))
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 10, speed: 6, from: &position)
    h.advance(by: 0.5)
    position = position.moved(eastBy: 4.5)
    h.send(
      .reading(
        .gps(
          GPSFix(
            dimension: .threeD, latitude: position.latitude, longitude: position.longitude, altitude: 100, speed: 9,
            horizontalError: 3))))
    let status = h.engine.status(at: h.now)
    #expect(status.speed == 9)
    #expect(status.maxSpeed == 9, "max \(status.maxSpeed ?? -1)")
    h.advance(by: 0.5)
    h.send(.tick)
    #expect(h.engine.status(at: h.now).maxSpeed == 9, "recorded with the next point")
  }
}
