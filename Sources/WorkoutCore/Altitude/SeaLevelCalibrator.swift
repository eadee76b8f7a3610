/// Finds today's sea-level pressure, so barometric height reads as height above mean sea level.
///
/// Either the rider configures it (a known QNH, or the pressure at a known place), or the
/// calibrator takes it from GPS at the start of a ride: every good 3D fix, paired with a pressure
/// sample taken within `maximumPairingGap` seconds of it, gives one estimate
/// p0 = p / (1 − L·h/T0)^(g0·M/(R*·L)) (`BarometricAltitude.seaLevelPressure`). Once
/// `requiredFixes` estimates are in, it settles on their inverse-variance weighted mean (weight
/// 1/epv², epv = the fix's `verticalError`) and stays settled for the ride, so the altitude
/// does not jump again. Until then `seaLevelPressure` is the ISA standard 101325 Pa, which gives
/// pressure altitude: fine for ascent, which only needs differences.
///
/// GPS height is noisy (typically several metres, and errors persist for tens of seconds), so one
/// fix is a poor reference: this is why it averages many and refuses fixes whose reported
/// vertical error is large (Garmin's order of preference is similar: a configured value, then
/// DEM, then GPS once it has settled). A settled value can be off by a few metres; the barometer
/// then tracks *changes* to a few centimetres.
///
/// Pure: times are monotonic seconds passed in by the caller.
public struct SeaLevelCalibrator: Sendable, Hashable, Codable {
  public struct Configuration: Sendable, Hashable, Codable {
    /// Good fixes to average before settling (at 1 Hz, about half a minute of good sky).
    public var requiredFixes: Int
    /// Largest acceptable `GPSFix.verticalError` (gpsd `epv`, ~95 % confidence), metres.
    public var maximumVerticalError: Double
    /// Largest time between a fix and the pressure sample paired with it, seconds.
    public var maximumPairingGap: Double
    /// Sea-level pressures outside this range are refused as nonsense (the records are about
    /// 870 hPa in a typhoon and 1084 hPa in a Siberian high).
    public var plausibleRange: ClosedRange<Double>

    public init(
      requiredFixes: Int = 30, maximumVerticalError: Double = 10, maximumPairingGap: Double = 2,
      plausibleRange: ClosedRange<Double> = 87_000...108_500
    ) {
      self.requiredFixes = max(1, requiredFixes)
      self.maximumVerticalError = maximumVerticalError
      self.maximumPairingGap = maximumPairingGap
      self.plausibleRange = plausibleRange
    }
  }

  /// Where the current sea-level pressure comes from.
  public enum Source: Sendable, Hashable, Codable {
    /// Not settled yet: the ISA standard pressure.
    case standard
    /// Set by the rider or configuration.
    case configured
    /// Settled from this many GPS fixes.
    case gps(fixes: Int)
  }

  /// What became of one fix.
  public enum Outcome: Sendable, Hashable {
    /// Used; `count` good fixes so far.
    case accepted(count: Int)
    /// This fix completed the calibration.
    case settled(seaLevelPressure: Double)
    /// Already settled (configured or from GPS); the fix is not needed.
    case alreadySettled
    case rejected(Rejection)
  }

  public enum Rejection: String, Sendable, Hashable, Codable {
    /// A 2D fix has no usable height.
    case notThreeD
    case noAltitude
    /// The receiver gave no vertical error, so the fix's height cannot be judged.
    case noVerticalError
    case verticalErrorTooLarge
    /// No pressure sample close enough in time to pair with.
    case noRecentPressure
    /// The implied sea-level pressure is outside `plausibleRange`.
    case implausible
  }

  public let configuration: Configuration
  public private(set) var source: Source
  /// The settled sea-level pressure, Pa; nil until settled.
  public private(set) var settledPressure: Double?
  private var lastPressure: Double?
  private var lastPressureTime: Double?
  private var count = 0
  private var weightSum = 0.0
  private var weightedSum = 0.0

  /// A calibrator that settles from GPS.
  public init(configuration: Configuration = Configuration()) {
    self.configuration = configuration
    self.source = .standard
  }

  /// A calibrator settled on a configured sea-level pressure, Pa. Nil when the value is not in
  /// the configuration's plausible range (so a value given in hPa by mistake is caught).
  public init?(
    configuredSeaLevelPressure pascals: Double, configuration: Configuration = Configuration()
  ) {
    guard pascals.isFinite, configuration.plausibleRange.contains(pascals) else { return nil }
    self.configuration = configuration
    self.source = .configured
    self.settledPressure = pascals
  }

  public var isSettled: Bool { settledPressure != nil }

  /// The sea-level pressure to use now, Pa: the settled one, or the ISA standard until then.
  public var seaLevelPressure: Double {
    settledPressure ?? BarometricAltitude.standardSeaLevelPressure
  }

  /// Good fixes collected so far (while calibrating from GPS).
  public var acceptedFixes: Int { count }

  /// Height, metres, for a pressure with the current sea-level pressure.
  public func altitude(pressure: Double) -> Double? {
    BarometricAltitude.altitude(pressure: pressure, seaLevelPressure: seaLevelPressure)
  }

  /// Records the latest barometer reading, Pa, at monotonic time `time` seconds. Non-finite or
  /// non-positive values are ignored.
  public mutating func addPressure(_ pascals: Double, at time: Double) {
    guard pascals.isFinite, pascals > 0, time.isFinite else { return }
    lastPressure = pascals
    lastPressureTime = time
  }

  /// Offers a GPS fix received at monotonic time `time` seconds.
  @discardableResult
  public mutating func addFix(_ fix: GPSFix, at time: Double) -> Outcome {
    if isSettled { return .alreadySettled }
    guard fix.dimension == .threeD else { return .rejected(.notThreeD) }
    guard let altitude = fix.altitude, altitude.isFinite else { return .rejected(.noAltitude) }
    guard let epv = fix.verticalError, epv.isFinite, epv >= 0 else {
      return .rejected(.noVerticalError)
    }
    guard epv <= configuration.maximumVerticalError else {
      return .rejected(.verticalErrorTooLarge)
    }
    guard let pressure = lastPressure, let pressureTime = lastPressureTime, time.isFinite,
      abs(time - pressureTime) <= configuration.maximumPairingGap
    else { return .rejected(.noRecentPressure) }
    guard
      let p0 = BarometricAltitude.seaLevelPressure(pressure: pressure, altitude: altitude),
      configuration.plausibleRange.contains(p0)
    else { return .rejected(.implausible) }

    // Inverse-variance weighting; a receiver claiming less than 1 m is treated as 1 m so one
    // over-confident fix cannot outweigh the rest.
    let sigma = max(epv, 1)
    let weight = 1 / (sigma * sigma)
    count += 1
    weightSum += weight
    weightedSum += weight * p0
    if count >= configuration.requiredFixes {
      let mean = weightedSum / weightSum
      settledPressure = mean
      source = .gps(fixes: count)
      return .settled(seaLevelPressure: mean)
    }
    return .accepted(count: count)
  }
}
