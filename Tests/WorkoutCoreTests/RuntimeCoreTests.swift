import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// Decisions of the runtime core asked one at a time. The loop that carries them out is the real
/// `ServiceRuntime`'s, tested on a manual clock in WorkoutDaemonTests.
@Suite struct RuntimeCoreTests {
  static let origin = GeoPoint(latitude: 43.7134, longitude: -79.3661)
  static let board = Moment(monotonic: 1000, wall: 1_795_000_000)
  static let settings = RuntimeSettings(epoch: "test-boot", databasePath: "/tmp/test.db")

  /// The board 950 s ahead of the host.
  static func clocks(at board: Moment) -> RuntimeClocks {
    RuntimeClocks(board: board, host: board.monotonic - 950) { $0 - 950 }
  }

  /// What the core asks for until it would wait, every held write committed at once; the wait's
  /// host deadline and every action on the way.
  static func untilWait(_ core: inout RuntimeCore, at board: Moment) -> (until: Double?, actions: [RuntimeAction]) {
    var actions: [RuntimeAction] = []
    for _ in 0..<1000 {
      switch core.next(clocks(at: board), queued: nil) {
      case .readDevices: core.devicesRead([], at: clocks(at: board))
      case .takeQueued: Issue.record("nothing was queued")
      case .act(let more): actions += more
      case .wait(let until, let more):
        actions += more
        return (until, actions)
      }
      while core.nextWrite != nil { actions += core.committed(at: board, host: board.monotonic - 950) }
    }
    Issue.record("the core never settled")
    return (nil, actions)
  }

  @Test func aSynchronisedBoardClockIsWeighedAgainstGPSTime() {
    var engineSettings = EngineSettings()
    engineSettings.gpsClock = GPSClockSettings(earliestPlausible: 1_790_000_000)
    var core = RuntimeCore(engine: SessionEngine(settings: engineSettings), settings: Self.settings, now: Self.board)
    #expect(!core.boardClockTrusted(true, at: Self.board, host: 50).isEmpty)
    #expect(core.engine.systemClockTrusted)
    #expect(core.boardClockTrusted(true, at: Self.board, host: 50).isEmpty, "said once")
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
    let (engine, commands) = SessionEngine.resuming(
      try #require(h.engine.session), settings: EngineSettings(), nextSessionID: 2,
      gap: RecoveryGap(seconds: 10, basis: .monotonic), at: Self.board, unreadable: UnreadableRows(laps: 1))
    var core = RuntimeCore(engine: engine, settings: Self.settings, now: Self.board)
    let startup = core.replay(startup: commands, at: Self.board, host: 50)
    #expect(startup.filter { if case .indicate = $0 { true } else { false } } == [.indicate(.fault)])
    let asleep = Self.untilWait(&core, at: Self.board)
    #expect(asleep.until == 50 + SessionEngine.damagedRecordIndication, "asleep until the indication ends")
    let after = Self.untilWait(&core, at: Self.board.advanced(by: SessionEngine.damagedRecordIndication + 1))
    #expect(after.actions.contains(.indicate(.paused)))
    #expect(core.engine.state == .paused)
  }
}
