import Testing

@testable import WorkoutCore

@Suite("Buttons: gestures to session requests")
struct ButtonRequestTests {
  static func event(_ b: ButtonID, _ g: ButtonGesture) -> ButtonEvent {
    ButtonEvent(button: b, gesture: g, time: 0, heldFor: g == .longPress ? 2 : 0.2)
  }

  /// The whole table, every (state, button, gesture).
  @Test(arguments: SessionState.allCases)
  func table(state: SessionState) {
    let expected: [ButtonID: [ButtonGesture: SessionRequest]] =
      switch state {
      case .notStarted: [.start: [.shortPress: .start]]
      case .prepared: [.stop: [.longPress: .stop]]
      case .running:
        [.start: [.shortPress: .pause], .lap: [.shortPress: .lap], .stop: [.longPress: .stop]]
      case .paused:
        [.start: [.shortPress: .resume], .lap: [.shortPress: .lap], .stop: [.longPress: .stop]]
      case .stopped: [:]
      case .ended: [.start: [.shortPress: .start]]
      }
    for b in ButtonID.allCases {
      for g in [ButtonGesture.shortPress, .longPress] {
        #expect(Self.event(b, g).request(in: state) == expected[b]?[g], "\(state) \(b) \(g)")
      }
    }
  }

  @Test func stopNeedsALongPressAndStartLapIgnoreOne() {
    for state in SessionState.allCases {
      #expect(Self.event(.stop, .shortPress).request(in: state) == nil)
      #expect(Self.event(.start, .longPress).request(in: state) == nil)
      #expect(Self.event(.lap, .longPress).request(in: state) == nil)
    }
  }

  /// Every request a button makes is accepted by the session machine in that state: a button
  /// never causes a refusal.
  @Test(arguments: SessionState.allCases)
  func everyRequestIsOneTheMachineAccepts(state: SessionState) {
    for b in ButtonID.allCases {
      for g in [ButtonGesture.shortPress, .longPress] {
        guard let request = Self.event(b, g).request(in: state) else { continue }
        var machine = SessionMachine(state: state)
        let outcome = machine.handle(.request(request, .gpio), at: Moment(monotonic: 0, wall: 0))
        if case .refused(let why) = outcome {
          Issue.record("\(b) \(g) in \(state) sends \(request), refused: \(why)")
        }
      }
    }
  }

  /// A ride from the buttons alone, through bouncing contacts: boot with start held (ignored),
  /// start, countdown, lap, pause, resume, a knock on stop, a chord, a short stop (nothing),
  /// a long stop. The machine must go exactly where the rider meant.
  @Test func aRideThroughBouncingButtons() {
    var bench = ButtonBench(held: [.start], at: 0)
    var machine = SessionMachine()
    var requests: [SessionRequest] = []
    var t = 0.0
    func bouncy(_ b: ButtonID, hold: Double) {
      for offset in [0.0, 0.002, 0.003] {
        bench.down(b, t + offset)
        bench.up(b, t + offset + 0.001)
      }
      bench.down(b, t + 0.005)
      for offset in [0.0, 0.003] {
        bench.up(b, t + 0.005 + hold + offset)
        bench.down(b, t + 0.006 + hold + offset)
      }
      bench.up(b, t + 0.01 + hold)
      t += hold + 1
    }
    func settle() {
      bench.tick(t)
      for e in bench.events {
        if let r = e.request(in: machine.state) {
          requests.append(r)
          _ = machine.handle(.request(r, .gpio), at: Moment(monotonic: e.time, wall: e.time))
        }
      }
      bench.events.removeAll()
    }
    t = 3
    bench.up(.start, t)  // the button held during boot is let go: nothing
    t += 1
    settle()
    #expect(machine.state == .notStarted)
    bouncy(.start, hold: 0.25)
    settle()
    #expect(machine.state == .prepared)
    bouncy(.start, hold: 0.2)  // during the countdown: nothing
    settle()
    _ = machine.handle(.countdownFinished, at: Moment(monotonic: t, wall: t))
    #expect(machine.state == .running)
    bouncy(.lap, hold: 0.15)
    bouncy(.start, hold: 0.3)
    settle()
    #expect(machine.state == .paused)
    bouncy(.start, hold: 0.3)
    settle()
    #expect(machine.state == .running)
    // a knock on stop, and a brief press of stop
    bench.down(.stop, t)
    bench.up(.stop, t + 0.01)
    t += 1
    bouncy(.stop, hold: 0.5)
    // start and lap together
    bench.down(.start, t)
    bench.down(.lap, t + 0.05)
    bench.up(.lap, t + 0.3)
    bench.up(.start, t + 0.35)
    t += 1
    settle()
    #expect(machine.state == .running)
    // the long press, recognised while still held
    bench.down(.stop, t)
    t += 2.1
    settle()
    #expect(machine.state == .stopped)
    bench.up(.stop, t)
    t += 1
    settle()
    #expect(requests == [.start, .lap, .pause, .resume, .stop])
  }
}
