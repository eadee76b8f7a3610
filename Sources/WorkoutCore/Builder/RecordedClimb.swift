/// Ascent and descent taken again from recorded points, when a restart rebuilds a session from
/// its checkpoint and the points after it: counted as `ElevationTracker` counted them live.
///
/// - The barometer's height is its pressure altitude (ISA standard sea level, from the point's
///   pressure), as the live tracker's: the point's calibrated altitude jumps when the sea-level
///   calibration settles (by 8 m a hectopascal of difference), which is no climb.
/// - Each source has its own accumulator, fed whenever a point has its height, and a point
///   counts only its source's growth: the barometer's while the point has one, GPS (3D fixes)
///   otherwise. A change of source is then not a climb either.
/// - A point of a release before pressures were stored (schema v3) has only its calibrated
///   altitude: that is a source of its own, so the points either side of an upgrade do not
///   make a step.
///
/// Times are the points' elapsed seconds, which never go back.
public struct RecordedClimb: Sendable, Hashable {
  private var pressureAltitude = Source()
  private var calibratedAltitude = Source()
  private var gpsAltitude = Source()

  private struct Source: Sendable, Hashable {
    var climb = AscentAccumulator()
    var countedAscent = 0.0
    var countedDescent = 0.0

    /// Feeds `altitude`; returns the growth of this source's totals since it was last asked.
    mutating func add(_ altitude: Double, at time: Double) -> (ascent: Double, descent: Double) {
      climb.add(altitude: altitude, at: time)
      return climb.growth(beyondAscent: &countedAscent, descent: &countedDescent)
    }
  }

  public init() {}

  /// Takes one recorded point; returns the climbing and descending it adds, metres.
  public mutating func add(_ point: TrackPoint) -> (ascent: Double, descent: Double) {
    let time = point.elapsed
    let fromPressure = point.pressure.flatMap { BarometricAltitude.altitude(pressure: $0) }
      .map { pressureAltitude.add($0, at: time) }
    let fromCalibrated =
      fromPressure == nil ? point.barometricAltitude.map { calibratedAltitude.add($0, at: time) } : nil
    let fromGPS = point.fixDimension == 3 ? point.altitude.map { gpsAltitude.add($0, at: time) } : nil
    return fromPressure ?? fromCalibrated ?? fromGPS ?? (0, 0)
  }
}
