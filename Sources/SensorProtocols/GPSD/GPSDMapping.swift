import WorkoutCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What one gpsd TPV report means for the core: a position fix, or no fix and why.
public enum GPSDReport: Sendable, Hashable {
  case fix(GPSFix)
  case noFix(GPSDNoFixReason)
}

/// Why a TPV report gives no position.
public enum GPSDNoFixReason: Sendable, Hashable {
  /// `MODE_SET` absent or mode 0 (`MODE_NOT_SEEN`): gpsd has not seen a mode yet.
  case modeNotSeen
  /// Mode 1 (`MODE_NO_FIX`): the receiver says it has no fix. Any time in the report is
  /// dropped: receivers send made-up times before they have a fix.
  case noFix
  /// A mode gpsd does not define.
  case unknownMode(Int)
  /// Mode 2 or 3, but latitude or longitude is not set or not finite.
  case positionMissing
  /// Latitude beyond ±90° or longitude beyond ±180°.
  case positionOutOfRange
}

/// Maps libgps's view of a TPV (`TPVSnapshot`) to the core's `GPSFix`, applying libgps's rules
/// that a client must apply itself: check `MODE_SET` and `mode >= MODE_2D`, check the `set` bit
/// and `isfinite` of every value, take the altitude only from a 3D fix, and never take a
/// report's time without a fix. It judges nothing else: whether a fix is good enough is
/// `FixQualityFilter`'s decision.
public enum GPSDMapping {
  /// The report as the core sees it.
  ///
  /// - the fix's `time` is gpsd's `fix.time` (UTC as gpsd resolved it, GPS week rollover
  ///   included) when the report had one;
  /// - `altitude` is `altMSL`, else `altHAE − geoidSep` when both are known, and only for 3D;
  /// - `speed` is gpsd's speed over ground when finite and not negative (Doppler on most
  ///   receivers); `track` is normalised to [0, 360);
  /// - `horizontalError` is `eph`, else √(epx² + epy²) when only those are known;
  ///   `verticalError` is `epv`.
  public static func report(from snapshot: TPVSnapshot) -> GPSDReport {
    guard snapshot.fields.contains(.mode), snapshot.mode != 0 else { return .noFix(.modeNotSeen) }
    let dimension: GPSFix.Dimension
    switch snapshot.mode {
    case 1: return .noFix(.noFix)
    case 2: dimension = .twoD
    case 3: dimension = .threeD
    default: return .noFix(.unknownMode(snapshot.mode))
    }
    guard snapshot.fields.contains(.position), snapshot.latitude.isFinite,
      snapshot.longitude.isFinite
    else { return .noFix(.positionMissing) }
    guard abs(snapshot.latitude) <= 90, abs(snapshot.longitude) <= 180 else {
      return .noFix(.positionOutOfRange)
    }
    var time: Double?
    if snapshot.fields.contains(.time), let t = snapshot.time, t.seconds > 0,
      (0..<1_000_000_000).contains(t.nanoseconds)
    {
      time = t.secondsSince1970
    }
    var altitude: Double?
    if dimension == .threeD {
      if snapshot.altitudeMSL.isFinite {
        altitude = snapshot.altitudeMSL
      } else if snapshot.altitudeHAE.isFinite, snapshot.geoidSeparation.isFinite {
        // Two finite values can differ by more than a Double holds (1e308 − −1e308).
        let difference = snapshot.altitudeHAE - snapshot.geoidSeparation
        altitude = difference.isFinite ? difference : nil
      }
    }
    let speed = snapshot.speed.isFinite && snapshot.speed >= 0 ? snapshot.speed : nil
    var track: Double?
    if snapshot.track.isFinite {
      let t = fmod(snapshot.track, 360)
      // A tiny negative angle plus 360 rounds to 360 itself (-1e-20 + 360): that is north, 0.
      let positive = t < 0 ? t + 360 : t
      track = positive < 360 ? positive : 0
    }
    return .fix(
      GPSFix(
        dimension: dimension, time: time, latitude: snapshot.latitude,
        longitude: snapshot.longitude, altitude: altitude, speed: speed, track: track,
        horizontalError: horizontalError(of: snapshot),
        verticalError: nonNegative(snapshot.epv)))
  }

  /// The horizontal position error, metres: `eph`, else √(epx² + epy²), else nil.
  ///
  /// `hypot`, not the squares' root: squaring errors of 1e200 m overflows, and an infinite
  /// error would read as an unknown one (which the fix filter may accept) rather than as one
  /// too large. Beyond a Double it is the largest Double, still too large for any limit.
  public static func horizontalError(of snapshot: TPVSnapshot) -> Double? {
    if let eph = nonNegative(snapshot.eph) { return eph }
    if let x = nonNegative(snapshot.epx), let y = nonNegative(snapshot.epy) {
      return min(hypot(x, y), .greatestFiniteMagnitude)
    }
    return nil
  }

  private static func nonNegative(_ value: Double) -> Double? {
    value.isFinite && value >= 0 ? value : nil
  }
}
