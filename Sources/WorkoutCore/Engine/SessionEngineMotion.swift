/// The inertial sensor in the engine: its seconds in the points, auto-start, and the incident
/// alarm.
///
/// Incident detection, as Garmin's is: the inertial sensor's thread reports falls
/// (`FallDetector`); a fall while riding sounds the alarm (the buzzer every few seconds, the
/// LED's `incident` pattern, the phone page's full-screen alert with its countdown) until the
/// rider says all is well with any button or "I'm fine"; with no answer, the countdown's end
/// confirms it (the hook for a message to a contact, later), and the alarm goes on.
extension SessionEngine {
  /// m/s: the session rides while running at this speed or more (or with no speed to say it
  /// does not: a tunnel with no wheel sensor).
  static let ridingSpeed = 1.0

  /// The inertial sensor posts a second as the next begins: at most a second and a half late.
  static let motionFreshness = 2.5

  /// The inertial sensor's last second, if it is fresh.
  func currentMotion(at now: Moment) -> MotionSecond? {
    guard let motion, now.monotonic - motion.at <= Self.motionFreshness else { return nil }
    return motion.second
  }

  /// On foot, the inertial sensor's steps give the cadence when no sensor does.
  var countsSteps: Bool {
    (session?.currentActivity ?? session?.activity)?.showsPace ?? false
  }

  /// A recorded second: the alarm hears whether the session rides. With no `[imu]` incident
  /// settings it never does, so no fall is an incident; nor indoors, as Garmin's incident
  /// detection is for outdoor activities only: a bike on a trainer does not fall with its rider,
  /// and a board knocked off it is no crash.
  mutating func noteRiding(at now: Moment) {
    guard settings.incident != nil, !(session?.currentActivity ?? session?.activity ?? settings.activity).isIndoor
    else { return }
    if let speed = session?.builder.currentSpeed(at: now), speed < Self.ridingSpeed { return }
    incident.riding(at: now.monotonic)
  }

  /// The rider answered (a button, the page, `workoutctl fine`).
  mutating func riderIsFine(from source: RequestSource, at now: Moment, into step: inout EngineStep) {
    guard let event = incident.cancel(at: now.monotonic) else {
      step.outcome = .refused(.noIncidentAlarm, state: state)
      step.commands.append(.log(.info, "\(source.rawValue): no incident alarm to answer"))
      return
    }
    step.outcome = .accepted(state)
    noteIncident(event, cause: source.rawValue, at: now, into: &step)
  }

  /// The countdown's end and the alarm's sounds.
  mutating func advanceIncident(at now: Moment, into step: inout EngineStep) {
    let (event, sounds) = incident.advance(to: now.monotonic)
    noteIncident(event, at: now, into: &step)
    if sounds, event == nil { step.commands.append(.chirp(.incident)) }
  }

  /// Records and says what the alarm did.
  mutating func noteIncident(
    _ event: IncidentEvent?, cause: String? = nil, at now: Moment, into step: inout EngineStep
  ) {
    guard let event else { return }
    switch event {
    case .suspected(_, let peak, let tilt, _):
      let g = peak / MotionSample.gravity
      let countdown = Int(incident.settings.countdown.rounded())
      let text =
        "a fall while riding: an impact of \((g * 10).rounded() / 10) g, the board turned \(Int(tilt.rounded()))° and still; the alarm sounds, press any button (or I'm fine on the phone) within \(countdown) s"
      record(SessionEvent(kind: .incidentSuspected, moment: now, detail: text, value: g), into: &step)
      step.commands.append(.log(.warning, text))
      step.commands.append(.chirp(.incident))
    case .cancelled:
      let text = "the rider is fine: the incident alarm is off"
      record(SessionEvent(kind: .incidentCancelled, moment: now, cause: cause, detail: text), into: &step)
      step.commands.append(.log(.notice, text + (cause.map { " (\($0))" } ?? "")))
      step.commands.append(.chirp(.single))
    case .confirmed:
      let text =
        "no answer to the incident alarm: the incident is confirmed; the alarm goes on until a button is pressed"
      record(SessionEvent(kind: .incidentConfirmed, moment: now, detail: text), into: &step)
      step.commands.append(.log(.warning, text))
      step.commands.append(.chirp(.incident))
    }
  }

  /// The alarm for status while it is on.
  func incidentStatus(at now: Moment) -> IncidentStatus? {
    guard incident.isOn, let peak = incident.peak else { return nil }
    return IncidentStatus(
      phase: incident.phase, remaining: incident.remaining(at: now.monotonic),
      impact: peak / MotionSample.gravity, tilt: incident.tilt)
  }

  /// A resumed session's alarm, on when the service stopped: it sounds again at once. Only
  /// while the session goes on and `[imu]` still asks for the alarm.
  mutating func resumeIncident(_ open: OpenIncident?, at now: Moment, into commands: inout [EngineCommand]) {
    guard let open, settings.incident != nil, state == .running || state == .paused else { return }
    incident.resume(open, at: now.monotonic)
    guard incident.isOn else { return }
    commands.append(.chirp(.incident))
    commands.append(
      .log(
        .warning,
        open.phase == .confirmed
          ? "the confirmed incident's alarm was on when the service stopped: it goes on until a button is pressed"
          : "the incident alarm was on when the service stopped: it sounds again, and its countdown starts over"))
  }
}

/// The incident alarm as status shows it (`workoutctl status`, the phone page's alert).
public struct IncidentStatus: Sendable, Hashable, Codable {
  public var phase: IncidentAlarm.Phase
  /// Seconds left of the countdown; nil once confirmed.
  public var remaining: Double?
  /// The impact's peak, g, and the degrees the board turned (unknown for an alarm carried
  /// across a restart).
  public var impact: Double
  public var tilt: Double?
}

/// When a prepared session begins by itself (`[imu] auto_start`): the board has moved, by the
/// inertial sensor, for `seconds` seconds in a row: the road's vibration (a bike rolling; one
/// standing, even with its rider on, is below it) or steps (a run).
public struct AutoStartSettings: Sendable, Hashable, Codable {
  /// m/s², RMS.
  public var vibration: Double
  public var seconds: Int

  public init(vibration: Double = 1, seconds: Int = 3) {
    self.vibration = vibration
    self.seconds = seconds
  }

  public func moving(_ second: MotionSecond) -> Bool {
    second.vibration >= vibration || second.stepCadence != nil
  }
}

extension SessionEngine {
  /// A second of motion while a session waits to auto-start; true if it started.
  mutating func noteMotionForAutoStart(_ second: MotionSecond, at now: Moment, into step: inout EngineStep) -> Bool {
    guard let autoStart = settings.autoStart, state == .prepared, session?.countdownDeadline == nil else {
      movingSeconds = 0
      return false
    }
    movingSeconds = autoStart.moving(second) ? movingSeconds + 1 : 0
    guard movingSeconds >= autoStart.seconds else { return false }
    movingSeconds = 0
    return apply(.startedMoving, at: now, into: &step)
  }
}
