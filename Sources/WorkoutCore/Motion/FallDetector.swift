/// A fall the detector saw: an impact, then the board still and lying turned from the way it
/// rode. Times are the detector's own clock (the sensor's timestamps); `sinceImpact` is what
/// carries across to another clock.
public struct Fall: Sendable, Hashable, Codable {
  /// When the impact was (its hardest jolt), and its peak, m/s².
  public var impactAt: Double
  public var peak: Double
  /// Degrees the board's down turned between riding and lying still.
  public var tilt: Double
  /// When the stillness had lasted `IncidentSettings.stillFor`.
  public var at: Double

  public init(impactAt: Double, peak: Double, tilt: Double, at: Double) {
    self.impactAt = impactAt
    self.peak = peak
    self.tilt = tilt
    self.at = at
  }

  public var sinceImpact: Double { at - impactAt }
}

/// An impact the detector is following: jolts beyond `IncidentSettings.impact` one after the
/// other (a kerb, then the fall), then, it may be, the stillness after them.
public struct Impact: Sendable, Hashable {
  /// The hardest jolt of the last two seconds before the stillness (the fall's landing, not
  /// the kerb that began it, or the road's jolts before), its time and peak (m/s²): the
  /// hardest of this second's and the last second's.
  public var at: Double { recent.peak >= current.peak ? recent.at : current.at }
  public var peak: Double { max(recent.peak, current.peak) }
  var current: Jolt
  var recent = Jolt(second: 0, peak: 0, at: 0)
  /// The latest sample beyond the threshold: the stillness must begin within `settleWithin`.
  public var last: Double
  /// The board's down as it rode, before the first jolt.
  public var before: Vector3
  /// When the stillness began, with the sum and count of its accelerations (their mean is
  /// the board's new down).
  public var stillSince: Double?
  public var stillSum: Vector3 = .zero
  public var stillSamples = 0

  init(at: Double, peak: Double, before: Vector3) {
    current = Jolt(second: at.rounded(.down), peak: peak, at: at)
    last = at
    self.before = before
  }

  /// A jolt beyond the threshold at `time`.
  mutating func jolt(_ magnitude: Double, at time: Double) {
    last = time
    let second = time.rounded(.down)
    if second != current.second {
      recent = second - current.second == 1 ? current : Jolt(second: 0, peak: 0, at: 0)
      current = Jolt(second: second, peak: 0, at: time)
    }
    if magnitude > current.peak { current = Jolt(second: second, peak: magnitude, at: time) }
  }

  /// The hardest jolt of one second.
  struct Jolt: Sendable, Hashable {
    var second: Double
    var peak: Double
    var at: Double
  }
}

/// Falls from the inertial sensor, as a value: fed every sample (monotonic seconds in its
/// `time`; it reads no clock), it returns a fall when a jolt beyond `impact` is followed, within
/// `settleWithin` of the last such jolt, by the board still and lying on another side than it
/// rode on for `stillFor`. Whether the session was riding, the countdown and the rider's
/// answer are `IncidentAlarm`'s (the engine's): this runs on the sensor's thread, at its rate.
/// Constant memory: a filter and the state.
public struct FallDetector: Sendable, Hashable {
  public enum State: Sendable, Hashable {
    case watching
    case impacted(Impact)
  }

  public var settings: IncidentSettings
  public private(set) var state: State = .watching
  /// The board's down as it rides: acceleration low-passed over 2 s, which a jolt's fraction
  /// of a second barely moves.
  private var down = VectorLowPass(seconds: 2)

  public init(settings: IncidentSettings = IncidentSettings()) {
    self.settings = settings
  }

  public mutating func add(_ sample: MotionSample) -> Fall? {
    let acceleration = sample.acceleration
    let magnitude = acceleration.magnitude
    guard magnitude.isFinite else { return nil }
    let now = sample.time
    switch state {
    case .watching:
      if magnitude > settings.impact {
        state = .impacted(Impact(at: now, peak: magnitude, before: down.value ?? acceleration))
      } else {
        down.add(acceleration, at: now)
      }
      return nil
    case .impacted(var impact):
      defer { if case .impacted = state { state = .impacted(impact) } }
      if magnitude > settings.impact { impact.jolt(magnitude, at: now) }
      guard isStill(sample) else {
        impact.stillSince = nil
        if now - impact.last > settings.settleWithin {
          // Riding on after the jolts: potholes, kerbs.
          state = .watching
          down.add(acceleration, at: now)
        }
        return nil
      }
      if impact.stillSince == nil {
        impact.stillSince = now
        impact.stillSum = .zero
        impact.stillSamples = 0
      }
      impact.stillSum = impact.stillSum + acceleration
      impact.stillSamples += 1
      guard let since = impact.stillSince, now - since >= settings.stillFor else { return nil }
      let after = impact.stillSum * (1 / Double(impact.stillSamples))
      let tilt = impact.before.degrees(to: after)
      down = VectorLowPass(seconds: 2)
      down.add(after, at: now)
      state = .watching
      // Stopped upright after the jolt: no fall.
      guard tilt >= settings.tilt else { return nil }
      return Fall(impactAt: impact.at, peak: impact.peak, tilt: tilt, at: now)
    }
  }

  private func isStill(_ sample: MotionSample) -> Bool {
    guard abs(sample.acceleration.magnitude - MotionSample.gravity) <= settings.stillAcceleration else { return false }
    if let rotation = sample.rotation, rotation.magnitude > settings.stillRotation { return false }
    return true
  }
}
