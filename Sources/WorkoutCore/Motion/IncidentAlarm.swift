/// What the incident alarm did (`SessionEvent.Kind.incidentSuspected` and the rest).
public enum IncidentEvent: Sendable, Hashable, Codable {
  /// A fall while riding, its impact at `impactAt` (its peak, m/s²), the board still and turned
  /// by `tilt` degrees since: the alarm sounds and the countdown runs.
  case suspected(impactAt: Double, peak: Double, tilt: Double, at: Double)
  /// The rider said all is well (a button, the phone page) before the countdown ran out.
  case cancelled(at: Double)
  /// The countdown ran out.
  case confirmed(at: Double)
}

/// The incident alarm, as a value the engine keeps: a `Fall` from the sensor's thread is an
/// incident when the session was riding up to `ridingWithin` seconds before its impact (a bike
/// laid down at a stop, a board knocked off a table, are not); the countdown then runs for the
/// rider to say "I'm fine", and at its end the incident is confirmed and stays so until the
/// rider answers. Times are the engine's monotonic seconds; it reads no clock.
///
/// ```swift
/// alarm.riding(at: now)                      // each recorded second while moving
/// event = alarm.fall(fall, at: now)          // a fall the sensor's detector reported
/// event = alarm.advance(to: now)             // on every tick and wakeup: the countdown's end
/// event = alarm.cancel(at: now)              // a button, the phone page
/// ```
public struct IncidentAlarm: Sendable, Hashable, Codable {
  public enum Phase: String, Sendable, Hashable, Codable {
    case quiet, suspected, confirmed
  }

  public var settings: IncidentSettings
  public private(set) var phase = Phase.quiet
  /// The impact's peak, m/s², and the degrees the board turned, of the fall the alarm is for
  /// (the tilt unknown for an alarm carried across a restart, `resume`); when it was suspected.
  public private(set) var peak: Double?
  public private(set) var tilt: Double?
  public private(set) var suspectedAt: Double?
  /// When the session was last riding.
  public private(set) var lastRiding: Double?
  /// When the buzzer sounds the alarm again while it is on.
  public private(set) var nextSound: Double?

  /// Seconds between the alarm's sounds during the countdown, and once confirmed: often enough
  /// to be heard by someone near, seldom enough to leave the battery for a long wait.
  public static let soundEvery: Double = 5
  public static let soundEveryConfirmed: Double = 30

  public init(settings: IncidentSettings = IncidentSettings()) {
    self.settings = settings
  }

  public var isOn: Bool { phase != .quiet }

  /// The session rides at `now` (running and moving).
  public mutating func riding(at now: Double) {
    lastRiding = now
  }

  /// A fall, reported at `now`: suspected when the session rode up to `ridingWithin` before
  /// its impact and no alarm is on already.
  public mutating func fall(_ fall: Fall, at now: Double) -> IncidentEvent? {
    guard phase == .quiet else { return nil }
    let impactAt = now - max(0, fall.sinceImpact)
    guard let lastRiding, lastRiding >= impactAt - settings.ridingWithin else { return nil }
    phase = .suspected
    peak = fall.peak
    tilt = fall.tilt
    suspectedAt = now
    nextSound = now + Self.soundEvery
    return .suspected(impactAt: impactAt, peak: fall.peak, tilt: fall.tilt, at: now)
  }

  /// When `advance` has news if nothing else comes: the countdown's end or the next sound.
  public var deadline: Double? {
    guard let nextSound else { return nil }
    guard phase == .suspected, let confirmAt = confirmAt else { return nextSound }
    return min(nextSound, confirmAt)
  }

  /// The end of the countdown, while it runs.
  public var confirmAt: Double? {
    guard phase == .suspected, let suspectedAt else { return nil }
    return suspectedAt + settings.countdown
  }

  /// Seconds left of the countdown at `now`.
  public func remaining(at now: Double) -> Double? {
    confirmAt.map { max(0, $0 - now) }
  }

  /// Lets time pass: the countdown's end confirms. `sounds` is whether the buzzer is due.
  public mutating func advance(to now: Double) -> (event: IncidentEvent?, sounds: Bool) {
    var event: IncidentEvent?
    if let confirmAt, now >= confirmAt {
      phase = .confirmed
      nextSound = now
      event = .confirmed(at: now)
    }
    guard let due = nextSound, now >= due else { return (event, false) }
    nextSound = now + (phase == .confirmed ? Self.soundEveryConfirmed : Self.soundEvery)
    return (event, true)
  }

  /// The alarm a session's events left on when the service stopped (a crash, a watchdog
  /// restart, a power cut while the rider lay still) sounds again from `now`. A suspected
  /// incident's countdown starts over: the board was silent while it restarted.
  public mutating func resume(_ open: OpenIncident, at now: Double) {
    guard open.phase != .quiet else { return }
    phase = open.phase
    peak = open.peak
    tilt = nil
    suspectedAt = open.phase == .suspected ? now : nil
    nextSound = now + (phase == .confirmed ? Self.soundEveryConfirmed : Self.soundEvery)
  }

  /// The rider is fine: a suspected or confirmed incident ends.
  public mutating func cancel(at now: Double) -> IncidentEvent? {
    guard phase != .quiet else { return nil }
    phase = .quiet
    peak = nil
    tilt = nil
    suspectedAt = nil
    nextSound = nil
    return .cancelled(at: now)
  }
}

/// The incident alarm as a session's events leave it: the last `incidentSuspected` with no
/// `incidentCancelled` after it, confirmed (`incidentConfirmed`) or not. What a restart carries
/// on: the alarm lives in the engine, not in the session's checkpoint.
public struct OpenIncident: Sendable, Hashable {
  public var phase: IncidentAlarm.Phase
  /// The impact's peak, m/s².
  public var peak: Double

  public init(phase: IncidentAlarm.Phase, peak: Double) {
    self.phase = phase
    self.peak = peak
  }

  /// Folds a session's events, oldest first (each its kind and value: the suspected one's is
  /// its peak in g); nil when they leave no alarm on.
  public static func left(by events: some Sequence<(kind: SessionEvent.Kind, value: Double?)>) -> OpenIncident? {
    var open: OpenIncident?
    for event in events {
      switch event.kind {
      case .incidentSuspected:
        open = OpenIncident(phase: .suspected, peak: (event.value ?? 0) * MotionSample.gravity)
      case .incidentConfirmed: open?.phase = .confirmed
      case .incidentCancelled: open = nil
      default: continue
      }
    }
    return open
  }
}
