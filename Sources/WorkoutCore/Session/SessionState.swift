/// The states of a workout session, as HealthKit's `HKWorkoutSessionState` names them.
///
/// `notStarted → prepared (warm-up + countdown) → running ⇄ paused → stopped (finalisation) → ended`.
/// There is no way back from `stopped`, and `ended` is terminal: the next start is a new session.
public enum SessionState: String, Sendable, Hashable, Codable, CaseIterable {
  case notStarted
  case prepared
  case running
  case paused
  case stopped
  case ended

  /// A session in this state is still being recorded or finalised, and must be resumed after
  /// a restart.
  public var isUnfinished: Bool { self != .ended && self != .notStarted }
}

/// What a rider asks for, with a button or `workoutctl`; both go through the same path.
public enum SessionRequest: String, Sendable, Hashable, Codable, CaseIterable {
  case start
  case pause
  case resume
  case lap
  case stop
}

/// Where a rider's request came from (kept with the event, for the record).
public enum RequestSource: String, Sendable, Hashable, Codable {
  /// A GPIO button line.
  case gpio
  /// A Linux input device (`gpio-keys`).
  case inputEvent
  /// The local control socket (`workoutctl`, ssh users, tests).
  case control
  /// The simulated board's rider.
  case simulation
}

/// Why the system, not the rider, moved a session.
public enum SystemReason: String, Sendable, Hashable, Codable {
  case countdownFinished
  /// A prepared session began when the board began moving (`[imu] auto_start`).
  case autoStart
  case autoPause
  case autoResume
  case lowBattery
  case finalized
}

/// Who caused a transition: a rider's button, the system, or recovery after a restart.
public enum TransitionCause: Sendable, Hashable, Codable {
  case button(RequestSource)
  case system(SystemReason)
  case recovery

  /// The coarse kind stored with every event: `button`, `system` or `recovery`.
  public var kind: String {
    switch self {
    case .button: "button"
    case .system: "system"
    case .recovery: "recovery"
    }
  }

  /// The detail stored beside the kind: the request source or the system reason.
  public var detail: String? {
    switch self {
    case .button(let source): source.rawValue
    case .system(let reason): reason.rawValue
    case .recovery: nil
    }
  }
}

/// One change of state, with the moment it happened and why.
public struct Transition: Sendable, Hashable, Codable {
  public var from: SessionState
  public var to: SessionState
  public var moment: Moment
  public var cause: TransitionCause
}

/// Why a rider's request was refused. The state is left unchanged.
public enum Refusal: String, Sendable, Hashable, Codable, Error, CustomStringConvertible {
  case noActiveSession
  case countdownInProgress
  case alreadyRunning
  case alreadyPaused
  case notRunning
  case notPaused
  case cannotResumeStoppedSession
  case finalizing
  case alreadyStopped
  /// A workout's own zones are set before collection begins.
  case zonesAfterStart
  /// A target zone needs zones of its quantity in the workout, and within their count.
  case noZonesForTarget
  case targetBeyondZones
  /// The next activity is the one the workout is in, or there is none planned.
  case sameActivity
  case noNextActivity
  /// "I'm fine" with no incident alarm on.
  case noIncidentAlarm

  public var description: String {
    switch self {
    case .noActiveSession: "there is no active session"
    case .countdownInProgress: "the countdown is running"
    case .alreadyRunning: "the session is already running"
    case .alreadyPaused: "the session is already paused"
    case .notRunning: "the session is not running"
    case .notPaused: "the session is not paused"
    case .cannotResumeStoppedSession: "a stopped session cannot be resumed"
    case .finalizing: "the session is being saved"
    case .alreadyStopped: "the session is already stopped"
    case .zonesAfterStart: "a workout's own zones are set before it starts (while prepared at the latest)"
    case .noZonesForTarget: "the workout has no zones of that quantity to target ([rider], [zones] or zones set)"
    case .targetBeyondZones: "the target goes beyond the workout's zones"
    case .sameActivity: "the workout is already in that activity"
    case .noNextActivity: "no next activity: name one, or list them in [session] activities"
    case .noIncidentAlarm: "no incident alarm is on"
    }
  }
}
