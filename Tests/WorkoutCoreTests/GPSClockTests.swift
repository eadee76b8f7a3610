import Testing

@testable import WorkoutCore

@Suite("GPS clock")
struct GPSClockTests {
  /// 2019-01-01T00:00:00Z, as the floor of a build from early 2019.
  let floor2019 = 1_546_300_800.0
  /// 2019-04-06T23:57:24Z, just after the April 2019 GPS week rollover.
  let april2019 = 1_554_595_044.0

  func fix(_ time: Double?) -> GPSFix {
    GPSFix(dimension: .threeD, time: time, latitude: 48.15, longitude: 11.58)
  }

  @Test("the plausible window: a 1999 rollover date and a 2038 date are not believed")
  func window() {
    let settings = GPSClockSettings(earliestPlausible: floor2019)
    #expect(GPSClock.rejection(of: april2019, settings: settings) == nil)
    let rolledBack = april2019 - GPSClockSettings.gpsWeekRolloverPeriod  // 1999-08-21
    #expect(
      GPSClock.rejection(of: rolledBack, settings: settings)
        == .beforeEarliestPlausible(time: rolledBack, earliest: floor2019))
    let rolledForward = april2019 + GPSClockSettings.gpsWeekRolloverPeriod  // 2038-11-21
    #expect(
      GPSClock.rejection(of: rolledForward, settings: settings)
        == .afterLatestPlausible(time: rolledForward, latest: floor2019 + GPSClockSettings.gpsWeekRolloverPeriod))
    #expect(GPSClock.rejection(of: nil, settings: settings) == .noTime)
    #expect(GPSClock.rejection(of: .nan, settings: settings) == .noTime)
    // The default floor is a 2025 build: April 2019 is then too early to be true.
    #expect(GPSClock.rejection(of: april2019, settings: GPSClockSettings()) != nil)
  }

  @Test("trusted after three agreeing readings; corrects a board that thinks it is 1970")
  func establishes() throws {
    var clock = GPSClock(settings: GPSClockSettings(earliestPlausible: floor2019))
    // Boot at wall 30 (1970), monotonic 5; fixes arrive 0.3 s after their epoch.
    func moment(_ i: Double) -> Moment { Moment(monotonic: 5 + i + 0.3, wall: 30 + i + 0.3) }
    #expect(clock.observe(fix(april2019), at: moment(0)) == .pending(agreeing: 1, required: 3))
    #expect(clock.observe(fix(april2019 + 1), at: moment(1)) == .pending(agreeing: 2, required: 3))
    guard case .established(let c) = clock.observe(fix(april2019 + 2), at: moment(2)) else {
      Issue.record("not established")
      return
    }
    #expect(abs(c.systemOffset - (april2019 - 30.3)) < 1e-6)
    #expect(abs(c.monotonicOffset - (april2019 - 5.3)) < 1e-6)
    #expect(clock.isTrusted)
    // Corrected wall time of a later moment: monotonic + offset, whatever the wall clock says.
    let later = Moment(monotonic: 105.3, wall: 1)
    #expect(abs(clock.wallTime(at: later) - (april2019 + 100)) < 1e-6)
    #expect(abs(try #require(clock.wallTime(atMonotonic: 5.3)) - april2019) < 1e-6)
    #expect(clock.observe(fix(april2019 + 3.4), at: moment(3)) == .confirmed)
  }

  @Test("a reading that disagrees restarts the count; a time-less fix is never used")
  func disagreement() {
    var clock = GPSClock(settings: GPSClockSettings(earliestPlausible: floor2019))
    _ = clock.observe(fix(april2019), at: Moment(monotonic: 0, wall: 0))
    _ = clock.observe(fix(april2019 + 1), at: Moment(monotonic: 1, wall: 1))
    // A stale epoch (10 s old) arrives: not agreeing, the run starts again from it.
    #expect(clock.observe(fix(april2019 - 8), at: Moment(monotonic: 2, wall: 2)) == .pending(agreeing: 1, required: 3))
    #expect(clock.observe(fix(nil), at: Moment(monotonic: 3, wall: 3)) == .rejected(.noTime))
    #expect(clock.observe(fix(april2019 + 4), at: Moment(monotonic: 4, wall: 4)) == .pending(agreeing: 1, required: 3))
    #expect(!clock.isTrusted)
    #expect(clock.wallTime(at: Moment(monotonic: 4, wall: 4)) == 4)
  }

  @Test("after trust, a lasting change of the receiver's time moves the correction")
  func corrected() throws {
    var clock = GPSClock(settings: GPSClockSettings(earliestPlausible: floor2019, requiredAgreeing: 2))
    _ = clock.observe(fix(april2019), at: Moment(monotonic: 0, wall: 0))
    guard case .established(let first) = clock.observe(fix(april2019 + 1), at: Moment(monotonic: 1, wall: 1)) else {
      Issue.record("not established")
      return
    }
    // The receiver's time jumps by 18 s (it learned the leap seconds) and stays there.
    #expect(clock.observe(fix(april2019 + 20), at: Moment(monotonic: 2, wall: 2)) == .pending(agreeing: 1, required: 2))
    guard case .corrected(let from, let to) = clock.observe(fix(april2019 + 21), at: Moment(monotonic: 3, wall: 3))
    else {
      Issue.record("not corrected")
      return
    }
    #expect(from == first)
    #expect(abs(to.monotonicOffset - first.monotonicOffset - 18) < 1e-6)
  }

  @Test("with a trusted system clock, a GPS time far from it is the receiver's error")
  func trustedSystemClock() {
    var clock = GPSClock(settings: GPSClockSettings(earliestPlausible: floor2019, requiredAgreeing: 1))
    let now = april2019 + 3_600
    #expect(
      clock.observe(fix(april2019), at: Moment(monotonic: 0, wall: now), systemClockTrusted: true)
        == .rejected(.contradictsTrustedSystemClock(offset: -3_600)))
    guard
      case .established(let c) = clock.observe(
        fix(now + 0.5), at: Moment(monotonic: 1, wall: now), systemClockTrusted: true)
    else {
      Issue.record("not established")
      return
    }
    #expect(c.systemOffset == 0.5)
  }
}
