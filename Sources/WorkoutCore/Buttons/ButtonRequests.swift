extension ButtonEvent {
  /// The rider's request this gesture makes in the session's current state, or nil for none.
  ///
  /// | gesture | notStarted | prepared | running | paused | stopped | ended |
  /// |---|---|---|---|---|---|---|
  /// | start, short | start | – | pause | resume | – | start (a new ride) |
  /// | lap, short | – | – | lap | lap | – | – |
  /// | stop, long (held 2 s) | – | stop | stop | stop | – | – |
  /// | stop, short | – | – | – | – | – | – |
  /// | start or lap, long | – | – | – | – | – | – |
  ///
  /// - A short press of `start` during `prepared` (the countdown) does nothing: the countdown is
  ///   already running towards the start, and pressing again neither skips nor cancels it. To
  ///   abandon a ride in its countdown, long-press stop.
  /// - A short press of `start` during `stopped` (the ride is being saved, a second or two) does
  ///   nothing and is not queued: once the ride has ended, a press starts a new one. Starting a
  ///   ride by accident is worse than pressing twice.
  /// - `stop` acts only on a long press, so a knock or a brushed button never ends a ride; a
  ///   short press of `stop` does nothing.
  /// - A long press of `start` or `lap` does nothing: a button held that long is squeezed in a
  ///   bag or stuck more often than meant, and `start` toggles pause.
  /// - `lap` acts while the ride is recorded (running or paused), as the session machine allows.
  /// - One exception, outside this table (it is not a session request): in a multisport
  ///   workout (`[session] activities` lists two or more) a long press of `lap` while running or
  ///   paused goes on to the next activity (`SessionEngine`); without such a plan it does
  ///   nothing, as above.
  ///
  /// Every request returned is one the session machine accepts in that state (tested), so a
  /// button never produces a refusal.
  public func request(in state: SessionState) -> SessionRequest? {
    switch (button, gesture) {
    case (.start, .shortPress):
      switch state {
      case .notStarted, .ended: .start
      case .running: .pause
      case .paused: .resume
      case .prepared, .stopped: nil
      }
    case (.lap, .shortPress):
      switch state {
      case .running, .paused: .lap
      case .notStarted, .prepared, .stopped, .ended: nil
      }
    case (.stop, .longPress):
      switch state {
      case .prepared, .running, .paused: .stop
      case .notStarted, .stopped, .ended: nil
      }
    case (.stop, .shortPress), (.start, .longPress), (.lap, .longPress):
      nil
    }
  }
}
