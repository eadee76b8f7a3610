import Testing

@testable import SensorProtocols

private func csc(_ revolutions: UInt32, _ time: UInt16) -> WheelRevolutionData {
  WheelRevolutionData(cumulativeRevolutions: revolutions, lastEventTime: time, eventTimeUnit: .oneOver1024)
}

private func cp(_ revolutions: UInt32, _ time: UInt16) -> WheelRevolutionData {
  WheelRevolutionData(cumulativeRevolutions: revolutions, lastEventTime: time, eventTimeUnit: .oneOver2048)
}

private func crank(_ revolutions: UInt16, _ time: UInt16) -> CrankRevolutionData {
  CrankRevolutionData(cumulativeRevolutions: revolutions, lastEventTime: time)
}

@Suite("Wheel speed and crank cadence from cumulative counters")
struct BLERevolutionRateTests {
  @Test func cscWheelSpeed() throws {
    var speed = try #require(WheelSpeedCalculator(circumference: 2.0))
    #expect(speed.update(csc(100, 0), at: 10) == .baseline)
    // 2 revolutions in 1024/1024 s of a 2 m wheel: 4 m/s.
    #expect(speed.update(csc(102, 1024), at: 11) == .value(4))
    // 3 revolutions in 1536/1024 s: 4 m/s again.
    #expect(speed.update(csc(105, 2560), at: 12) == .value(4))
  }

  @Test func cyclingPowerWheelTimeIsIn2048ths() throws {
    var speed = try #require(WheelSpeedCalculator(circumference: 2.0))
    #expect(speed.update(cp(100, 0), at: 10) == .baseline)
    // 2048 ticks of 1/2048 s are 1 s (read as 1/1024 s they would be 2 s and half the speed).
    #expect(speed.update(cp(102, 2048), at: 11) == .value(4))
  }

  @Test func wheelCounterAndEventTimeRollOver() throws {
    var speed = try #require(WheelSpeedCalculator(circumference: 2.0))
    #expect(speed.update(csc(0xFFFF_FFFF, 65000), at: 10) == .baseline)
    // uint32 revolutions 0xFFFFFFFF → 1 is 2 revolutions; uint16 time 65000 → 488 is 1024 ticks.
    #expect(speed.update(csc(1, 488), at: 11) == .value(4))
    var cpSpeed = try #require(WheelSpeedCalculator(circumference: 2.0))
    #expect(cpSpeed.update(cp(0xFFFF_FFFE, 0xF800), at: 10) == .baseline)
    #expect(cpSpeed.update(cp(0, 0), at: 11) == .value(4))
  }

  @Test func crankCadenceAndRollOver() throws {
    var cadence = try #require(CrankCadenceCalculator())
    #expect(cadence.update(crank(0xFFFF, 0xFC00), at: 10) == .baseline)
    // uint16 revolutions 0xFFFF → 0x0001 is 2, uint16 time 0xFC00 → 0x0000 is 1024 ticks: 120 rpm.
    #expect(cadence.update(crank(1, 0), at: 11) == .value(120))
    // 1 revolution in 768/1024 s: 80 rpm.
    #expect(cadence.update(crank(2, 768), at: 11.8) == .value(80))
  }

  @Test func noNewEventIsUnchangedThenStoppedAfterTheTimeout() throws {
    var speed = try #require(WheelSpeedCalculator(circumference: 2.0, stoppedAfter: 3))
    _ = speed.update(csc(10, 1000), at: 100)
    #expect(speed.update(csc(11, 2024), at: 101) == .value(2))
    // The same event again: nothing new, until 3 s after the last new event.
    #expect(speed.update(csc(11, 2024), at: 102) == .unchanged)
    #expect(speed.update(csc(11, 2024), at: 103.9) == .unchanged)
    #expect(speed.update(csc(11, 2024), at: 104) == .stopped)
    #expect(speed.update(csc(11, 2024), at: 200) == .stopped)
    // Rolling again: the first event after a stop is a new reference, the next a value.
    #expect(speed.update(csc(12, 9000), at: 201) == .baseline)
    #expect(speed.update(csc(13, 9512), at: 201.5) == .value(4))
  }

  @Test func anEventTimeWithoutARevolutionIsNoNewEvent() throws {
    var cadence = try #require(CrankCadenceCalculator(stoppedAfter: 4))
    _ = cadence.update(crank(50, 1024), at: 0)
    #expect(cadence.update(crank(51, 2048), at: 1) == .value(60))
    #expect(cadence.update(crank(51, 3000), at: 2) == .unchanged)
    // The reference stays the last real revolution (2048), so the next one measures from it.
    #expect(cadence.update(crank(52, 3072), at: 3) == .value(60))
  }

  @Test func aCountWithoutANewEventTimeIsRejected() throws {
    var cadence = try #require(CrankCadenceCalculator())
    _ = cadence.update(crank(50, 1024), at: 0)
    #expect(cadence.update(crank(52, 1024), at: 1) == .rejected(.revolutionsWithoutEventTime(delta: 2)))
    #expect(cadence.update(crank(53, 2048), at: 2) == .value(60))
  }

  @Test func counterResetAfterABatteryChangeIsRejectedThenFollowed() throws {
    var cadence = try #require(CrankCadenceCalculator())
    _ = cadence.update(crank(5000, 1024), at: 0)
    #expect(cadence.update(crank(5001, 2048), at: 1) == .value(60))
    // The pod restarts from 0: the modular difference is 60535 revolutions in 0.5 s.
    guard case .rejected(.implausibleRate(let rpm, let maximum)) = cadence.update(crank(0, 2560), at: 2) else {
      Issue.record("a counter reset was not rejected")
      return
    }
    #expect(rpm == 60535 * 60 * 2)
    #expect(maximum == 250)
    // Counting on from the new counter works at once.
    #expect(cadence.update(crank(1, 3584), at: 3) == .value(60))
  }

  @Test func aWheelCounterGoingBackwardsIsRejected() throws {
    var speed = try #require(WheelSpeedCalculator(circumference: 2.0))
    _ = speed.update(csc(1000, 0), at: 0)
    guard case .rejected(.implausibleRate) = speed.update(csc(999, 1024), at: 1) else {
      Issue.record("a backward step was not rejected")
      return
    }
  }

  @Test func limitsAre100KilometresPerHourAnd250Rpm() throws {
    var speed = try #require(WheelSpeedCalculator(circumference: 2.0))
    _ = speed.update(csc(0, 0), at: 0)
    // 13 revolutions in 1 s of a 2 m wheel: 26 m/s = 93.6 km/h; 14: 28 m/s = 100.8 km/h.
    #expect(speed.update(csc(13, 1024), at: 1) == .value(26))
    #expect(
      speed.update(csc(27, 2048), at: 2) == .rejected(.implausibleRate(28, maximum: WheelSpeedCalculator.maximumSpeed)))
    var cadence = try #require(CrankCadenceCalculator())
    _ = cadence.update(crank(0, 0), at: 0)
    #expect(cadence.update(crank(4, 1024), at: 1) == .value(240))
    #expect(cadence.update(crank(9, 2048), at: 2) == .rejected(.implausibleRate(300, maximum: 250)))
  }

  @Test func theLimitsThemselvesAreAcceptedAndNeverExceededByRounding() throws {
    // 25 revolutions in 6144/1024 s are 250 rpm exactly (found by fuzz-ble-revolutions: the
    // rate in rev/s passed the check, then ×60 gave 250.00000000000003).
    var cadence = try #require(CrankCadenceCalculator())
    _ = cadence.update(crank(0, 0), at: 0)
    #expect(cadence.update(crank(25, 6144), at: 1) == .value(250))
    // 5 revolutions of a 2.5 m wheel in 0.45 s: 27.777… m/s, exactly the 100 km/h limit.
    var speed = try #require(WheelSpeedCalculator(circumference: 2.5))
    _ = speed.update(csc(0, 0), at: 0)
    let reading = speed.update(csc(5, 461), at: 0.5)
    if case .value(let v) = reading {
      #expect(v <= WheelSpeedCalculator.maximumSpeed)
    } else if case .rejected(.implausibleRate(let v, let maximum)) = reading {
      #expect(v > maximum)
    } else {
      Issue.record("\(reading)")
    }
  }

  @Test func anotherEventTimeUnitStartsOver() throws {
    var speed = try #require(WheelSpeedCalculator(circumference: 2.0))
    _ = speed.update(csc(0, 0), at: 0)
    #expect(speed.update(cp(2, 2048), at: 1) == .baseline)
    #expect(speed.update(cp(4, 4096), at: 2) == .value(4))
  }

  @Test func stoppedAfterIsCappedBelowTheEventTimeRollOver() throws {
    // Asked for 60 s with a 1/2048 s event time (rolls over every 32 s): capped at 16 s, so a
    // difference is never taken across a possible roll-over.
    var speed = try #require(WheelSpeedCalculator(circumference: 2.0, stoppedAfter: 60))
    _ = speed.update(cp(0, 0), at: 0)
    #expect(speed.update(cp(0, 0), at: 15.9) == .unchanged)
    #expect(speed.update(cp(0, 0), at: 16) == .stopped)
    // 40 s later one revolution with an event time that rolled over: no value from it.
    #expect(speed.update(cp(1, 16384), at: 40) == .baseline)
  }

  @Test func invalidSettingsAreRefused() {
    #expect(WheelSpeedCalculator(circumference: 0) == nil)
    #expect(WheelSpeedCalculator(circumference: .nan) == nil)
    #expect(WheelSpeedCalculator(circumference: 2096) == nil)  // millimetres, not metres
    #expect(WheelSpeedCalculator(circumference: 2.096, stoppedAfter: 0) == nil)
    #expect(CrankCadenceCalculator(stoppedAfter: .infinity) == nil)
  }

  @Test func decodedNotificationsThroughTheCalculators() throws {
    // CP wheel + crank notifications a second apart, through decoder and calculators.
    let first = try CyclingPowerMeasurement(payload: hexBytes("30 00 fa 00 10 27 00 00 00 08 2c 01 00 04"))
    let second = try CyclingPowerMeasurement(payload: hexBytes("30 00 fa 00 13 27 00 00 00 10 2e 01 00 08"))
    var speed = try #require(WheelSpeedCalculator(circumference: 2.0))
    var cadence = try #require(CrankCadenceCalculator())
    #expect(speed.update(try #require(first.wheel), at: 0) == .baseline)
    #expect(cadence.update(try #require(first.crank), at: 0) == .baseline)
    // 3 revolutions in 2048/2048 s: 6 m/s; 2 crank revolutions in 1024/1024 s: 120 rpm.
    #expect(speed.update(try #require(second.wheel), at: 1) == .value(6))
    #expect(cadence.update(try #require(second.crank), at: 1) == .value(120))
  }
}
