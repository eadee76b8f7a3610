/// When a fix counts as lost (config key `gps.fix_lost_after`).
public struct FixMonitorSettings: Sendable, Hashable, Codable {
  /// Seconds without an accepted fix after which the fix is lost. 5 s rides out the odd missed
  /// epoch at 1 Hz (and gpsd's 2 s cycle on some receivers) but reports a tunnel promptly.
  public var lostAfter: Double

  public init(lostAfter: Double = 5) {
    self.lostAfter = lostAfter
  }
}

/// A change of fix the session should record (`SessionEvent.Kind.fixLost` / `.fixRegained`).
public enum FixMonitorEvent: Sendable, Hashable, Codable {
  /// No accepted fix since `lastFixAt`; noticed at `detectedAt` (≥ `lastFixAt + lostAfter`).
  case lost(lastFixAt: Double, detectedAt: Double)
  /// A fix again at `at`, after `lostFor` seconds without one (since the last fix before the
  /// loss).
  case regained(at: Double, lostFor: Double)
}

/// Tracks whether the GPS has a usable fix, from accepted fixes and the passing of time
/// (monotonic seconds given by the caller; it never reads a clock).
///
/// Feed it every accepted fix (`fixAccepted(at:)`, or `observe(_:at:)` with every GPS
/// reading) and advance it on every tick (`advance(to:)`); schedule a wakeup at `deadline` to
/// notice a loss between ticks. Before the first fix it is `awaitingFirstFix` and reports no
/// loss: a receiver that has not fixed yet has lost nothing.
///
/// ```swift
/// for event in monitor.observe(reading, at: now.monotonic) { record(event) }
/// if let event = monitor.advance(to: now.monotonic) { record(event) }   // on .tick / .wakeup
/// let wakeAt = monitor.deadline   // the runtime wakes the engine then
/// ```
public struct FixMonitor: Sendable, Hashable, Codable {
  public enum State: Sendable, Hashable, Codable {
    case awaitingFirstFix
    case fixed(lastFixAt: Double)
    case lost(lastFixAt: Double, detectedAt: Double)
  }

  public var settings: FixMonitorSettings
  public private(set) var state: State = .awaitingFirstFix

  public init(settings: FixMonitorSettings = FixMonitorSettings()) {
    self.settings = settings
  }

  /// Whether the fix is currently lost (for status).
  public var isLost: Bool {
    if case .lost = state { return true }
    return false
  }

  /// When the fix will count as lost if no fix comes; nil unless there is a fix.
  public var deadline: Double? {
    if case .fixed(let last) = state { return last + settings.lostAfter }
    return nil
  }

  /// Lets time pass to `now`: reports the loss once `lostAfter` has passed since the last fix.
  public mutating func advance(to now: Double) -> FixMonitorEvent? {
    // Compared with the deadline itself, so a wakeup at `deadline` always reports the loss.
    guard case .fixed(let last) = state, now.isFinite, now >= last + settings.lostAfter else {
      return nil
    }
    state = .lost(lastFixAt: last, detectedAt: now)
    return .lost(lastFixAt: last, detectedAt: now)
  }

  /// An accepted fix at `now`. Time passes first, so a fix that comes after a long silence
  /// with no tick in between gives both the loss and the regain, in that order.
  public mutating func fixAccepted(at now: Double) -> [FixMonitorEvent] {
    guard now.isFinite else { return [] }
    var events: [FixMonitorEvent] = []
    if let lost = advance(to: now) { events.append(lost) }
    if case .lost(let last, _) = state {
      events.append(.regained(at: now, lostFor: max(0, now - last)))
    }
    if case .fixed(let last) = state, now < last {
      // A reading stamped earlier than the last fix (should not happen with a monotonic
      // clock): keep the later time so the deadline never moves backwards.
      return events
    }
    state = .fixed(lastFixAt: now)
    return events
  }

  /// Any sensor reading: an accepted GPS fix refreshes the fix; anything else only lets time
  /// pass (`gpsNoFix` does not end the fix by itself: `lostAfter` does).
  public mutating func observe(_ reading: SensorReading, at now: Double) -> [FixMonitorEvent] {
    if case .gps = reading { return fixAccepted(at: now) }
    return advance(to: now).map { [$0] } ?? []
  }

  /// Back to `awaitingFirstFix` (a new session).
  public mutating func reset() {
    state = .awaitingFirstFix
  }
}
