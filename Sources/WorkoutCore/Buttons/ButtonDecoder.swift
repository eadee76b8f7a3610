/// Turns raw GPIO edges of the button lines into gestures: debounce, short and long presses,
/// chords. Pure: the caller passes every time in (kernel edge-event timestamps, and its
/// monotonic clock for `tick`), so tests drive it with a manual clock.
///
/// Rules, chosen so that no request is ever made by accident:
/// - **Debounce.** A line's new level is believed once it has held for `debounce` seconds with no
///   other edge. The press (or release) is then dated from the edge that began that stable
///   period, and recognised `debounce` later. Bounces shorter than `debounce` never become
///   presses; a knock shorter than `debounce` is nothing. An edge that repeats the current level
///   (an opposite edge was missed, so the line moved) restarts the wait as well.
/// - **Short press**: held less than `longPress`, recognised on release. **Long press**: held
///   `longPress`, recognised at that moment while still held (`tick`), once.
/// - **Held at start-up.** A button that reads pressed when the decoder starts (held during boot,
///   or stuck) is ignored until it has been released; it does not make chords either, so a stuck
///   button does not disable the others.
/// - **Chords.** When a button is pressed while another is down, neither press produces any
///   gesture, now or later (both are ignored until each is released). A press that is already
///   resolved (its long press was reached) no longer chords new presses, so a button held down
///   does not lock the others out.
/// - **Time.** An edge or tick earlier than one already seen is taken as happening at the latest
///   time seen (events of different lines can be read out of order).
/// - At equal times, a long-press deadline is handled before a level change: a press held exactly
///   `longPress` is long.
public struct ButtonDecoder: Sendable, Hashable {
  public let configuration: ButtonConfiguration
  private var lines: [Line]
  /// The latest time seen.
  public private(set) var now: Double

  /// What a debounced press may still produce.
  private enum Disposition: Sendable, Hashable {
    /// May become a short or a long press.
    case candidate
    /// Part of a chord: produces nothing.
    case chorded
    /// Held since start-up: produces nothing and chords nothing.
    case heldAtStart
    /// Its long press was reached: produces nothing more and chords nothing.
    case resolved
  }

  private struct Line: Sendable, Hashable {
    var raw: Bool  // pressed, as last seen on the line
    var lastEdge: Double  // time of the most recent raw edge
    var pressed: Bool  // debounced
    var pressStart = 0.0  // debounced press time (the edge that began it)
    var recognisedAt = 0.0  // when that press was recognised (pressStart + debounce)
    var disposition = Disposition.candidate
  }

  /// - Parameters:
  ///   - levels: each line's level when the lines were requested; a button missing here is
  ///     taken as released.
  ///   - time: monotonic time of that reading.
  public init(
    configuration: ButtonConfiguration = .standard, levels: [ButtonID: LineLevel] = [:],
    at time: Double
  ) {
    self.configuration = configuration
    self.now = time
    self.lines = ButtonID.allCases.map { button in
      let pressed = levels[button].map { configuration.isPressed(button, $0) } ?? false
      var line = Line(raw: pressed, lastEdge: time, pressed: pressed)
      if pressed { line.disposition = .heldAtStart }
      return line
    }
  }

  /// Whether the button is pressed, as debounced.
  public func isPressed(_ button: ButtonID) -> Bool { lines[button.index].pressed }

  /// A line changed to `level` at `time` (an edge event). Returns the gestures recognised up to
  /// and including `time`, in time order.
  public mutating func edge(
    _ button: ButtonID, to level: LineLevel, at time: Double
  )
    -> [ButtonEvent]
  {
    let t = clamp(time)
    // First whatever became due before this edge; the edge itself only starts a new wait.
    let events = advance(to: t)
    let i = button.index
    lines[i].raw = configuration.isPressed(button, level)
    lines[i].lastEdge = t
    return events
  }

  /// Time has passed with no edge: returns the gestures recognised up to and including `time`
  /// (a long press reached while the button is still held, a level that has become stable).
  public mutating func tick(at time: Double) -> [ButtonEvent] {
    advance(to: clamp(time))
  }

  /// The earliest time at which something can be recognised without another edge (a pending
  /// level change or a long press). Nil when nothing is pending: wait for edges only.
  public var nextDeadline: Double? {
    var best: Double? = nil
    for i in lines.indices {
      if let d = deadline(of: i) { best = min(best ?? d, d) }
    }
    return best
  }

  // MARK: - Internals

  private mutating func clamp(_ time: Double) -> Double {
    if time.isFinite && time > now { now = time }
    return now
  }

  private enum Happening { case longPress, settle }

  /// The next thing due on line `i` and when.
  private func due(_ i: Int) -> (time: Double, what: Happening)? {
    let line = lines[i]
    var result: (time: Double, what: Happening)? = nil
    if line.pressed && line.disposition == .candidate {
      result = (line.recognisedAt + configuration.longPress, .longPress)
    }
    if line.raw != line.pressed {
      let settle = line.lastEdge + configuration.debounce
      // a long-press deadline wins ties (held exactly `longPress` is long)
      if result == nil || settle < result!.time { result = (settle, .settle) }
    }
    return result
  }

  private func deadline(of i: Int) -> Double? { due(i)?.time }

  /// Processes everything due up to and including `t`, in time order (ties: lower line first,
  /// long presses before level changes at the same time).
  private mutating func advance(to t: Double) -> [ButtonEvent] {
    var events: [ButtonEvent] = []
    while true {
      var next: (line: Int, time: Double, what: Happening)? = nil
      for i in lines.indices {
        guard let d = due(i), d.time <= t else { continue }
        if let n = next {
          let earlier = d.time < n.time
          let tieLongFirst = d.time == n.time && d.what == .longPress && n.what == .settle
          if !(earlier || tieLongFirst) { continue }
        }
        next = (i, d.time, d.what)
      }
      guard let n = next else { return events }
      let button = ButtonID.allCases[n.line]
      switch n.what {
      case .longPress:
        lines[n.line].disposition = .resolved
        events.append(
          ButtonEvent(
            button: button, gesture: .longPress, time: n.time, heldFor: configuration.longPress))
      case .settle:
        if lines[n.line].raw {
          pressSettled(n.line, at: n.time)
        } else if let event = releaseSettled(n.line, at: n.time) {
          events.append(event)
        }
      }
    }
  }

  private mutating func pressSettled(_ i: Int, at time: Double) {
    lines[i].pressed = true
    lines[i].pressStart = lines[i].lastEdge
    lines[i].recognisedAt = time
    let partners = lines.indices.filter { j in
      j != i && lines[j].pressed
        && (lines[j].disposition == .candidate || lines[j].disposition == .chorded)
    }
    if partners.isEmpty {
      lines[i].disposition = .candidate
    } else {
      lines[i].disposition = .chorded
      for j in partners { lines[j].disposition = .chorded }
    }
  }

  private mutating func releaseSettled(_ i: Int, at time: Double) -> ButtonEvent? {
    let line = lines[i]
    lines[i].pressed = false
    lines[i].disposition = .candidate
    guard line.disposition == .candidate else { return nil }
    return ButtonEvent(
      button: ButtonID.allCases[i], gesture: .shortPress, time: time,
      heldFor: time - line.recognisedAt)
  }
}
