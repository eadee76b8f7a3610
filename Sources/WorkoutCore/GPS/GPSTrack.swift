/// How a `GPSTrack` smooths positions and counts distance (config keys under `[gps.track]`).
public struct GPSTrackSettings: Sendable, Hashable, Codable {
  public var filter: PositionFilterSettings
  /// A receiver reporting a speed over ground (Doppler) below this is standing still, m/s.
  /// Doppler speed does not drift with the position noise; 0.3 m/s (≈1 km/h) is below any
  /// walk and above the Doppler noise of receivers at rest (the corpus shows ≤ 0.2).
  public var stationarySpeed: Double
  /// Without a Doppler speed: the filtered position standing still means it moved less than
  /// this average speed over `motionWindow` seconds, m/s.
  public var stationaryWindowSpeed: Double
  public var motionWindow: Double
  /// Distance is counted from the last counted point once the filtered position is at least
  /// `max(minimumStep, deadbandSigmas × σ)` away from it (σ: the filter's position error),
  /// so noise around one spot adds nothing while real movement adds its full length.
  public var deadbandSigmas: Double
  public var minimumStep: Double
  /// When the filter restarts after a gap (fix lost, outliers), the straight line between the
  /// last counted point and the new fix is counted if it implies at most this speed, m/s;
  /// beyond it the jump is not believed and a new segment starts.
  public var maxBridgeSpeed: Double

  /// The tuning above; another starts from it and changes what it needs.
  public static let standard = GPSTrackSettings(
    filter: .standard, stationarySpeed: 0.3, stationaryWindowSpeed: 0.5, motionWindow: 10, deadbandSigmas: 2,
    minimumStep: 1, maxBridgeSpeed: 40)
}

/// What one fix did to the track.
public struct GPSTrackUpdate: Sendable, Hashable {
  /// The filtered position after this fix.
  public var position: GeoPoint?
  /// Speed over ground, m/s: gpsd's own (Doppler) when the fix has one, else the filter's.
  public var speed: Double?
  /// Metres this fix added to the distance (0 while stationary, paused or within the noise).
  public var distanceAdded: Double
  /// Whether the receiver was judged to be moving.
  public var moving: Bool
  public var filter: PositionFilter.Outcome
}

/// Smoothed position, speed and distance from accepted GPS fixes: the `PositionFilter`
/// (constant-velocity Kalman) plus a distance accumulator that does not creep while standing
/// still and does not cut real movement short.
///
/// Use one per session (it is `Codable`, to be saved with the session's snapshot):
///
/// ```swift
/// // for each accepted fix, stamped with the board's monotonic clock:
/// let update = track.add(fix, at: now.monotonic, counting: state == .running)
/// totals.distance += update.distanceAdded
/// speed = update.speed                 // Doppler if given, else filtered
/// pace = GPSTrack.pace(forSpeed: speed) // s/km for running
/// // after the rider's own pause, before counting again:
/// track.startNewSegment()
/// ```
///
/// Distance rules, in order:
/// 1. stationary (Doppler speed below `stationarySpeed`, or without Doppler, the filtered
///    position's average speed over `motionWindow` below `stationaryWindowSpeed`): nothing is
///    added and the last counted point stays where it is, so slow real movement is still
///    counted, as a chord, once the receiver is judged moving again;
/// 2. moving: the distance from the last counted point to the filtered position is added
///    once it exceeds the deadband `max(minimumStep, deadbandSigmas·σ)`;
/// 3. the filter restarted after a gap or outliers: the straight line is added if it implies
///    at most `maxBridgeSpeed`; after time went backwards, a new segment starts.
///
/// Time: the filter steps by the receiver's time difference when both fixes carry a time and
/// it agrees with the monotonic difference (so arrival jitter does not enter the model), and by
/// the monotonic difference otherwise (a receiver clock that steps back or jumps).
public struct GPSTrack: Sendable, Hashable, Codable {
  public var settings: GPSTrackSettings
  public private(set) var filter: PositionFilter
  /// Metres counted so far.
  public private(set) var distance = 0.0
  /// The latest speed reported in an update.
  public private(set) var speed: Double?

  /// The last counted point: distance is measured from here.
  private var anchor: GeoPoint?
  /// Steady time used by the filter (see "Time" above).
  private var trackTime = 0.0
  private var lastReceiverTime: Double?
  private var lastMonotonic: Double?
  private var window: [WindowSample] = []
  /// Seconds the service was away before the next fix (set by `resume(afterGap:)`).
  private var pendingBridge: Double?

  private struct WindowSample: Sendable, Hashable, Codable {
    var time: Double
    var latitude: Double
    var longitude: Double
  }

  public init(settings: GPSTrackSettings = .standard) {
    self.settings = settings
    self.filter = PositionFilter(settings: settings.filter)
  }

  /// The filtered position.
  public var position: GeoPoint? { filter.position }

  /// Takes in one accepted fix that arrived at `monotonic`; `counting` is false while the
  /// session is paused (the filter keeps tracking, the distance does not grow).
  @discardableResult
  public mutating func add(_ fix: GPSFix, at monotonic: Double, counting: Bool = true) -> GPSTrackUpdate {
    guard fix.latitude.isFinite, fix.longitude.isFinite, monotonic.isFinite else {
      return GPSTrackUpdate(
        position: position, speed: speed, distanceAdded: 0, moving: false,
        filter: .outlier(normalizedInnovation: .infinity))
    }
    let step = elapsed(fix: fix, monotonic: monotonic)
    trackTime += step.filter
    let outcome = filter.update(with: fix, at: trackTime)
    let filtered = filter.position ?? fix.position
    var added = 0.0
    var moving = false

    switch outcome {
    case .started(let restart):
      window.removeAll()
      switch restart {
      case .first:
        if let gap = pendingBridge, counting, let from = anchor {
          // The first fix after a restart: bridge the time away when the straight line is a
          // plausible ride.
          let d = from.distance(to: filtered)
          if gap > 0, d / gap <= settings.maxBridgeSpeed {
            added = d
            moving = true
          }
          anchor = filtered
        } else if anchor == nil {
          anchor = filtered
        }
        pendingBridge = nil
      case .gap, .outliers:
        if counting, let from = anchor {
          let d = from.distance(to: filtered)
          if step.bridge > 0, d / step.bridge <= settings.maxBridgeSpeed {
            added = d
            moving = true
          }
        }
        anchor = filtered
      case .timeWentBackwards:
        anchor = filtered
      }
    case .outlier:
      break
    case .updated:
      moving = isMoving(fix: fix, at: trackTime, position: filtered)
      if anchor == nil {
        anchor = filtered
      } else if counting, moving, let from = anchor {
        let d = from.distance(to: filtered)
        let deadband = max(settings.minimumStep, settings.deadbandSigmas * (filter.positionSigma ?? 0))
        if d >= deadband {
          added = d
          anchor = filtered
        }
      }
    }
    if case .outlier = outcome {
    } else {
      window.append(WindowSample(time: trackTime, latitude: filtered.latitude, longitude: filtered.longitude))
      let horizon = trackTime - settings.motionWindow
      if let keep = window.firstIndex(where: { $0.time >= horizon }), keep > 1 {
        window.removeFirst(keep - 1)
      }
      if window.count > 128 { window.removeFirst(window.count - 128) }
    }
    distance += added
    if let doppler = fix.speed, doppler.isFinite, doppler >= 0 {
      speed = doppler
    } else {
      speed = filter.speed
    }
    return GPSTrackUpdate(
      position: filter.position, speed: speed, distanceAdded: added, moving: moving, filter: outcome)
  }

  /// Picks up after a restart, `seconds` after the last fix (nil: unknown). The clocks of
  /// before mean nothing now, so the filter starts afresh; the last counted point is kept, and
  /// the next fix is joined to it if the straight line is a plausible ride in that time.
  public mutating func resume(afterGap seconds: Double?) {
    filter = PositionFilter(settings: settings.filter)
    trackTime = 0
    lastReceiverTime = nil
    lastMonotonic = nil
    window.removeAll()
    speed = nil
    if seconds == nil { anchor = nil }
    pendingBridge = seconds
  }

  /// Counting starts from where the rider is now, the last fix's filtered position (the
  /// countdown's end: the metres ridden while it counted down are not the workout's). With no
  /// position yet, from the next fix.
  public mutating func startCountingHere() {
    anchor = filter.position
  }

  /// Starts a new distance segment: the next fix is not joined to the last counted point
  /// (after the rider's own pause, where they went meanwhile is not part of the ride).
  public mutating func startNewSegment() {
    anchor = nil
  }

  /// Pace for runners, seconds per kilometre; nil when slower than `minimumSpeed` (m/s), where
  /// pace stops meaning anything (0.5 m/s is 33 min/km).
  public static func pace(forSpeed speed: Double?, minimumSpeed: Double = 0.5) -> Double? {
    guard let speed, speed.isFinite, speed >= minimumSpeed, speed > 0 else { return nil }
    return 1_000 / speed
  }

  /// Seconds since the previous fix: for the filter and for judging a bridge.
  ///
  /// The receiver's time difference is used when both fixes carry a time and it agrees with
  /// the board's monotonic clock (within 2 s + 50 %): it is free of arrival jitter. When they
  /// disagree (a receiver whose time steps back, or whose date jumps), the monotonic difference
  /// is used, so a receiver clock glitch neither restarts the filter nor makes a jump look slow.
  private mutating func elapsed(fix: GPSFix, monotonic: Double) -> (filter: Double, bridge: Double) {
    defer {
      lastMonotonic = monotonic
      lastReceiverTime = fix.time.flatMap { $0.isFinite ? $0 : nil }
    }
    let monotonicStep = lastMonotonic.map { monotonic - $0 }
    if let t = fix.time, t.isFinite, let last = lastReceiverTime {
      let receiverStep = t - last
      guard let monotonicStep, monotonicStep >= 0 else { return (receiverStep, receiverStep) }
      if abs(receiverStep - monotonicStep) <= 2 + 0.5 * monotonicStep {
        return (receiverStep, min(receiverStep, monotonicStep))
      }
      return (monotonicStep, monotonicStep)
    }
    let step = monotonicStep ?? 0
    return (step, step)
  }

  private func isMoving(fix: GPSFix, at time: Double, position: GeoPoint) -> Bool {
    if let doppler = fix.speed, doppler.isFinite, doppler >= 0 {
      return doppler >= settings.stationarySpeed
    }
    if let oldest = window.first, time - oldest.time >= settings.motionWindow / 2 {
      let from = GeoPoint(latitude: oldest.latitude, longitude: oldest.longitude)
      return from.distance(to: position) / (time - oldest.time) >= settings.stationaryWindowSpeed
    }
    if let filtered = filter.speed { return filtered >= settings.stationaryWindowSpeed }
    return false
  }
}
