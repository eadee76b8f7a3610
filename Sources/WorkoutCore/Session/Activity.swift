/// The kind of workout. It decides the auto-pause defaults and whether pace is shown.
public enum ActivityType: String, Sendable, Hashable, Codable, CaseIterable {
  case cycling
  case running
  case walking
  case hiking
  case indoorCycling
  case other

  /// Indoors there is no GPS speed to judge stopping by, so auto-pause is off.
  public var isIndoor: Bool { self == .indoorCycling }

  /// Runners and walkers read pace (time per km); cyclists read speed.
  public var showsPace: Bool { self == .running || self == .walking || self == .hiking }

  /// Auto-pause defaults, in the range bike computers use (Garmin's "when stopped",
  /// Wahoo's default of about 3 km/h for cycling); nil for indoor activities.
  public var defaultAutoPause: AutoPauseSettings? {
    switch self {
    case .cycling: AutoPauseSettings(stopSpeed: 1.0, resumeSpeed: 1.5, stopAfter: 2, resumeAfter: 1)
    case .running: AutoPauseSettings(stopSpeed: 0.5, resumeSpeed: 1.0, stopAfter: 3, resumeAfter: 2)
    case .walking, .hiking, .other:
      AutoPauseSettings(stopSpeed: 0.3, resumeSpeed: 0.6, stopAfter: 5, resumeAfter: 2)
    case .indoorCycling: nil
    }
  }
}

/// When the system pauses a running session and resumes the pause it made.
public struct AutoPauseSettings: Sendable, Hashable, Codable {
  /// Below this speed (m/s) the rider counts as stopped.
  public var stopSpeed: Double
  /// At or above this speed (m/s) the rider counts as moving again; higher than `stopSpeed`
  /// so that GPS noise around one threshold cannot flap the state.
  public var resumeSpeed: Double
  /// Seconds the rider must stay stopped before the session pauses.
  public var stopAfter: Double
  /// Seconds the rider must keep moving before an auto-pause resumes.
  public var resumeAfter: Double
}

/// Decides from speed samples when the system should pause or resume a session.
public struct AutoPauseDetector: Sendable, Hashable, Codable {
  public var settings: AutoPauseSettings
  private var slowSince: Double?
  private var movingSince: Double?

  public init(settings: AutoPauseSettings) {
    self.settings = settings
  }

  /// Feeds one speed sample (m/s) taken at monotonic time `time`. Returns `.stationary` when a
  /// running session should pause, `.movingAgain` when an auto-paused one should resume.
  public mutating func observe(
    speed: Double, at time: Double, state: SessionState, pausedBySystem: Bool
  ) -> SessionSignal? {
    switch state {
    case .running:
      movingSince = nil
      if Self.held(speed < settings.stopSpeed, since: &slowSince, at: time, for: settings.stopAfter) {
        return .stationary
      }
    case .paused where pausedBySystem:
      slowSince = nil
      if Self.held(speed >= settings.resumeSpeed, since: &movingSince, at: time, for: settings.resumeAfter) {
        return .movingAgain
      }
    default:
      reset()
    }
    return nil
  }

  /// Whether `holds` has held for `duration` seconds at `time`, `since` being when it began
  /// (nil: it does not hold). The run starts again once it has been reported.
  private static func held(_ holds: Bool, since: inout Double?, at time: Double, for duration: Double) -> Bool {
    guard holds else {
      since = nil
      return false
    }
    let start = since ?? time
    since = start
    guard time - start >= duration else { return false }
    since = nil
    return true
  }

  /// Forgets partial runs (after a restart, the old samples' clock means nothing).
  public mutating func reset() {
    slowSince = nil
    movingSince = nil
  }
}
