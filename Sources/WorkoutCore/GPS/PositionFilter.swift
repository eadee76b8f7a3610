#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Tuning of the position filter (config keys under `[gps.filter]`).
public struct PositionFilterSettings: Sendable, Hashable, Codable {
  /// Process noise: the spectral density of the white acceleration that the constant-velocity
  /// model allows, m²/s³. Over one second it lets the velocity change by about √q m/s (1σ).
  ///
  /// 2 m²/s³ (≈1.4 m/s per second): a rider braking, sprinting or turning at 8 m/s on a 20 m
  /// radius (3 m/s²) is within 2σ, so the filter follows real corners instead of cutting them
  /// (cutting corners is what makes smoothed tracks undercount), while a fix that jumps 10 m
  /// sideways at 1 Hz is still weighed against the motion. Checked on a real 92.6 km ride
  /// (distance within 0.3 % of the device's) and on stationary captures (see GPSTrack).
  public var accelerationNoise: Double
  /// The position error (1σ per axis, metres) assumed for a fix that reports none: about
  /// what a consumer receiver achieves in the open (an `eph` of 12 m).
  public var unknownErrorSigma: Double
  /// 1σ per axis of a velocity measured from gpsd's speed and track (Doppler), m/s.
  public var velocitySigma: Double
  /// With no fix for longer than this (seconds), the filter starts afresh from the next fix.
  public var maxGap: Double
  /// Innovation gate: a fix whose normalised squared innovation (χ² with 2 degrees of
  /// freedom) exceeds this is an outlier and is not used. 25 rejects ~4·10⁻⁶ of honest fixes.
  public var outlierGate: Double
  /// After this many outliers in a row the filter believes the fixes (the receiver really
  /// moved, or the filter was wrong) and starts afresh from the latest.
  public var maxConsecutiveOutliers: Int

  /// The tuning above; another starts from it and changes what it needs.
  public static let standard = PositionFilterSettings(
    accelerationNoise: 2, unknownErrorSigma: 5, velocitySigma: 0.5, maxGap: 30, outlierGate: 25,
    maxConsecutiveOutliers: 3)

  /// gpsd's `eph` is a 95 % radius; for a circular Gaussian error that radius is
  /// σ·√(2·ln 20) ≈ 2.4477 σ (σ per axis).
  public static let eph95PerSigma = (2 * log(20.0)).squareRoot()
}

/// A constant-velocity Kalman filter over a local east/north plane in metres.
///
/// State: east, north position and velocity. Both axes share one model, one process noise and
/// one (isotropic) measurement noise, so they share one 2×2 covariance and the filter is two
/// independent position/velocity filters run in step: exact for this model, and cheap.
///
/// - Prediction: `x += v·dt`; covariance grows with the white-acceleration noise
///   `q·[[dt³/3, dt²/2], [dt²/2, dt]]`.
/// - Position update: measurement noise σ = `horizontalError / 2.4477` (the fix's 95 % radius
///   turned into σ per axis), or `unknownErrorSigma`.
/// - Velocity update, when the fix has both speed and track (Doppler on most receivers):
///   `(speed·sin track, speed·cos track)` with `velocitySigma`. A stationary receiver reports
///   near-zero speed whatever its position noise does, which pins the filter down.
///
/// The plane is an equirectangular projection around an origin that is moved to the current
/// estimate when it is more than 2 km away, which keeps the projection error far below 0.1 %.
/// Pure value type, `Codable`, so it can be saved with the session.
public struct PositionFilter: Sendable, Hashable, Codable {
  public var settings: PositionFilterSettings

  /// Why the filter (re)started from a fix instead of updating.
  public enum Restart: Sendable, Hashable, Codable {
    case first
    /// The time since the last fix exceeded `maxGap`.
    case gap(seconds: Double)
    /// The time went backwards (a concatenated log, a receiver that reset its clock).
    case timeWentBackwards(seconds: Double)
    /// `maxConsecutiveOutliers` fixes in a row disagreed with the filter.
    case outliers(count: Int)
  }

  public enum Outcome: Sendable, Hashable {
    case started(Restart)
    case updated
    /// The fix was too far from the prediction and was not used.
    case outlier(normalizedInnovation: Double)
  }

  private var originLatitude = 0.0
  private var originLongitude = 0.0
  private var metresPerDegreeEast = 0.0
  private var east = 0.0
  private var north = 0.0
  private var velocityEast = 0.0
  private var velocityNorth = 0.0
  /// Per-axis covariance: position variance, position/velocity covariance, velocity variance.
  private var pPP = 0.0
  private var pPV = 0.0
  private var pVV = 0.0
  private var lastTime: Double?
  private var consecutiveOutliers = 0
  /// Updates since the last restart (velocity is meaningless before the second).
  public private(set) var updatesSinceStart = 0

  public init(settings: PositionFilterSettings = .standard) {
    self.settings = settings
  }

  public var isRunning: Bool { lastTime != nil }

  /// The filtered position.
  public var position: GeoPoint? {
    guard isRunning else { return nil }
    var longitude = originLongitude + east / metresPerDegreeEast
    if longitude > 180 { longitude -= 360 } else if longitude < -180 { longitude += 360 }
    return GeoPoint(
      latitude: min(90, max(-90, originLatitude + north / Self.metresPerDegreeNorth)),
      longitude: longitude)
  }

  /// The filtered velocity, m/s east and north; nil until two fixes have been used.
  public var velocity: (east: Double, north: Double)? {
    guard isRunning, updatesSinceStart >= 2 || hasVelocityMeasurement else { return nil }
    return (velocityEast, velocityNorth)
  }

  /// The filtered speed, m/s; nil until two fixes have been used.
  public var speed: Double? {
    velocity.map { ($0.east * $0.east + $0.north * $0.north).squareRoot() }
  }

  /// 1σ per axis of the filtered position, metres.
  public var positionSigma: Double? { isRunning ? pPP.squareRoot() : nil }
  /// 1σ per axis of the filtered velocity, m/s.
  public var velocitySigma: Double? { isRunning ? pVV.squareRoot() : nil }

  private var hasVelocityMeasurement = false

  /// Forgets everything; the next fix starts the filter.
  public mutating func reset() {
    lastTime = nil
    updatesSinceStart = 0
    consecutiveOutliers = 0
    hasVelocityMeasurement = false
  }

  /// Takes in a fix measured at `time` (seconds on any steady clock: receiver time or the
  /// board's monotonic clock, the caller keeps to one).
  @discardableResult
  public mutating func update(with fix: GPSFix, at time: Double) -> Outcome {
    let sigma = Self.sigma(of: fix, settings: settings)
    var velocity: (east: Double, north: Double)?
    if let speed = fix.speed, let track = fix.track, speed.isFinite, track.isFinite, speed >= 0 {
      let radians = track * .pi / 180
      velocity = (speed * sin(radians), speed * cos(radians))
    }
    return update(
      latitude: fix.latitude, longitude: fix.longitude, sigma: sigma, velocity: velocity, at: time)
  }

  /// The measurement noise (1σ per axis, metres) the filter uses for a fix.
  public static func sigma(of fix: GPSFix, settings: PositionFilterSettings) -> Double {
    if let error = fix.horizontalError, error.isFinite, error > 0 {
      return max(error / PositionFilterSettings.eph95PerSigma, 0.5)
    }
    return settings.unknownErrorSigma
  }

  /// Takes in a position (degrees) with its 1σ per-axis error and, optionally, a measured
  /// velocity (m/s east, north).
  @discardableResult
  public mutating func update(
    latitude: Double, longitude: Double, sigma: Double, velocity: (east: Double, north: Double)?,
    at time: Double
  ) -> Outcome {
    let r = max(sigma, 0.1) * max(sigma, 0.1)
    guard let last = lastTime else {
      start(latitude: latitude, longitude: longitude, variance: r, velocity: velocity, at: time)
      return .started(.first)
    }
    let dt = time - last
    if dt < 0 {
      start(latitude: latitude, longitude: longitude, variance: r, velocity: velocity, at: time)
      return .started(.timeWentBackwards(seconds: -dt))
    }
    if dt > settings.maxGap {
      start(latitude: latitude, longitude: longitude, variance: r, velocity: velocity, at: time)
      return .started(.gap(seconds: dt))
    }
    predict(dt)
    lastTime = time
    recentre()
    let (e, n) = project(latitude: latitude, longitude: longitude)
    let s = pPP + r
    let innovationEast = e - east
    let innovationNorth = n - north
    let nis = (innovationEast * innovationEast + innovationNorth * innovationNorth) / s
    if !(nis <= settings.outlierGate) {
      consecutiveOutliers += 1
      if consecutiveOutliers > settings.maxConsecutiveOutliers {
        let count = consecutiveOutliers
        start(latitude: latitude, longitude: longitude, variance: r, velocity: velocity, at: time)
        return .started(.outliers(count: count))
      }
      return .outlier(normalizedInnovation: nis)
    }
    consecutiveOutliers = 0
    // Position update (H = [1 0] per axis).
    let kP = pPP / s
    let kV = pPV / s
    east += kP * innovationEast
    north += kP * innovationNorth
    velocityEast += kV * innovationEast
    velocityNorth += kV * innovationNorth
    let newPP = (1 - kP) * pPP
    let newPV = (1 - kP) * pPV
    let newVV = pVV - kV * pPV
    pPP = newPP
    pPV = newPV
    pVV = newVV
    if let velocity { updateVelocity(velocity) }
    updatesSinceStart += 1
    return .updated
  }

  private mutating func start(
    latitude: Double, longitude: Double, variance: Double,
    velocity: (east: Double, north: Double)?, at time: Double
  ) {
    originLatitude = latitude
    originLongitude = longitude
    metresPerDegreeEast = Self.metresPerDegreeNorth * max(cos(latitude * .pi / 180), 1e-6)
    east = 0
    north = 0
    velocityEast = 0
    velocityNorth = 0
    pPP = variance
    pPV = 0
    // Unknown velocity: anything a rider or a car might do (σ 10 m/s).
    pVV = 100
    lastTime = time
    consecutiveOutliers = 0
    updatesSinceStart = 1
    hasVelocityMeasurement = false
    if let velocity { updateVelocity(velocity) }
  }

  private mutating func predict(_ dt: Double) {
    guard dt > 0 else { return }
    let q = settings.accelerationNoise
    let newPP = pPP + 2 * dt * pPV + dt * dt * pVV + q * dt * dt * dt / 3
    let newPV = pPV + dt * pVV + q * dt * dt / 2
    let newVV = pVV + q * dt
    pPP = newPP
    pPV = newPV
    pVV = newVV
    east += velocityEast * dt
    north += velocityNorth * dt
  }

  /// Velocity update (H = [0 1] per axis).
  private mutating func updateVelocity(_ velocity: (east: Double, north: Double)) {
    guard velocity.east.isFinite, velocity.north.isFinite else { return }
    let r = settings.velocitySigma * settings.velocitySigma
    let s = pVV + r
    let kP = pPV / s
    let kV = pVV / s
    let innovationEast = velocity.east - velocityEast
    let innovationNorth = velocity.north - velocityNorth
    east += kP * innovationEast
    north += kP * innovationNorth
    velocityEast += kV * innovationEast
    velocityNorth += kV * innovationNorth
    let newPP = pPP - kP * pPV
    let newPV = (1 - kV) * pPV
    let newVV = (1 - kV) * pVV
    pPP = newPP
    pPV = newPV
    pVV = newVV
    hasVelocityMeasurement = true
  }

  /// Moves the origin to the current estimate when it has drifted more than 2 km away.
  private mutating func recentre() {
    guard abs(east) > 2_000 || abs(north) > 2_000, let here = position else { return }
    originLatitude = here.latitude
    originLongitude = here.longitude
    metresPerDegreeEast = Self.metresPerDegreeNorth * max(cos(here.latitude * .pi / 180), 1e-6)
    east = 0
    north = 0
  }

  private func project(latitude: Double, longitude: Double) -> (Double, Double) {
    var dLon = longitude - originLongitude
    if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
    return (dLon * metresPerDegreeEast, (latitude - originLatitude) * Self.metresPerDegreeNorth)
  }

  static let metresPerDegreeNorth = GeoPoint.earthRadius * .pi / 180
}
