import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// A manual-clock bench around the decoder. Buttons are wired active-low (the default): pressed
/// is `.low`, released `.high`.
struct ButtonBench {
  var decoder: ButtonDecoder
  var events: [ButtonEvent] = []

  init(
    _ configuration: ButtonConfiguration = .standard, held: Set<ButtonID> = [], at time: Double = 0
  ) {
    var levels: [ButtonID: LineLevel] = [:]
    for b in ButtonID.allCases {
      let pressed = configuration.pressedLevel(for: b)
      levels[b] = held.contains(b) ? pressed : (pressed == .low ? .high : .low)
    }
    decoder = ButtonDecoder(configuration: configuration, levels: levels, at: time)
  }

  mutating func down(_ b: ButtonID, _ t: Double) {
    let level = decoder.configuration.pressedLevel(for: b)
    events += decoder.edge(b, to: level, at: t)
  }

  mutating func up(_ b: ButtonID, _ t: Double) {
    let level: LineLevel = decoder.configuration.pressedLevel(for: b) == .low ? .high : .low
    events += decoder.edge(b, to: level, at: t)
  }

  mutating func tick(_ t: Double) { events += decoder.tick(at: t) }

  /// Presses for `hold` seconds with clean edges.
  mutating func click(_ b: ButtonID, at t: Double, hold: Double) {
    down(b, t)
    up(b, t + hold)
  }

  var gestures: [String] { events.map { "\($0.button.rawValue).\($0.gesture.rawValue)" } }
}

func nearlyEqual(_ a: Double, _ b: Double, _ tolerance: Double = 1e-9) -> Bool {
  abs(a - b) <= tolerance
}

@Suite("Buttons: debounce and gestures")
struct ButtonDecoderTests {
  @Test func shortPressIsReportedOnTheDebouncedRelease() throws {
    var bench = ButtonBench()
    bench.down(.start, 1.0)
    bench.tick(1.1)
    #expect(bench.events.isEmpty)
    #expect(bench.decoder.isPressed(.start))
    bench.up(.start, 1.2)
    bench.tick(1.229)
    #expect(bench.events.isEmpty)
    bench.tick(1.231)
    let e = try #require(bench.events.first)
    #expect(bench.events.count == 1)
    #expect(e.button == .start && e.gesture == .shortPress)
    #expect(nearlyEqual(e.time, 1.23))
    #expect(nearlyEqual(e.heldFor, 0.2))
  }

  @Test func longPressIsReportedWhileStillHeld() throws {
    var bench = ButtonBench()
    bench.down(.stop, 1.0)
    bench.tick(3.02)
    #expect(bench.events.isEmpty)
    bench.tick(3.04)
    let e = try #require(bench.events.first)
    #expect(e.button == .stop && e.gesture == .longPress)
    #expect(nearlyEqual(e.time, 3.03))  // recognised at 1.03, held 2 s
    #expect(e.heldFor == 2)
    bench.tick(10)
    bench.up(.stop, 12)
    bench.tick(13)
    #expect(bench.events.count == 1)  // once, and nothing on release
  }

  @Test func longPressIsFoundEvenWithoutTicks() throws {
    var bench = ButtonBench()
    bench.down(.stop, 1.0)
    bench.up(.stop, 4.0)  // no tick in between: the release edge brings the long press out
    #expect(bench.gestures == ["stop.longPress"])
    #expect(nearlyEqual(bench.events[0].time, 3.03))
  }

  @Test func theLongPressBoundary() {
    // Exact binary times so the boundary is exact: debounce 1/32 s, long press 2 s.
    let config = try! ButtonConfiguration(debounce: 0.03125, longPress: 2)
    var exactly = ButtonBench(config)
    exactly.click(.stop, at: 1, hold: 2)  // held exactly 2 s: long
    exactly.tick(5)
    #expect(exactly.gestures == ["stop.longPress"])
    var under = ButtonBench(config)
    under.click(.stop, at: 1, hold: 2 - 0.0009765625)
    under.tick(5)
    #expect(under.gestures == ["stop.shortPress"])
  }

  @Test func theDebounceBoundary() {
    let config = try! ButtonConfiguration(debounce: 0.03125, longPress: 2)
    var knock = ButtonBench(config)
    knock.click(.lap, at: 1, hold: 0.03125 - 0.0009765625)  // shorter than the debounce
    knock.tick(3)
    #expect(knock.events.isEmpty)
    var press = ButtonBench(config)
    press.click(.lap, at: 1, hold: 0.03125)  // stable exactly the debounce time: a press
    press.tick(3)
    #expect(press.gestures == ["lap.shortPress"])
    #expect(press.events.first?.heldFor == 0.03125)
  }

  @Test func chatterOnPressAndRelease() throws {
    var bench = ButtonBench()
    // Contact bounce at the press…
    bench.down(.lap, 1.000)
    bench.up(.lap, 1.002)
    bench.down(.lap, 1.003)
    bench.up(.lap, 1.007)
    bench.down(.lap, 1.008)
    bench.tick(1.03)
    #expect(!bench.decoder.isPressed(.lap))  // 22 ms stable: not yet
    bench.tick(1.04)
    #expect(bench.decoder.isPressed(.lap))
    // …and at the release.
    bench.up(.lap, 1.500)
    bench.down(.lap, 1.501)
    bench.up(.lap, 1.504)
    bench.tick(2)
    #expect(bench.gestures == ["lap.shortPress"])
    #expect(nearlyEqual(bench.events[0].time, 1.534))
    #expect(nearlyEqual(bench.events[0].heldFor, 1.504 - 1.008))
  }

  @Test func vibrationDuringAHoldDoesNotRestartIt() {
    var bench = ButtonBench()
    bench.down(.stop, 0)
    for glitch in [0.4, 1.0, 1.5, 1.99] {  // the contact opens for 5 ms now and then
      bench.up(.stop, glitch)
      bench.down(.stop, glitch + 0.005)
    }
    bench.tick(2.1)
    #expect(bench.gestures == ["stop.longPress"])
    #expect(nearlyEqual(bench.events[0].time, 2.03))
  }

  @Test func knocksAreNothing() {
    var bench = ButtonBench()
    for (i, b) in [ButtonID.start, .lap, .stop, .start].enumerated() {
      let t = Double(i)
      bench.down(b, t)
      bench.up(b, t + 0.004)
      bench.down(b, t + 0.006)
      bench.up(b, t + 0.020)
    }
    bench.tick(10)
    #expect(bench.events.isEmpty)
  }

  @Test func aRepeatedLevelRestartsTheWait() {
    var bench = ButtonBench()
    bench.down(.start, 1.0)
    bench.down(.start, 1.02)  // a release edge was missed in between: the line moved
    bench.tick(1.045)
    #expect(!bench.decoder.isPressed(.start))
    bench.tick(1.055)
    #expect(bench.decoder.isPressed(.start))
  }

  @Test func heldAtBootIsIgnoredUntilReleased() {
    var bench = ButtonBench(held: [.start, .stop])
    #expect(bench.decoder.isPressed(.start))
    bench.tick(5)  // stop held well past the long-press time: nothing
    bench.up(.start, 6)
    bench.down(.start, 6.01)  // release bounce
    bench.up(.start, 6.02)
    bench.tick(7)
    #expect(bench.events.isEmpty)
    // Once released, the next press counts; the stuck stop does not chord it.
    bench.click(.start, at: 8, hold: 0.3)
    bench.click(.lap, at: 9, hold: 0.3)
    bench.tick(10)
    #expect(bench.gestures == ["start.shortPress", "lap.shortPress"])
    // And stop works again after it is released.
    bench.up(.stop, 11)
    bench.down(.stop, 12)
    bench.tick(15)
    #expect(bench.gestures == ["start.shortPress", "lap.shortPress", "stop.longPress"])
  }

  @Test func chordsProduceNothing() {
    var bench = ButtonBench()
    // start and lap together, released in either order
    bench.down(.start, 1.0)
    bench.down(.lap, 1.1)
    bench.up(.start, 1.3)
    bench.up(.lap, 1.35)
    // lap and stop together, stop held past the long-press time
    bench.down(.stop, 3.0)
    bench.down(.lap, 3.5)
    bench.up(.lap, 3.7)
    bench.tick(6)
    bench.up(.stop, 6.5)
    // all three
    bench.down(.lap, 8.0)
    bench.down(.start, 8.01)
    bench.down(.stop, 8.02)
    bench.up(.start, 8.4)
    bench.up(.lap, 8.5)
    bench.tick(11)
    bench.up(.stop, 11)
    // pressed within the same debounce window
    bench.down(.start, 12.0)
    bench.down(.lap, 12.001)
    bench.up(.start, 12.2)
    bench.up(.lap, 12.2)
    bench.tick(14)
    #expect(bench.events.isEmpty)
    // Afterwards each button works alone.
    bench.click(.lap, at: 15, hold: 0.2)
    bench.tick(16)
    #expect(bench.gestures == ["lap.shortPress"])
  }

  @Test func aChordPartnerReleasedFirstStillSpoilsTheOther() {
    var bench = ButtonBench()
    bench.down(.start, 1.0)
    bench.click(.lap, at: 1.05, hold: 0.1)  // lap released while start is still down
    bench.up(.start, 1.6)
    bench.tick(3)
    #expect(bench.events.isEmpty)
  }

  @Test func aResolvedLongPressDoesNotChord() {
    var bench = ButtonBench()
    bench.down(.stop, 0)
    bench.tick(2.5)  // stop's long press has happened
    bench.click(.lap, at: 2.6, hold: 0.2)
    bench.tick(3.5)
    bench.up(.stop, 4)
    bench.tick(5)
    #expect(bench.gestures == ["stop.longPress", "lap.shortPress"])
  }

  @Test func pressedLevelIsConfigurable() throws {
    let high = try ButtonConfiguration(pressedLevel: .high)
    var bench = ButtonBench(high)
    _ = bench.decoder.edge(.start, to: .high, at: 1)
    bench.events += bench.decoder.edge(.start, to: .low, at: 1.2)
    bench.tick(2)
    #expect(bench.gestures == ["start.shortPress"])

    // Mixed wiring: lap pulls high, the others low.
    let mixed = try ButtonConfiguration(overrides: [.lap: .high])
    #expect(mixed.pressedLevel(for: .lap) == .high)
    #expect(mixed.pressedLevel(for: .start) == .low)
    var d = ButtonDecoder(
      configuration: mixed, levels: [.lap: .low, .start: .high, .stop: .high], at: 0)
    #expect(!d.isPressed(.lap))
    var events = d.edge(.lap, to: .high, at: 1)
    events += d.edge(.lap, to: .low, at: 1.3)
    events += d.edge(.start, to: .low, at: 2)
    events += d.edge(.start, to: .high, at: 2.3)
    events += d.tick(at: 3)
    #expect(events.map(\.button) == [.lap, .start])

    // A decoder whose lines were read active at start: held at boot.
    let boot = ButtonDecoder(configuration: high, levels: [.stop: .high], at: 0)
    #expect(boot.isPressed(.stop))
  }

  @Test func timeGoingBackwardsIsClampedToTheLatest() throws {
    var bench = ButtonBench()
    bench.tick(5)
    bench.down(.start, 4.9)  // read late from another line's queue: taken as 5.0
    bench.up(.start, 5.2)
    bench.tick(6)
    let e = try #require(bench.events.first)
    #expect(nearlyEqual(e.heldFor, 0.2))
    #expect(nearlyEqual(e.time, 5.23))
    #expect(bench.decoder.now == 6)
  }

  @Test func nextDeadline() {
    var bench = ButtonBench()
    #expect(bench.decoder.nextDeadline == nil)
    bench.down(.stop, 1)
    #expect(bench.decoder.nextDeadline.map { nearlyEqual($0, 1.03) } == true)
    bench.tick(1.5)
    #expect(bench.decoder.nextDeadline.map { nearlyEqual($0, 3.03) } == true)
    bench.tick(3.1)
    #expect(bench.decoder.nextDeadline == nil)  // long press done; waiting for the release
    bench.up(.stop, 4)
    #expect(bench.decoder.nextDeadline.map { nearlyEqual($0, 4.03) } == true)
    bench.tick(4.1)
    #expect(bench.decoder.nextDeadline == nil)
    // A chorded press has no long-press deadline.
    bench.down(.start, 5)
    bench.down(.lap, 5.1)
    bench.tick(5.5)
    #expect(bench.decoder.nextDeadline == nil)
  }

  @Test func configurationIsValidated() {
    #expect(throws: ButtonConfiguration.Invalid.debounce(-0.01)) {
      try ButtonConfiguration(debounce: -0.01)
    }
    #expect(throws: ButtonConfiguration.Invalid.self) { try ButtonConfiguration(debounce: .nan) }
    #expect(throws: ButtonConfiguration.Invalid.longPress(0.02)) {
      try ButtonConfiguration(debounce: 0.03, longPress: 0.02)
    }
    #expect(throws: ButtonConfiguration.Invalid.self) {
      try ButtonConfiguration(longPress: .infinity)
    }
    #expect(ButtonConfiguration.standard.debounce == 0.030)
    #expect(ButtonConfiguration.standard.longPress == 2.0)
  }
}

// MARK: - Randomised chatter

/// A script of what a rider meant to do, rendered into raw edges with contact bounce, vibration
/// glitches, knocks and chords, from a seed. The decoder must find exactly the intended gestures,
/// at exactly the intended times, whatever the polling.
struct ButtonChatterScript {
  struct Edge {
    var time: Double
    var button: ButtonID
    var pressed: Bool
  }

  var edges: [Edge] = []
  var expected: [ButtonEvent] = []
  var end = 0.0

  init(seed: UInt64, actions: Int, configuration c: ButtonConfiguration) {
    var rng = SeededRandom(seed: seed)
    var t = 1.0
    /// Renders a transition to `pressed` starting at `at`: 0…6 bounces (each 0.2–6 ms, always
    /// shorter than the debounce). Returns the time of the last edge, where the level settles.
    func burst(_ b: ButtonID, pressed: Bool, at start: Double) -> Double {
      var time = start
      edges.append(Edge(time: time, button: b, pressed: pressed))
      for _ in 0..<Int.random(in: 0...6, using: &rng) {
        time += Double.random(in: 0.0002...0.006, using: &rng)
        edges.append(Edge(time: time, button: b, pressed: !pressed))
        time += Double.random(in: 0.0002...0.006, using: &rng)
        edges.append(Edge(time: time, button: b, pressed: pressed))
      }
      return time
    }
    /// Brief contact openings while held, each shorter than the debounce.
    func vibration(_ b: ButtonID, from: Double, to: Double) {
      var time = from + 0.1
      while time < to - 0.1 {
        if Double.random(in: 0...1, using: &rng) < 0.3 {
          edges.append(Edge(time: time, button: b, pressed: false))
          edges.append(
            Edge(
              time: time + Double.random(in: 0.0005...0.02, using: &rng), button: b, pressed: true))
        }
        time += Double.random(in: 0.15...0.5, using: &rng)
      }
    }

    for _ in 0..<actions {
      let b = ButtonID.allCases.randomElement(using: &rng)!
      switch Int.random(in: 0..<10, using: &rng) {
      case 0..<4:  // short press
        let pressEnd = burst(b, pressed: true, at: t)
        let releaseAt = pressEnd + Double.random(in: 0.08...1.8, using: &rng)
        vibration(b, from: pressEnd, to: releaseAt)
        let releaseEnd = burst(b, pressed: false, at: releaseAt)
        expected.append(
          ButtonEvent(
            button: b, gesture: .shortPress, time: releaseEnd + c.debounce,
            heldFor: (releaseEnd + c.debounce) - (pressEnd + c.debounce)))
        t = releaseEnd
      case 4..<7:  // long press
        let pressEnd = burst(b, pressed: true, at: t)
        let releaseAt = pressEnd + Double.random(in: 2.15...4.5, using: &rng)
        vibration(b, from: pressEnd, to: releaseAt)
        expected.append(
          ButtonEvent(
            button: b, gesture: .longPress, time: pressEnd + c.debounce + c.longPress,
            heldFor: c.longPress))
        t = burst(b, pressed: false, at: releaseAt)
      case 7..<9:  // chord: a second button while the first is down, any release order
        let other = ButtonID.allCases.filter { $0 != b }.randomElement(using: &rng)!
        let firstEnd = burst(b, pressed: true, at: t)
        let secondAt = firstEnd + Double.random(in: 0...0.5, using: &rng)
        _ = burst(other, pressed: true, at: secondAt)
        // both held long enough to be presses (the bursts last up to 72 ms)
        let release1 = secondAt + Double.random(in: 0.2...3.5, using: &rng)
        let release2 = secondAt + Double.random(in: 0.2...3.5, using: &rng)
        t = max(burst(b, pressed: false, at: release1), burst(other, pressed: false, at: release2))
      default:  // a knock: the contact closes for less than the debounce, maybe twice
        var time = t
        for _ in 0..<Int.random(in: 1...2, using: &rng) {
          edges.append(Edge(time: time, button: b, pressed: true))
          time += Double.random(in: 0.0005...(c.debounce * 0.9), using: &rng)
          edges.append(Edge(time: time, button: b, pressed: false))
          time += Double.random(in: 0.0005...0.01, using: &rng)
        }
        t = time
      }
      // Everything released and settled, then a pause before the next action.
      t += c.debounce + Double.random(in: 0.05...1.5, using: &rng)
    }
    edges.sort { $0.time < $1.time }
    end = t + c.longPress + 1
  }

  /// Feeds the script, ticking at `ticks` (merged in time order), and returns the events.
  func play(_ c: ButtonConfiguration, ticks: [Double]) -> [ButtonEvent] {
    var released: [ButtonID: LineLevel] = [:]
    for b in ButtonID.allCases { released[b] = c.pressedLevel(for: b) == .low ? .high : .low }
    var d = ButtonDecoder(configuration: c, levels: released, at: 0)
    var events: [ButtonEvent] = []
    var ti = 0
    for e in edges {
      while ti < ticks.count && ticks[ti] < e.time {
        events += d.tick(at: ticks[ti])
        ti += 1
      }
      let level = e.pressed ? c.pressedLevel(for: e.button) : released[e.button]!
      events += d.edge(e.button, to: level, at: e.time)
    }
    for t in ticks[ti...] { events += d.tick(at: t) }
    events += d.tick(at: end)
    return events
  }
}

@Suite("Buttons: randomised chatter")
struct ButtonChatterTests {
  static func same(_ a: [ButtonEvent], _ b: [ButtonEvent]) -> Bool {
    a.count == b.count
      && zip(a, b).allSatisfy {
        $0.button == $1.button && $0.gesture == $1.gesture && nearlyEqual($0.time, $1.time, 1e-9)
          && nearlyEqual($0.heldFor, $1.heldFor, 1e-9)
      }
  }

  @Test(arguments: [UInt64(1), 2, 3, 42, 1234, 0xC0FFEE, 0xB1C7C1E, 987_654_321])
  func exactlyTheIntendedGestures(seed: UInt64) throws {
    let c = ButtonConfiguration.standard
    let script = ButtonChatterScript(seed: seed, actions: 120, configuration: c)
    #expect(script.expected.count > 40)
    #expect(script.edges.count > 500)

    // Polled rarely (only edges and a final tick), densely (every 7 ms) and at random moments:
    // the same gestures at the same times.
    var rng = SeededRandom(seed: seed ^ 0xABCDEF)
    let dense = Array(stride(from: 0.0, through: script.end, by: 0.007))
    var random: [Double] = []
    var t = 0.0
    while t < script.end {
      t += Double.random(in: 0.001...0.9, using: &rng)
      random.append(t)
    }
    for ticks in [[], dense, random] {
      let events = script.play(c, ticks: ticks)
      let firstDifference =
        Array(zip(events, script.expected)).firstIndex { !Self.same([$0.0], [$0.1]) }
        ?? min(events.count, script.expected.count)
      let same = Self.same(events, script.expected)
      #expect(
        same,
        "seed \(seed), \(ticks.count) ticks: \(events.count) events, expected \(script.expected.count); first difference at #\(firstDifference)"
      )
    }
  }

  @Test func otherSettings() throws {
    // A slower debounce and a shorter long press, active-high wiring.
    let c = try ButtonConfiguration(debounce: 0.05, longPress: 1.2, pressedLevel: .high)
    // The script's short presses last up to 1.8 s: with a 1.2 s long press, some become long.
    // So build the expectation from the script's own timing: re-derive with these settings.
    let script = ButtonChatterScript(seed: 77, actions: 80, configuration: c)
    let events = script.play(c, ticks: Array(stride(from: 0.0, through: script.end, by: 0.05)))
    // Every recognised gesture is one the script intended (or a short press that outlasted the
    // shorter long-press time and is reported as long, at press + debounce + 1.2 s).
    var expected: [ButtonEvent] = []
    var converted = 0
    for e in script.expected {
      if e.gesture == .shortPress && e.heldFor >= c.longPress {
        converted += 1
        expected.append(
          ButtonEvent(
            button: e.button, gesture: .longPress, time: e.time - e.heldFor + c.longPress,
            heldFor: c.longPress))
      } else {
        expected.append(e)
      }
    }
    expected.sort { $0.time < $1.time }
    let same = Self.same(events, expected)
    #expect(same, "\(events.count) events, expected \(expected.count)")
    #expect(converted > 0)  // the case it exists for did happen
  }
}
