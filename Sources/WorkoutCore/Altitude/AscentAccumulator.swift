#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Total ascent and descent of a ride from a stream of altitudes, with noise rejected.
///
/// Two stages, both in constant memory:
///
/// 1. **Time-aware smoothing.** A first-order low-pass filter with time constant τ:
///    `y += (1 − e^(−Δt/τ)) · (x − y)`. Because its parameter is in seconds, not samples, the
///    same setting works at 1 Hz, at a barometer's 25 Hz or with irregular "smart recording"
///    intervals. After a gap (auto-pause, a lost sensor) Δt ≫ τ and the filter simply takes the
///    new value; the height change across the gap then counts like any other change (the rider
///    may have moved while nothing was recorded), subject to the threshold below.
///
/// 2. **Swing threshold on turning points.** A climb or descent counts only once the smoothed
///    height has moved `threshold` metres away from the last turning point, and then it counts
///    in full, from that turning point to the next one (the highest or lowest point before the
///    height turns back by `threshold`). Undulations smaller than `threshold` are ignored.
///    Unlike the plain hysteresis many loggers use (move a reference only when the height is
///    `threshold` away from it), this does not lose up to `threshold` metres at every crest and
///    every dip, which is what makes plain hysteresis under-count smooth recordings and
///    over-count noisy ones.
///
/// Default parameters, τ = 4 s and threshold = 2 m, were chosen once on recorded rides and are
/// not tuned per device: they land within 1.4 % (Edge 810, raw 1 s altitude) and 5.1 % (Edge 500,
/// altitude the device had already smoothed) of the devices' own totals, and every τ from 3 to
/// 5 s with every threshold from 1 to 2.5 m stays within ±10 % of both. Why these values: the
/// Edge 810's altitude jitters by ~0.4 m (1σ) from second to second; τ = 4 s cuts that to
/// ~0.15 m while delaying a real climb by only a few seconds, far shorter than any hill. 2 m is
/// the customary threshold (pizero_bikecomputer and many devices use it as plain hysteresis),
/// more than ten times the smoothed jitter and below any rise a rider would call a climb.
///
/// Before both stages, a **spike gate**: a sample further from the smoothed altitude than a
/// rider could move in the time since the last sample used (see `reach(after:)`) is left out.
/// GPS altitude is the least accurate figure a receiver gives, and after multipath or a
/// re-acquisition it can jump by hundreds of metres for a second or two; without the gate a
/// 500 m spike of one second adds a fifth of it (τ = 4 s) to both ascent and descent. The gate
/// needs no state of its own: a sample left out does not move `lastTime`, so the reach grows
/// with the time since, and a real change across a gap (a tunnel, a lost fix) is taken once the
/// time could explain it, and counted like any other.
///
/// `totalAscent` includes the climb in progress once it has passed the threshold, so it never
/// decreases. Feed only while the ride is recording, if pauses should not count.
public struct AscentAccumulator: Sendable, Hashable, Codable {
  public struct Configuration: Sendable, Hashable, Codable {
    /// Smoothing time constant τ, seconds (0: no smoothing).
    public var timeConstant: Double
    /// Smallest swing that counts, metres.
    public var threshold: Double

    /// Values that are negative or not finite are replaced by the defaults.
    public init(timeConstant: Double = 4, threshold: Double = 2) {
      self.timeConstant = timeConstant.isFinite && timeConstant >= 0 ? timeConstant : 4
      self.threshold = threshold.isFinite && threshold >= 0 ? threshold : 2
    }
  }

  private enum Trend: String, Sendable, Hashable, Codable {
    /// No swing of `threshold` yet: `low`/`high` hold the range seen.
    case unknown
    case climbing
    case descending
  }

  public let configuration: Configuration
  /// The filtered altitude, metres; nil before the first sample.
  public private(set) var smoothedAltitude: Double?
  /// The time of the last sample used, seconds.
  public private(set) var lastTime: Double?
  private var trend = Trend.unknown
  private var low = 0.0
  private var high = 0.0
  /// The last turning point (while climbing or descending).
  private var base = 0.0
  /// The highest point since `base` while climbing; the lowest while descending.
  private var extreme = 0.0
  private var committedAscent = 0.0
  private var committedDescent = 0.0

  public init(configuration: Configuration = Configuration()) {
    self.configuration = configuration
  }

  /// The fastest a rider's altitude plausibly changes, m/s: beyond any climb, and beyond a
  /// descent at 100 km/h on a 25 % grade (6.7 m/s). A constant, not a setting, so that the
  /// checkpoint's shape (`Tests/Fixtures/checkpoint`) does not change with it.
  public static let plausibleVerticalSpeed = 10.0
  /// Room for a receiver's ordinary altitude noise (a few metres to tens of metres), metres.
  public static let altitudeNoise = 20.0

  /// How far from the smoothed altitude a sample `dt` seconds after the last one used may be:
  /// what the plausible vertical speed covers in `dt`, plus how far the filter lags a steady
  /// climb at that speed (speed × τ), plus noise. At 1 Hz with τ = 4 s: 70 m.
  public func reach(after dt: Double) -> Double {
    Self.plausibleVerticalSpeed * (dt + configuration.timeConstant) + Self.altitudeNoise
  }

  /// Metres climbed so far.
  public var totalAscent: Double {
    committedAscent + (trend == .climbing ? extreme - base : 0)
  }

  /// Metres descended so far.
  public var totalDescent: Double {
    committedDescent + (trend == .descending ? base - extreme : 0)
  }

  /// The climbing and descending since the totals were last counted (`ascent`, `descent`),
  /// metres, and the counts moved up to them. A total that falls back (a swing not yet past
  /// the threshold, undone) gives nothing, and what it gave before is not taken back.
  public func growth(
    beyondAscent ascent: inout Double, descent: inout Double
  ) -> (ascent: Double, descent: Double) {
    let growth = (ascent: max(0, totalAscent - ascent), descent: max(0, totalDescent - descent))
    ascent = max(ascent, totalAscent)
    descent = max(descent, totalDescent)
    return growth
  }

  /// Adds an altitude, metres, at monotonic time `time`, seconds. Returns false when the sample
  /// is not used: a non-finite value, a time earlier than the last sample's, a repeated time
  /// (it carries no elapsed time for the filter), or a spike beyond `reach(after:)`.
  @discardableResult
  public mutating func add(altitude: Double, at time: Double) -> Bool {
    guard altitude.isFinite, time.isFinite else { return false }
    guard let previous = smoothedAltitude, let last = lastTime else {
      smoothedAltitude = altitude
      lastTime = time
      low = altitude
      high = altitude
      return true
    }
    let dt = time - last
    guard dt > 0, abs(altitude - previous) <= reach(after: dt) else { return false }
    let tau = configuration.timeConstant
    let gain = tau > 0 ? 1 - exp(-dt / tau) : 1
    let y = previous + gain * (altitude - previous)
    smoothedAltitude = y
    lastTime = time
    follow(y)
    return true
  }

  /// Moves the altitude reference by `delta` metres without counting it as ascent or descent:
  /// call it when the altitude source is re-referenced (a new sea-level pressure, say).
  public mutating func shift(by delta: Double) {
    guard delta.isFinite, let y = smoothedAltitude else { return }
    smoothedAltitude = y + delta
    low += delta
    high += delta
    base += delta
    extreme += delta
  }

  private mutating func follow(_ y: Double) {
    let h = configuration.threshold
    switch trend {
    case .unknown:
      low = min(low, y)
      high = max(high, y)
      if y - low >= h {
        trend = .climbing
        base = low
        extreme = y
      } else if high - y >= h {
        trend = .descending
        base = high
        extreme = y
      }
    case .climbing:
      if let leg = follow(y, direction: 1, threshold: h) { committedAscent += leg }
    case .descending:
      if let leg = follow(y, direction: -1, threshold: h) { committedDescent += leg }
    }
  }

  /// Follows a climb (`direction` 1) or a descent (-1): a new extreme extends it; a turn back of
  /// at least `threshold` ends it at the extreme, starts the opposite trend there, and returns
  /// the finished leg's height.
  private mutating func follow(_ y: Double, direction: Double, threshold h: Double) -> Double? {
    if (y - extreme) * direction > 0 {
      extreme = y
      return nil
    }
    guard (extreme - y) * direction >= h else { return nil }
    let leg = (extreme - base) * direction
    base = extreme
    extreme = y
    trend = direction > 0 ? .descending : .climbing
    return leg
  }
}
