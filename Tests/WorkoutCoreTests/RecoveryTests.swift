import Testing
import WorkoutTestSupport

@testable import WorkoutCore

struct RecoveryTests {
  func stamp(_ epoch: String, mono: Double, wall: Double, trusted: Bool) -> ClockStamp {
    ClockStamp(epoch: epoch, moment: Moment(monotonic: mono, wall: wall), wallTrusted: trusted)
  }

  @Test func sameEpochTrustsTheMonotonicClock() {
    let gap = RecoveryGap.between(
      stamp("boot-a", mono: 100, wall: 5, trusted: false), and: stamp("boot-a", mono: 112.5, wall: 3, trusted: false))
    #expect(gap == RecoveryGap(seconds: 12.5, basis: .monotonic))
  }

  @Test func aRebootNeedsATrustedWallClockOnBothSides() {
    let before = stamp("boot-a", mono: 100, wall: 1_700_000_000, trusted: true)
    #expect(
      RecoveryGap.between(before, and: stamp("boot-b", mono: 8, wall: 1_700_000_030, trusted: true))
        == RecoveryGap(seconds: 30, basis: .wallClock))
    #expect(
      RecoveryGap.between(before, and: stamp("boot-b", mono: 8, wall: 1_700_000_030, trusted: false))
        == RecoveryGap(seconds: nil, basis: .unknown))
    #expect(
      RecoveryGap.between(before, and: stamp("boot-b", mono: 8, wall: 1_600_000_000, trusted: true))
        == RecoveryGap(seconds: nil, basis: .unknown), "a clock that went backwards is not trusted")
  }

  /// A damaged record's clock reading (infinite, or negative where no clock goes) gives no
  /// gap, not one of 1e300 s in the ride's timer; its words never trap.
  @Test(arguments: [-1e300, -.infinity, .infinity, -1])
  func aReadingNoClockGivesMeasuresNoGap(_ reading: Double) throws {
    let now = stamp("boot-a", mono: 112.5, wall: 1_700_000_030, trusted: true)
    #expect(
      RecoveryGap.between(stamp("boot-a", mono: reading, wall: 1_700_000_000, trusted: true), and: now)
        == RecoveryGap(seconds: nil, basis: .unknown))
    #expect(
      RecoveryGap.between(stamp("boot-0", mono: 100, wall: reading, trusted: true), and: now)
        == RecoveryGap(seconds: nil, basis: .unknown))
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    h.ride(seconds: 10, speed: 6, from: &position)
    let session = try #require(h.engine.session)
    let (engine, commands) = SessionEngine.resuming(
      session, settings: h.engine.settings, nextSessionID: 2,
      gap: .between(
        stamp("e", mono: reading, wall: 0, trusted: false), and: stamp("e", mono: 50, wall: 0, trusted: false)),
      at: h.now.advanced(by: 30))
    #expect(engine.status(at: h.now.advanced(by: 30)).timer == session.builder.totals.timer)
    #expect(commands.contains { if case .recordEvent(_, let event) = $0 { event.detail == "unknown" } else { false } })
    #expect(
      formatSeconds(1e300) == "1e+300 s" && formatSeconds(.infinity) == "inf s" && formatSeconds(-.infinity) == "-inf s"
    )
  }

  /// Runs a session to `state`, then resumes its snapshot as a restarted service would.
  func resumed(
    in state: SessionState, gap: RecoveryGap, unreadable: UnreadableRows = UnreadableRows()
  ) -> (before: ActiveSession, engine: SessionEngine, commands: [EngineCommand]) {
    var h = EngineHarness()
    var position = GeoPoint(latitude: 50, longitude: 8)
    _ = h.press(.start)
    if state != .prepared {
      h.finishCountdown()
      h.ride(seconds: 30, speed: 5, heartRate: 150, from: &position)
    }
    if state == .paused { _ = h.press(.pause) }
    var before = h.engine.session!
    if state == .stopped {
      // A crash between the stop and the store's finalisation.
      _ = before.machine.handle(.request(.stop, .gpio), at: h.now)
    }
    let restartedAt = Moment(monotonic: 7, wall: h.now.wall + (gap.seconds ?? 0))
    let (engine, commands) = SessionEngine.resuming(
      before, settings: EngineSettings(), nextSessionID: 1, gap: gap, at: restartedAt, unreadable: unreadable)
    return (before, engine, commands)
  }

  /// A damaged record found at resume shows on the LED (not only on a buzzer a board may not
  /// have): the fault pattern from the resume, for `damagedRecordIndication`, then the ride's
  /// own rhythm; the runtime wakes for its end while nothing ticks (paused). The alarm sounds
  /// once, as the fault begins.
  @Test(arguments: [SessionState.running, .paused])
  func aDamagedRecordShowsOnTheLEDForAMinute(_ state: SessionState) throws {
    let (_, engine, commands) = resumed(
      in: state, gap: RecoveryGap(seconds: 10, basis: .monotonic), unreadable: UnreadableRows(points: 2))
    #expect(commands.filter { $0 == .indicate(.fault) }.count == 1)
    #expect(commands.filter { $0 == .chirp(.alarm) }.count == 1)
    #expect(engine.indicator == .fault)
    let end = 7 + SessionEngine.damagedRecordIndication
    #expect(engine.nextDeadline == end)
    var h = EngineHarness()
    h.engine = engine
    h.now = Moment(monotonic: 7, wall: 1_700_000_000)
    var position = GeoPoint(latitude: 50, longitude: 8)
    if state == .running {
      h.ride(seconds: Int(SessionEngine.damagedRecordIndication) - 1, speed: 5, from: &position)
    } else {
      h.advance(by: SessionEngine.damagedRecordIndication - 1)
      h.send(.reading(.heartRate(bpm: 140)))
    }
    #expect(h.engine.indicator == .fault, "shown until the minute is over")
    #expect(!h.commands.contains { if case .indicate = $0 { true } else { false } })
    h.commands = []
    h.now = Moment(monotonic: end, wall: 1_700_000_000 + 60)
    h.send(state == .running ? .tick : .wakeup)
    #expect(
      h.commands.filter { if case .indicate = $0 { true } else { false } } == [
        .indicate(state == .running ? .running : .paused)
      ])
    #expect(!h.commands.contains(.chirp(.alarm)))
    #expect(h.engine.damageIndicatedUntil == nil)
    #expect(h.engine.status(at: h.now).unreadable == UnreadableRows(points: 2), "status goes on saying it")
  }

  /// A device fault under way when the minute ends keeps the fault pattern (it is its own); a
  /// new session ends the old one's indication at once; a resume that found nothing damaged
  /// leaves the LED to the first input, as before.
  @Test func theIndicationEndsWithItsSessionAndLeavesOtherFaults() throws {
    let (_, engine, _) = resumed(
      in: .paused, gap: RecoveryGap(seconds: 10, basis: .monotonic), unreadable: UnreadableRows(events: 1))
    var faulty = EngineHarness()
    faulty.engine = engine
    faulty.now = Moment(monotonic: 7, wall: 1_700_000_000)
    faulty.advance(by: 5)
    faulty.send(.device(DeviceStatus(device: .barometer, condition: .absent, detail: "no /dev/i2c-1")))
    faulty.now = Moment(monotonic: 7 + SessionEngine.damagedRecordIndication, wall: 1_700_000_060)
    faulty.send(.wakeup)
    #expect(faulty.engine.damageIndicatedUntil == nil)
    #expect(faulty.engine.indicator == .fault, "the barometer's own fault goes on")
    #expect(!faulty.commands.contains { if case .indicate = $0 { true } else { false } })
    #expect(!faulty.commands.contains(.chirp(.alarm)), "no second alarm: the fault never ended")

    var h = EngineHarness()
    h.engine = engine
    h.now = Moment(monotonic: 7, wall: 1_700_000_000)
    _ = h.press(.stop)
    h.advance(by: 1)
    _ = h.press(.start)
    #expect(h.engine.damageIndicatedUntil == nil, "a new session: the old record's damage is not its")
    #expect(h.engine.indicator != .fault)

    let clean = resumed(in: .paused, gap: RecoveryGap(seconds: 10, basis: .monotonic))
    #expect(clean.engine.damageIndicatedUntil == nil && clean.engine.indicator == .off)
    #expect(!clean.commands.contains(.chirp(.alarm)))
  }

  @Test(arguments: [SessionState.prepared, .running, .paused, .stopped])
  func resumesInTheStateTheLogSays(_ state: SessionState) throws {
    let (before, engine, commands) = resumed(in: state, gap: RecoveryGap(seconds: 10, basis: .monotonic))
    #expect(engine.state == state)
    #expect(engine.nextSessionID == before.id + 1)
    let recovered = try #require(
      commands.compactMap { if case .recordEvent(_, let e) = $0, e.kind == .recovered { e } else { nil } }.first)
    #expect(recovered.from == state)
    #expect(recovered.to == state)
    #expect(recovered.cause == "recovery")
    #expect(recovered.value == 10)
    #expect(recovered.detail == "monotonic")
    #expect(commands.contains(.saveSnapshot(engine.session!)))
    switch state {
    case .prepared:
      #expect(engine.nextDeadline == 10, "the countdown starts again")
    case .stopped:
      #expect(commands.contains { if case .finalizeSession = $0 { true } else { false } })
    default:
      #expect(!commands.contains { if case .finalizeSession = $0 { true } else { false } })
    }
  }

  @Test func theGapCountsAsTimerTimeOnlyWhenRunning() {
    let running = resumed(in: .running, gap: RecoveryGap(seconds: 10, basis: .monotonic))
    #expect(running.engine.session!.builder.totals.timer == running.before.builder.totals.timer + 10)
    #expect(running.engine.session!.builder.totals.elapsed == running.before.builder.totals.elapsed + 10)
    let paused = resumed(in: .paused, gap: RecoveryGap(seconds: 10, basis: .monotonic))
    #expect(paused.engine.session!.builder.totals.timer == paused.before.builder.totals.timer)
    #expect(paused.engine.session!.builder.totals.elapsed == paused.before.builder.totals.elapsed + 10)
    let unknown = resumed(in: .running, gap: RecoveryGap(seconds: nil, basis: .unknown))
    #expect(unknown.engine.session!.builder.totals.timer == unknown.before.builder.totals.timer)
  }

  @Test func afterAResumeTheRideGoesOnAndBridgesTheGap() {
    var (_, engine, _) = resumed(in: .running, gap: RecoveryGap(seconds: 10, basis: .monotonic))
    let distanceBefore = engine.session!.builder.totals.distance
    let pointsBefore = engine.session!.builder.pointCount
    var now = Moment(monotonic: 7, wall: 0)
    // The rider went on at 5 m/s: 10 s away plus 1 s = 55 m further east.
    var position = GeoPoint(latitude: 50, longitude: 8)
    for _ in 0..<30 { position = position.moved(eastBy: 5) }
    position = position.moved(eastBy: 55)
    now = now.advanced(by: 1)
    _ = engine.handle(
      .reading(.gps(GPSFix(dimension: .threeD, latitude: position.latitude, longitude: position.longitude, speed: 5))),
      at: now)
    let step = engine.handle(.tick, at: now)
    #expect(
      step.commands.contains { if case .recordPoint(_, let p) = $0 { p.sequence == pointsBefore } else { false } })
    #expect(abs(engine.session!.builder.totals.distance - distanceBefore - 55) < 0.5)
  }
}

/// A running session saves its checkpoint when it changes and every `checkpointInterval`
/// points, not every second: the per-second write is the point alone.
struct CheckpointCadenceTests {
  @Test func aRunningSessionCheckpointsEveryIntervalAndOnEachChange() {
    var h = EngineHarness()
    var position = GeoPoint(latitude: 50, longitude: 8)
    _ = h.press(.start)
    h.finishCountdown()
    h.commands.removeAll()
    let interval = SessionEngine.checkpointInterval
    h.ride(seconds: interval * 5 / 2, speed: 5, heartRate: 140, from: &position)
    let saved = h.commands.compactMap { command -> Int? in
      if case .saveSnapshot(let session) = command { session.builder.pointCount } else { nil }
    }
    let points = h.commands.filter { if case .recordPoint = $0 { true } else { false } }.count
    #expect(points == interval * 5 / 2)
    #expect(saved == [interval, 2 * interval])
    h.commands.removeAll()
    _ = h.press(.pause)
    #expect(h.commands.contains { if case .saveSnapshot = $0 { true } else { false } }, "a transition saves")
  }

  /// The points after a checkpoint climb as the live ride did. On a day of 1030 hPa the
  /// barometer's pressure altitude reads 139 m below the GPS's until the sea-level calibration
  /// settles (`settles`: 30 fixes with a vertical error after the checkpoint). Either way the
  /// barometer is lost later and GPS altitude takes over. Counted from the points' calibrated
  /// altitudes, in one accumulator, the settling or the change of source was a 139 m climb.
  @Test(arguments: [true, false])
  func theRebuildClimbsAsTheLiveRideDid(settles: Bool) throws {
    var h = EngineHarness()
    var position = GeoPoint(latitude: 50, longitude: 8)
    _ = h.press(.start)
    h.finishCountdown()
    let interval = SessionEngine.checkpointInterval
    for second in 0..<(2 * interval - 1) {
      h.advance(by: 1)
      position = position.moved(eastBy: 5)
      let altitude = 100 + 0.3 * Double(second)
      if second < interval + 150 {
        let pressure = try #require(BarometricAltitude.pressure(altitude: altitude, seaLevelPressure: 103_000))
        h.send(.reading(.barometer(pressure: pressure, temperature: 15)))
      }
      var fix = GPSFix(
        dimension: .threeD, latitude: position.latitude, longitude: position.longitude, altitude: altitude,
        speed: 5, horizontalError: 3)
      if settles, second > interval + 10 { fix.verticalError = 4 }
      h.send(.reading(.gps(fix)))
      h.send(.tick)
    }
    let checkpoint = try #require(
      h.commands.compactMap { if case .saveSnapshot(let s) = $0 { s } else { nil } }.last)
    let later = h.commands.compactMap { if case .recordPoint(_, let p) = $0 { p } else { nil } }
      .filter { $0.sequence >= checkpoint.builder.pointCount }
    #expect(checkpoint.builder.pointCount == interval)
    let settled = try #require(h.engine.session).builder.elevation.calibrator.isSettled
    #expect(settled == settles)
    let calibrated = later.compactMap(\.barometricAltitude)
    #expect(zip(calibrated, calibrated.dropFirst()).contains { $1 - $0 > 100 } == settles)
    #expect(later.last?.pressure == nil && later.last?.barometricAltitude == nil)
    var rebuild = SessionRebuild(checkpoint: checkpoint)
    for point in later { rebuild.add(point) }
    let live = try #require(h.engine.session).builder.totals
    let rebuilt = rebuild.session.builder.totals
    // The climb of the points after the checkpoint, 0.3 m a second for 299 s; an accumulator's
    // ascent lags the height by less than its 4 s filter's.
    #expect(abs(rebuilt.ascent - live.ascent) < 3, "live \(live.ascent) m, rebuilt \(rebuilt.ascent) m")
    #expect(rebuilt.descent < 1 && live.descent < 1, "live \(live.descent) m, rebuilt \(rebuilt.descent) m")
    #expect(rebuilt.ascent - checkpoint.builder.totals.ascent > 80)
  }

  /// The checkpoint plus the points after it give back what the live builder had.
  @Test func foldingThePointsAfterACheckpointGivesTheLiveTotals() throws {
    var h = EngineHarness()
    var position = GeoPoint(latitude: 50, longitude: 8)
    _ = h.press(.start)
    h.finishCountdown()
    // The longest roll-forward: one point short of the next checkpoint.
    h.ride(seconds: 2 * SessionEngine.checkpointInterval - 1, speed: 6, heartRate: 150, from: &position)
    let checkpoint = try #require(
      h.commands.compactMap { if case .saveSnapshot(let s) = $0 { s } else { nil } }.last)
    let later = h.commands.compactMap { if case .recordPoint(_, let p) = $0 { p } else { nil } }
      .filter { $0.sequence >= checkpoint.builder.pointCount }
    #expect(checkpoint.builder.pointCount == SessionEngine.checkpointInterval)
    #expect(later.count == SessionEngine.checkpointInterval - 1)
    var rebuild = SessionRebuild(checkpoint: checkpoint)
    for point in later { rebuild.add(point) }
    let live = try #require(h.engine.session).builder
    let rebuilt = rebuild.session.builder
    #expect(rebuilt.pointCount == live.pointCount)
    #expect(rebuilt.totals.distance == live.totals.distance)
    #expect(rebuilt.totals.timer == live.totals.timer)
    #expect(rebuilt.totals.speed == live.totals.speed)
    #expect(rebuilt.totals.heartRate == live.totals.heartRate)
    #expect(rebuilt.lapTotals.distance == live.lapTotals.distance)
  }
}
