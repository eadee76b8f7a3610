import Testing
import WorkoutCore
import WorkoutTestSupport

/// Plays the executor's part for a `RuntimeCore` on a manual clock: board and host time move
/// only when the test says (the board one-to-one with the host, offset), queued inputs and
/// device reads are lists, and the store is a list that takes writes, or refuses them while
/// `refusal` is set (the store's own behaviour is tested against SQLite in WorkoutStoreTests).
struct RuntimeDriver {
  var core: RuntimeCore
  var board: Moment
  var host: Double
  /// What the queue holds (other threads' inputs), in arrival order.
  var queue: [(input: EngineInput, moment: Moment)] = []
  /// What the engine-read devices will bring at their next read, and how old it will be.
  var deviceArrivals: [(input: EngineInput, age: Double)] = []
  var refusal: StorageFault?
  var written: [HeldWrite] = []
  var logs: [(level: LogLevel, text: String)] = []
  var notifications: [String] = []
  var indications: [IndicatorPattern] = []
  var corrections: [GPSClockCorrection] = []
  var endedSessions: [Int64] = []
  var deviceReads: [Double] = []
  var waits: [Double?] = []

  init(
    engine: SessionEngine = SessionEngine(settings: EngineSettings()), settings: RuntimeSettings? = nil,
    board: Moment = Moment(monotonic: 1000, wall: 1_795_000_000), host: Double = 50
  ) {
    self.board = board
    self.host = host
    core = RuntimeCore(
      engine: engine, settings: settings ?? RuntimeSettings(epoch: "test-boot", databasePath: "/tmp/test.db"),
      now: board)
  }

  var clocks: RuntimeClocks {
    let (board, host) = (board.monotonic, host)
    return RuntimeClocks(board: self.board, host: host) { host + ($0 - board) }
  }

  var points: [TrackPoint] {
    written.flatMap(\.commands).compactMap { if case .recordPoint(_, let p) = $0 { p } else { nil } }
  }

  var events: [SessionEvent] {
    written.flatMap(\.commands).compactMap { if case .recordEvent(_, let e) = $0 { e } else { nil } }
  }

  func logs(containing text: String) -> Int { logs.filter { $0.text.contains(text) }.count }

  mutating func perform(_ actions: [RuntimeAction]) {
    for action in actions {
      switch action {
      case .log(let level, let text): logs.append((level, text))
      case .indicate(let pattern): indications.append(pattern)
      case .chirp: break
      case .notifySystemd(let message): notifications.append(message)
      case .correctBoardClock(let correction): corrections.append(correction)
      case .sessionEnded(let id):
        // Only once the commit that ended it is done.
        #expect(written.flatMap(\.commands).contains { if case .finalizeSession(id, _) = $0 { true } else { false } })
        endedSessions.append(id)
      case .writeHeld:
        while let write = core.nextWrite {
          if let refusal {
            perform(core.refused(refusal, at: board, host: host))
            break
          }
          written.append(write)
          perform(core.committed(at: board, host: host))
        }
      }
    }
  }

  /// A rider's request, as the control socket hands it over.
  mutating func request(_ request: SessionRequest) -> RequestOutcome? {
    let step = core.handle(.request(request, .control), at: board, host: host)
    perform(step.actions)
    return step.outcome
  }

  /// Asks the core until it would wait; returns the host time it would wait until.
  @discardableResult
  mutating func runUntilIdle() -> Double? {
    for _ in 0..<100_000 {
      let queued: QueuedMessage? = queue.first.map { .input(at: $0.moment.monotonic) }
      switch core.next(clocks, queued: queued) {
      case .readDevices:
        deviceReads.append(board.monotonic)
        let now = board
        let arrivals = deviceArrivals.map { (input: $0.input, moment: now.advanced(by: -$0.age)) }
        deviceArrivals.removeAll()
        core.devicesRead(arrivals, at: clocks)
      case .takeQueued:
        let (input, moment) = queue.removeFirst()
        perform(core.handle(input, at: moment, host: host).actions)
      case .act(let actions):
        perform(actions)
      case .wait(let until, let actions):
        perform(actions)
        waits.append(until)
        return until
      }
    }
    Issue.record("the core never settled")
    return nil
  }

  /// Moves both clocks on by `seconds`, waking at every deadline the core asks for on the way,
  /// as the executor's wait would.
  mutating func advance(by seconds: Double) {
    let end = host + seconds
    var stuck = 0
    while let until = runUntilIdle(), until <= end {
      if until <= host {
        stuck += 1
        if stuck > 100 {
          Issue.record("the core keeps asking to wait until a time that has passed (\(until))")
          return
        }
      } else {
        stuck = 0
      }
      move(toHost: max(until, host))
    }
    move(toHost: end)
    runUntilIdle()
  }

  /// Both clocks jump without the loop running (a stalled process, a busy host).
  mutating func stall(for seconds: Double) {
    move(toHost: host + seconds)
  }

  private mutating func move(toHost newHost: Double) {
    board = board.advanced(by: newHost - host)
    host = newHost
  }
}

@Suite struct RuntimeCoreTests {
  static let origin = GeoPoint(latitude: 43.7134, longitude: -79.3661)

  /// A driver whose session runs from board time 1003 (a 3 s countdown from 1000).
  static func running(settings: RuntimeSettings? = nil) -> RuntimeDriver {
    var driver = RuntimeDriver(settings: settings)
    #expect(driver.request(.start) == .accepted(.prepared))
    driver.advance(by: 3.5)
    #expect(driver.core.engine.state == .running)
    return driver
  }

  @Test func theCountdownEndsAtItsDeadlineAndTheFirstPointIsTheNextWholeSecond() throws {
    var driver = RuntimeDriver()
    _ = driver.request(.start)
    let until = driver.runUntilIdle()
    #expect(until == 53, "the loop sleeps until the countdown's deadline (host 50 + 3)")
    #expect(driver.core.tickDue == nil, "no tick while counting down")
    driver.advance(by: 5.5)
    let running = try #require(driver.events.first { $0.to == .running })
    #expect(running.moment.monotonic == 1003, "the countdown ends at its deadline, not when the loop got there")
    #expect(driver.points.map(\.moment.monotonic) == [1004, 1005])
    #expect(driver.points.map(\.moment.wall) == [1_795_000_004, 1_795_000_005])
  }

  @Test func aStallIsCaughtUpSecondBySecondWithWhatWasSensedInItsOwnSecond() {
    var driver = Self.running()
    let before = driver.points.count
    driver.stall(for: 30)
    // A heart rate sensed in the middle of the stall, queued by its device's thread.
    driver.queue.append((.reading(.heartRate(bpm: 150)), Moment(monotonic: 1020.5, wall: 1_795_000_020.5)))
    driver.runUntilIdle()
    let caughtUp = driver.points.dropFirst(before)
    #expect(caughtUp.count == 30, "each second of the stall keeps its point")
    #expect(caughtUp.map(\.moment.monotonic) == (1004...1033).map(Double.init))
    #expect(caughtUp.first { $0.moment.monotonic == 1020 }?.heartRate == nil, "sensed after second 1020's tick")
    #expect(caughtUp.first { $0.moment.monotonic == 1021 }?.heartRate == 150)
    #expect(driver.logs(containing: "no input for") == 0)
  }

  @Test func aLongSilenceIsSkippedWithOneWarningNotABurstOfPoints() {
    var driver = Self.running()
    driver.advance(by: 2)
    let before = driver.points.count
    driver.stall(for: 600)
    driver.runUntilIdle()
    let after = driver.points.dropFirst(before)
    #expect(after.count == 1, "one point for the current second, not 600 about one instant")
    #expect(after.first?.moment.monotonic == driver.board.monotonic.rounded(.down))
    #expect(driver.logs(containing: "no input for") == 1)
    driver.advance(by: 3)
    #expect(driver.points.count == before + 4)
  }

  @Test func aStallIsCaughtUpToItsLastSensedInputAndTheSilenceAfterIsSkipped() {
    var driver = Self.running()
    driver.stall(for: 120)
    driver.queue.append((.reading(.heartRate(bpm: 140)), Moment(monotonic: 1023.5, wall: 1_795_000_023.5)))
    driver.runUntilIdle()
    // What was sensed in the gap goes into its own second; the silence after it is skipped.
    #expect(driver.points.map(\.moment.monotonic) == (1004...1023).map(Double.init) + [1123])
    #expect(driver.points.first { $0.moment.monotonic == 1023 }?.heartRate == nil)
    #expect(driver.points.last?.heartRate == nil, "a minute and a half later the reading is stale")
    #expect(driver.logs(containing: "no input for") == 1)
  }

  @Test func writesAreHeldThroughAFailingStoreAndWrittenInOrderWhenItRecovers() {
    var driver = Self.running()
    driver.advance(by: 2)
    let writtenBefore = driver.points.count
    driver.refusal = .diskFull("disk full: database or disk is full")
    driver.advance(by: 10)
    #expect(driver.points.count == writtenBefore, "nothing is written while the store refuses")
    #expect(driver.core.pendingWrites >= 10)
    #expect(driver.core.storageFailing)
    #expect(driver.core.engine.storageFailing)
    #expect(driver.logs(containing: "cannot write to /tmp/test.db: disk full") == 1, "one line per condition")
    #expect(driver.notifications.filter { $0.hasPrefix("STATUS=storage failing") }.count == 1)
    #expect(driver.indications.last == .fault)
    // The same condition in other words is the same condition.
    driver.refusal = .diskFull("disk full: another message")
    driver.advance(by: 3)
    #expect(driver.logs(containing: "cannot write to") == 1)

    driver.refusal = nil
    driver.advance(by: 1)
    #expect(driver.core.pendingWrites == 0)
    #expect(!driver.core.storageFailing)
    let sequences = driver.points.map(\.sequence)
    #expect(sequences == Array(0..<sequences.count), "every second, in order, none lost")
    #expect(driver.events.contains { $0.kind == .storageFailing }, "the fault is an event once it can be written")
    #expect(driver.logs(containing: "storage works again") == 1)
    #expect(driver.indications.last == .running)
  }

  @Test func aFailingStoreIsRetriedEverySecondWhenNothingElseHappens() {
    var driver = RuntimeDriver()
    driver.refusal = .readOnly("database is read-only: attempt to write")
    _ = driver.request(.start)
    #expect(driver.core.pendingWrites >= 1)
    _ = driver.request(.stop)
    driver.runUntilIdle()
    let retry = driver.waits.last ?? nil
    #expect(retry == 51, "the loop wakes to retry a second later, though nothing is due")
    driver.refusal = nil
    driver.advance(by: 1.5)
    #expect(driver.core.pendingWrites == 0)
    #expect(driver.core.engine.state == .ended, "the summary's commit ends the session")
  }

  @Test func anEndedSessionIsAnnouncedOnceItsEndIsCommittedNotBefore() throws {
    var driver = Self.running()
    driver.advance(by: 2)
    driver.refusal = .ioError("I/O error: disk I/O error")
    _ = driver.request(.stop)
    driver.advance(by: 3)
    #expect(driver.endedSessions.isEmpty, "nothing for the exports while the end is held in memory")
    driver.refusal = nil
    driver.advance(by: 2)
    #expect(driver.core.engine.state == .ended)
    let id = try #require(
      driver.written.flatMap(\.commands).lazy.compactMap { command -> Int64? in
        if case .finalizeSession(let id, _) = command { id } else { nil }
      }.first)
    #expect(driver.endedSessions == [id], "once, after the commit")
    driver.advance(by: 5)
    #expect(driver.endedSessions == [id])
  }

  @Test func theOldestHeldWriteIsGivenUpLoudlyPastTheLimit() {
    var settings = RuntimeSettings(epoch: "test-boot", databasePath: "/tmp/test.db")
    settings.pendingLimit = 5
    var driver = Self.running(settings: settings)
    driver.refusal = .ioError("I/O error: disk I/O error")
    driver.advance(by: 8)
    #expect(driver.core.pendingWrites == 5)
    #expect(driver.logs(containing: "giving up the oldest held second") >= 3)
  }

  @Test func aRemovedSensorLeavesTheStatusDevices() {
    var driver = Self.running()
    let at = driver.board
    _ = driver.core.handle(
      .device(DeviceStatus(device: .powerMeter, condition: .available, detail: "C1:00:00:00:00:01")), at: at,
      host: driver.host)
    #expect(driver.core.deviceConditions["powerMeter"] == "available: C1:00:00:00:00:01")
    _ = driver.core.handle(.deviceRemoved(.powerMeter), at: at, host: driver.host)
    #expect(driver.core.deviceConditions["powerMeter"] == nil)
  }

  @Test func theWatchdogIsPingedOnlyWhileTheLoopRuns() {
    var settings = RuntimeSettings(epoch: "test-boot", databasePath: "/tmp/test.db")
    settings.watchdogInterval = 10
    var driver = RuntimeDriver(settings: settings)
    let first = driver.runUntilIdle()
    #expect(driver.notifications == ["WATCHDOG=1"])
    #expect(first == 60, "idle, the loop wakes for the next ping and nothing else")
    driver.advance(by: 4)
    #expect(driver.notifications.count == 1, "not again before half the interval")
    driver.advance(by: 6)
    #expect(driver.notifications.count == 2)
    // A loop that is not asked (hung) sends nothing; the first decision after pings at once.
    driver.stall(for: 25)
    #expect(driver.notifications.count == 2)
    driver.runUntilIdle()
    #expect(driver.notifications.count == 3)
    // While recording, ticks ping as they go, no more often than half the interval.
    _ = driver.request(.start)
    driver.advance(by: 63)
    let pings = driver.notifications.filter { $0 == "WATCHDOG=1" }.count
    #expect((3 + 11)...(3 + 13) ~= pings)
  }

  @Test func devicesTheLoopReadsAreReadBeforeEachTickAndRarelyWhenIdle() throws {
    var settings = RuntimeSettings(epoch: "test-boot", databasePath: "/tmp/test.db")
    settings.readsDevices = true
    settings.idleReadInterval = 3
    var driver = RuntimeDriver(settings: settings)
    driver.advance(by: 9.5)
    #expect(driver.deviceReads == [1000, 1003, 1006, 1009], "idle: once in three seconds")
    _ = driver.request(.start)
    driver.advance(by: 6)
    // Counting down: every second; running: before each tick (1013, 1014, 1015).
    #expect(driver.deviceReads.suffix(3) == [1013, 1014, 1015])
    // A fix read at the tick of 1016 but 0.3 s old goes into 1016's point, not 1017's.
    var position = Self.origin
    position = position.moved(eastBy: 5)
    driver.deviceArrivals = [
      (
        .reading(
          .gps(
            GPSFix(
              dimension: .threeD, latitude: position.latitude, longitude: position.longitude, speed: 5,
              horizontalError: 3))), 0.3
      )
    ]
    driver.advance(by: 1)
    let point = try #require(driver.points.last)
    #expect(point.moment.monotonic == 1016)
    #expect(point.latitude == position.latitude)
  }

  @Test func gpsTimeCorrectsTheBoardClockOnceAndStampsAreTrustedAfter() throws {
    var engineSettings = EngineSettings()
    engineSettings.gpsClock = GPSClockSettings(earliestPlausible: 1_790_000_000)
    var settings = RuntimeSettings(epoch: "test-boot", databasePath: "/tmp/test.db")
    settings.readsDevices = true
    var driver = RuntimeDriver(
      engine: SessionEngine(settings: engineSettings, nextSessionID: 1), settings: settings,
      board: Moment(monotonic: 1000, wall: 1000))
    _ = driver.request(.start)
    driver.advance(by: 4.5)
    #expect(driver.written.allSatisfy { !$0.stamp.wallTrusted }, "a board that thinks it is 1970")
    for _ in 0..<3 {
      driver.deviceArrivals = [
        (
          .reading(
            .gps(
              GPSFix(
                // Read at the next whole second (half a second on), 0.2 s after it arrived.
                dimension: .threeD, time: driver.board.wall + 0.3 + 1_795_000_000, latitude: Self.origin.latitude,
                longitude: Self.origin.longitude, horizontalError: 3))), 0.2
        )
      ]
      driver.advance(by: 1)
    }
    let correction = try #require(driver.corrections.first)
    #expect(driver.corrections.count == 1)
    #expect(abs(correction.systemOffset - 1_795_000_000) < 0.01)
    #expect(driver.written.last?.stamp.wallTrusted == true)
    #expect(driver.events.contains { $0.kind == .clockCorrected })
  }

  @Test func aSynchronisedBoardClockIsWeighedAgainstGPSTime() {
    var engineSettings = EngineSettings()
    engineSettings.gpsClock = GPSClockSettings(earliestPlausible: 1_790_000_000)
    var driver = RuntimeDriver(engine: SessionEngine(settings: engineSettings))
    driver.perform(driver.core.boardClockTrusted(true, at: driver.board, host: driver.host))
    #expect(driver.core.engine.systemClockTrusted)
    #expect(driver.core.boardClockTrusted(true, at: driver.board, host: driver.host).isEmpty, "said once")
  }

  @Test func aStopAtATerminationSignalSavesTheSessionAndSaysWhatIsLost() {
    var driver = Self.running()
    driver.advance(by: 2)
    driver.perform(driver.core.shutDown(signalName: "SIGTERM", at: driver.board))
    #expect(driver.notifications.contains("STOPPING=1"))
    #expect(driver.written.last?.commands.first.map { if case .saveSnapshot = $0 { true } else { false } } == true)
    #expect(driver.core.lostAtStop.isEmpty)

    var failing = Self.running()
    failing.refusal = .ioError("I/O error: gone")
    failing.advance(by: 2)
    failing.perform(failing.core.shutDown(signalName: "SIGTERM", at: failing.board))
    failing.perform(failing.core.lostAtStop)
    #expect(failing.logs(containing: "writes the disk refused; they are lost") == 1)
  }

  /// A paused session resumed with part of its record damaged: the startup's commands light the
  /// LED's fault pattern at once; nothing ticks while paused, and the loop sleeps until the
  /// indication's end (not beyond it), then shows the paused rhythm.
  @Test func aDamagedRecordsIndicationEndsEvenWhileNothingTicks() throws {
    var h = EngineHarness(start: Moment(monotonic: 500, wall: 1_794_999_500))
    var position = Self.origin
    _ = h.press(.start)
    h.finishCountdown()
    h.ride(seconds: 20, speed: 5, from: &position)
    _ = h.press(.pause)
    let board = Moment(monotonic: 1000, wall: 1_795_000_000)
    let (engine, commands) = SessionEngine.resuming(
      try #require(h.engine.session), settings: EngineSettings(), nextSessionID: 2,
      gap: RecoveryGap(seconds: 10, basis: .monotonic), at: board, unreadable: UnreadableRows(laps: 1))
    var driver = RuntimeDriver(engine: engine, board: board)
    driver.perform(driver.core.replay(startup: commands, at: board, host: driver.host))
    #expect(driver.indications == [.fault])
    let end = driver.host + SessionEngine.damagedRecordIndication
    #expect(driver.runUntilIdle() == end, "asleep until the indication ends")
    driver.advance(by: SessionEngine.damagedRecordIndication + 1)
    #expect(driver.indications == [.fault, .paused])
    #expect(driver.core.engine.state == .paused)
  }
}
