/// Everything that can move a session: a rider's request or a system signal.
public enum SessionSignal: Sendable, Hashable {
  case request(SessionRequest, RequestSource)
  /// The countdown after `prepare` ran out.
  case countdownFinished
  /// A prepared session waiting for motion (`[imu] auto_start`): the board began moving.
  case startedMoving
  /// Speed stayed below the auto-pause threshold long enough.
  case stationary
  /// Speed stayed above the auto-resume threshold long enough.
  case movingAgain
  /// The battery is about to run out: save the ride while there is power.
  case lowBattery
  /// The store has flushed the stopped session and written its summary.
  case finalized
}

/// What the machine made of a signal.
public enum MachineOutcome: Sendable, Hashable {
  case transitioned(Transition)
  /// A lap was marked; the state is unchanged.
  case lapMarked
  /// The session has ended; the start request opens a new session, which the engine does.
  case startNewSession
  /// A rider's request that is illegal in this state; nothing changed.
  case refused(Refusal)
  /// A system signal that means nothing in this state (auto-pause while paused, say).
  case ignored
}

/// The session state machine: a pure function of (state, signal, moment).
///
/// It mirrors HKWorkoutSession: `prepare` then countdown, pause/resume any number of times,
/// `stop` enters the finalisation window and the store's `finalized` ends the session. The
/// system may pause and resume (auto-pause), but only a pause it made itself is resumed by
/// movement: a rider's own pause is only undone by the rider.
public struct SessionMachine: Sendable, Hashable, Codable {
  public private(set) var state: SessionState
  /// Whether the current pause was made by auto-pause (and so may auto-resume).
  public private(set) var pausedBySystem: Bool

  public init(state: SessionState = .notStarted, pausedBySystem: Bool = false) {
    self.state = state
    self.pausedBySystem = state == .paused && pausedBySystem
  }

  public mutating func handle(_ signal: SessionSignal, at moment: Moment) -> MachineOutcome {
    switch (state, signal) {
    // A rider's requests.
    case (.notStarted, .request(.start, let source)):
      return move(to: .prepared, at: moment, cause: .button(source))
    case (.notStarted, .request):
      return .refused(.noActiveSession)

    case (.prepared, .request(.start, _)):
      return .refused(.countdownInProgress)
    case (.prepared, .request(.pause, _)), (.prepared, .request(.lap, _)):
      return .refused(.notRunning)
    case (.prepared, .request(.resume, _)):
      return .refused(.notPaused)
    case (.prepared, .request(.stop, let source)):
      return move(to: .stopped, at: moment, cause: .button(source))

    case (.running, .request(.start, _)):
      return .refused(.alreadyRunning)
    case (.running, .request(.pause, let source)):
      return move(to: .paused, at: moment, cause: .button(source))
    case (.running, .request(.resume, _)):
      return .refused(.notPaused)
    case (.running, .request(.lap, _)), (.paused, .request(.lap, _)):
      return .lapMarked
    case (.running, .request(.stop, let source)), (.paused, .request(.stop, let source)):
      return move(to: .stopped, at: moment, cause: .button(source))

    case (.paused, .request(.start, _)):
      return .refused(.alreadyPaused)
    case (.paused, .request(.pause, _)):
      return .refused(.alreadyPaused)
    case (.paused, .request(.resume, let source)):
      return move(to: .running, at: moment, cause: .button(source))

    case (.stopped, .request(.resume, _)):
      return .refused(.cannotResumeStoppedSession)
    case (.stopped, .request(.stop, _)):
      return .refused(.alreadyStopped)
    case (.stopped, .request):
      return .refused(.finalizing)

    case (.ended, .request(.start, _)):
      return .startNewSession
    case (.ended, .request):
      return .refused(.noActiveSession)

    // The system's signals.
    case (.prepared, .countdownFinished):
      return move(to: .running, at: moment, cause: .system(.countdownFinished))
    case (.prepared, .startedMoving):
      return move(to: .running, at: moment, cause: .system(.autoStart))
    case (.running, .stationary):
      return move(to: .paused, at: moment, cause: .system(.autoPause))
    case (.paused, .movingAgain) where pausedBySystem:
      return move(to: .running, at: moment, cause: .system(.autoResume))
    case (.prepared, .lowBattery), (.running, .lowBattery), (.paused, .lowBattery):
      return move(to: .stopped, at: moment, cause: .system(.lowBattery))
    case (.stopped, .finalized):
      return move(to: .ended, at: moment, cause: .system(.finalized))

    case (_, .countdownFinished), (_, .startedMoving), (_, .stationary), (_, .movingAgain), (_, .lowBattery),
      (_, .finalized):
      return .ignored
    }
  }

  private mutating func move(
    to next: SessionState, at moment: Moment, cause: TransitionCause
  )
    -> MachineOutcome
  {
    let transition = Transition(from: state, to: next, moment: moment, cause: cause)
    state = next
    pausedBySystem = next == .paused && cause == .system(.autoPause)
    return .transitioned(transition)
  }
}
