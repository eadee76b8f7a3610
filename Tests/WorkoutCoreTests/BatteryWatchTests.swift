import Testing

@testable import WorkoutCore

@Suite("Battery watch")
struct BatteryWatchTests {
  func onBattery(_ level: Double?, timeToEmpty: Double? = nil) -> BatteryReading {
    BatteryReading(supply: "BAT0", level: level, status: .discharging, timeToEmpty: timeToEmpty)
  }

  func charging(_ level: Double) -> BatteryReading {
    BatteryReading(supply: "BAT0", level: level, status: .charging, externalPower: true)
  }

  /// Feeds a level falling `perHour` % an hour from `start`, a reading every `every` seconds
  /// over `seconds`, rounded to whole percents as a gauge reports them; returns the events.
  func ride(
    _ watch: inout BatteryWatch, from start: Double, perHour: Double, over seconds: Double, every: Double = 5,
    at t0: Double = 0
  ) -> [BatteryWatch.Event] {
    var events: [BatteryWatch.Event] = []
    var t = 0.0
    while t <= seconds {
      events += watch.observe(onBattery((start - perHour * t / 3600).rounded()), at: t0 + t)
      events += watch.advance(to: t0 + t)
      t += every
    }
    return events
  }

  @Test("the drain is this ride's over the last minutes, from whole-percent readings")
  func drainEstimate() {
    var watch = BatteryWatch()
    _ = ride(&watch, from: 80, perHour: 12, over: 200)
    #expect(watch.drainPerHour == nil, "under five minutes of readings: no estimate yet")
    #expect(watch.timeLeft == nil)
    _ = ride(&watch, from: 80 - 12 * 205 / 3600, perHour: 12, over: 1_800, at: 205)
    let drain = try! #require(watch.drainPerHour)
    #expect(abs(drain - 12) < 1.5, "\(drain)")
    let left = try! #require(watch.timeLeft)
    // About 74 % at 12 %/h: some six hours.
    #expect(abs(left - 74.0 / 12 * 3600) < 3600, "\(left)")
    #expect(watch.alert == .normal)
  }

  @Test("a level that holds has no drain and no time left; the gauge's own estimate wins")
  func holdingAndGaugeEstimate() {
    var watch = BatteryWatch()
    for t in stride(from: 0.0, through: 900, by: 30) { _ = watch.observe(onBattery(50), at: t) }
    #expect(watch.drainPerHour == 0)
    #expect(watch.timeLeft == nil)
    _ = watch.observe(onBattery(50, timeToEmpty: 7_200), at: 930)
    #expect(watch.timeLeft == 7_200)
  }

  @Test("a level wobbling around the low threshold warns once; it re-arms 2 points above")
  func hysteresis() {
    var watch = BatteryWatch()
    var events: [BatteryWatch.Event] = []
    for (i, level) in [16.0, 15, 16, 15, 16, 15, 16].enumerated() {
      events += watch.observe(onBattery(level), at: Double(i) * 60)
    }
    #expect(events == [.low(level: 15)])
    #expect(watch.alert == .low)
    // Up to 17 (charging a little) re-arms; the next fall to 15 warns again.
    #expect(watch.observe(onBattery(17), at: 600) == [.recovered(level: 17)])
    #expect(watch.observe(onBattery(15), at: 660) == [.low(level: 15)])
  }

  @Test("critical by level: the countdown, then the stop, asked for once")
  func criticalByLevel() {
    var watch = BatteryWatch()
    #expect(watch.observe(onBattery(14), at: 0) == [.low(level: 14)])
    #expect(watch.observe(onBattery(5), at: 10) == [.critical(detail: "level 5 %", deadline: 70)])
    #expect(watch.alert == .critical)
    #expect(watch.deadline == 70)
    #expect(watch.countdownRemaining(at: 40) == 30)
    // A wobble back to 6 % is not 2 points above: nothing changes.
    #expect(watch.observe(onBattery(6), at: 20).isEmpty)
    #expect(watch.advance(to: 69.9).isEmpty)
    #expect(watch.advance(to: 70) == [.stopDue])
    #expect(watch.stopRequested)
    #expect(watch.deadline == nil)
    #expect(watch.advance(to: 200).isEmpty)
    #expect(watch.observe(onBattery(4), at: 210).isEmpty)
  }

  @Test("critical by the time left, at this ride's drain, with the level above 5 %")
  func criticalByTimeLeft() {
    var watch = BatteryWatch()
    // 60 %/h (a small battery under load): at 9 %, nine minutes left.
    let events = ride(&watch, from: 14, perHour: 60, over: 300, every: 10)
    #expect(events.first == .low(level: 14))
    guard case .critical(let detail, _)? = events.last else {
      Issue.record("no critical event: \(events)")
      return
    }
    #expect(detail.hasSuffix(" left"), "\(detail)")
    #expect(watch.latest?.level ?? 0 > 5)
    #expect(watch.alert == .critical)
  }

  @Test("the gauge's time to empty under the limit is critical too")
  func criticalByGauge() {
    var watch = BatteryWatch()
    #expect(
      watch.observe(onBattery(30, timeToEmpty: 540), at: 0) == [.critical(detail: "9 min 00 s left", deadline: 60)])
  }

  @Test("a charger plugged in during the countdown cancels it; unplugged while critical, it starts again")
  func chargerCancels() {
    var watch = BatteryWatch()
    _ = watch.observe(onBattery(4), at: 0)
    #expect(watch.deadline == 60)
    #expect(watch.observe(charging(4), at: 30) == [.countdownCancelled(detail: "a charger is plugged in")])
    #expect(watch.deadline == nil)
    #expect(watch.advance(to: 100).isEmpty)
    #expect(!watch.stopRequested)
    #expect(watch.observe(charging(5), at: 110).isEmpty)
    #expect(watch.observe(onBattery(5), at: 120) == [.critical(detail: "level 5 %", deadline: 180)])
  }

  @Test("a level that comes back above the thresholds cancels the countdown and ends the warnings")
  func levelReturns() {
    var watch = BatteryWatch()
    _ = watch.observe(onBattery(5), at: 0)
    #expect(watch.observe(charging(6), at: 10) == [.countdownCancelled(detail: "a charger is plugged in")])
    #expect(watch.observe(charging(7), at: 300) == [])
    #expect(watch.alert == .low)
    // Unplugged at 7 %: no longer critical, still low (no new warning: it was never cleared).
    #expect(watch.observe(onBattery(7), at: 310).isEmpty)
    #expect(watch.observe(charging(17), at: 3_000) == [.recovered(level: 17)])
    #expect(watch.alert == .normal)
    // A gauge that jumps back (a voltage gauge once the load drops) cancels a running countdown.
    var jumpy = BatteryWatch()
    _ = jumpy.observe(onBattery(5), at: 0)
    #expect(
      jumpy.observe(onBattery(20), at: 20) == [
        .countdownCancelled(detail: "the level is back to 20 %"), .recovered(level: 20),
      ])
    #expect(jumpy.deadline == nil)
  }

  @Test("on the charger no warning begins, and the drain starts afresh when it discharges")
  func onChargerNoWarning() {
    var watch = BatteryWatch()
    #expect(watch.observe(charging(3), at: 0).isEmpty)
    #expect(watch.alert == .normal)
    #expect(watch.deadline == nil)
    #expect(watch.timeLeft == nil)
  }

  @Test("a reading without a level (voltage only) warns of nothing")
  func noLevel() {
    var watch = BatteryWatch()
    #expect(watch.observe(BatteryReading(supply: "ups", voltage: 3.9, status: .discharging), at: 0).isEmpty)
    #expect(watch.alert == .normal)
    #expect(watch.drainPerHour == nil)
  }
}
