import Testing

@testable import WorkoutCore

/// The whole (state, signal) table, written out by hand from the HKWorkoutSession semantics
/// and the issue, so that a change to the machine has to change this table too.
struct SessionMachineTests {
  enum Expected: Equatable {
    case to(SessionState, cause: String)
    case lap
    case newSession
    case refused(Refusal)
    case ignored
  }

  static let signals: [(String, SessionSignal)] = [
    ("start", .request(.start, .gpio)),
    ("pause", .request(.pause, .gpio)),
    ("resume", .request(.resume, .gpio)),
    ("lap", .request(.lap, .gpio)),
    ("stop", .request(.stop, .gpio)),
    ("countdownFinished", .countdownFinished),
    ("stationary", .stationary),
    ("movingAgain", .movingAgain),
    ("lowBattery", .lowBattery),
    ("finalized", .finalized),
  ]

  /// Rows: states; columns in the order of `signals`. `pausedAuto` is a paused session that
  /// auto-pause made; `paused` is a rider's own pause.
  static let table: [(String, SessionMachine, [Expected])] = [
    (
      "notStarted", SessionMachine(state: .notStarted),
      [
        .to(.prepared, cause: "button"), .refused(.noActiveSession), .refused(.noActiveSession),
        .refused(.noActiveSession), .refused(.noActiveSession), .ignored, .ignored, .ignored, .ignored,
        .ignored,
      ]
    ),
    (
      "prepared", SessionMachine(state: .prepared),
      [
        .refused(.countdownInProgress), .refused(.notRunning), .refused(.notPaused),
        .refused(.notRunning), .to(.stopped, cause: "button"), .to(.running, cause: "system"),
        .ignored, .ignored, .to(.stopped, cause: "system"), .ignored,
      ]
    ),
    (
      "running", SessionMachine(state: .running),
      [
        .refused(.alreadyRunning), .to(.paused, cause: "button"), .refused(.notPaused), .lap,
        .to(.stopped, cause: "button"), .ignored, .to(.paused, cause: "system"), .ignored,
        .to(.stopped, cause: "system"), .ignored,
      ]
    ),
    (
      "paused", SessionMachine(state: .paused, pausedBySystem: false),
      [
        .refused(.alreadyPaused), .refused(.alreadyPaused), .to(.running, cause: "button"), .lap,
        .to(.stopped, cause: "button"), .ignored, .ignored, .ignored, .to(.stopped, cause: "system"),
        .ignored,
      ]
    ),
    (
      "pausedAuto", SessionMachine(state: .paused, pausedBySystem: true),
      [
        .refused(.alreadyPaused), .refused(.alreadyPaused), .to(.running, cause: "button"), .lap,
        .to(.stopped, cause: "button"), .ignored, .ignored, .to(.running, cause: "system"),
        .to(.stopped, cause: "system"), .ignored,
      ]
    ),
    (
      "stopped", SessionMachine(state: .stopped),
      [
        .refused(.finalizing), .refused(.finalizing), .refused(.cannotResumeStoppedSession),
        .refused(.finalizing), .refused(.alreadyStopped), .ignored, .ignored, .ignored, .ignored,
        .to(.ended, cause: "system"),
      ]
    ),
    (
      "ended", SessionMachine(state: .ended),
      [
        .newSession, .refused(.noActiveSession), .refused(.noActiveSession),
        .refused(.noActiveSession), .refused(.noActiveSession), .ignored, .ignored, .ignored, .ignored,
        .ignored,
      ]
    ),
  ]

  static let cases: [(String, SessionMachine, String, SessionSignal, Expected)] = table.flatMap {
    row in
    zip(signals, row.2).map { signal, expected in (row.0, row.1, signal.0, signal.1, expected) }
  }

  @Test func tableCoversEveryStateAndSignal() {
    #expect(Set(Self.table.map { $0.1.state }) == Set(SessionState.allCases))
    #expect(Self.table.allSatisfy { $0.2.count == Self.signals.count })
    #expect(Self.cases.count == 7 * 10)
  }

  @Test(arguments: cases.indices)
  func everyStateSignalPair(_ index: Int) {
    let (stateName, start, signalName, signal, expected) = Self.cases[index]
    var machine = start
    let moment = Moment(monotonic: 100, wall: 1_700_000_000)
    let outcome = machine.handle(signal, at: moment)
    let label = "\(stateName) + \(signalName)"
    switch expected {
    case .to(let next, let cause):
      guard case .transitioned(let transition) = outcome else {
        Issue.record("\(label): expected a transition to \(next), got \(outcome)")
        return
      }
      #expect(transition.from == start.state, "\(label)")
      #expect(transition.to == next, "\(label)")
      #expect(transition.moment == moment, "\(label)")
      #expect(transition.cause.kind == cause, "\(label)")
      #expect(machine.state == next, "\(label)")
    case .lap:
      #expect(outcome == .lapMarked, "\(label)")
      #expect(machine == start, "\(label): a lap leaves the state alone")
    case .newSession:
      #expect(outcome == .startNewSession, "\(label)")
      #expect(machine == start, "\(label)")
    case .refused(let refusal):
      #expect(outcome == .refused(refusal), "\(label)")
      #expect(machine == start, "\(label): a refusal leaves the state alone")
    case .ignored:
      #expect(outcome == .ignored, "\(label)")
      #expect(machine == start, "\(label): an ignored signal leaves the state alone")
    }
  }

  @Test func onlyAutoPauseMarksThePauseAsTheSystems() {
    var machine = SessionMachine(state: .running)
    _ = machine.handle(.stationary, at: Moment(monotonic: 1, wall: 1))
    #expect(machine.pausedBySystem)
    _ = machine.handle(.movingAgain, at: Moment(monotonic: 2, wall: 2))
    #expect(machine.state == .running)
    _ = machine.handle(.request(.pause, .gpio), at: Moment(monotonic: 3, wall: 3))
    #expect(machine.state == .paused)
    #expect(!machine.pausedBySystem)
    #expect(machine.handle(.movingAgain, at: Moment(monotonic: 4, wall: 4)) == .ignored)
  }

  @Test func aCauseRecordsWhereTheRequestCameFrom() {
    var machine = SessionMachine(state: .notStarted)
    guard case .transitioned(let t) = machine.handle(.request(.start, .control), at: Moment(monotonic: 0, wall: 0))
    else {
      Issue.record("start was not accepted")
      return
    }
    #expect(t.cause == .button(.control))
    #expect(t.cause.detail == "control")
  }
}
