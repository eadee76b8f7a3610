/// Altitude and climbing for one session: barometric while a barometer reports, GPS altitude
/// (3D fixes) otherwise, so a barometer that fails mid-ride leaves the ride going on with GPS.
///
/// Each source has its own `AscentAccumulator`, always fed so that it is warm when it takes
/// over; only the growth of the active source's totals counts. The barometric accumulator is
/// fed pressure altitude (ISA standard sea level): ascent needs only differences, so the
/// sea-level calibration settling mid-ride cannot make a false climb. The calibrated altitude
/// is what points record.
public struct ElevationTracker: Sendable, Hashable, Codable {
  public enum Source: String, Sendable, Hashable, Codable {
    case barometer
    case gps
  }

  public private(set) var calibrator: SeaLevelCalibrator
  /// The latest barometer reading, Pa.
  public private(set) var pressure: Double?
  /// The latest calibrated barometric altitude, metres, and when (monotonic).
  public private(set) var barometricAltitude: Double?
  public private(set) var barometricAltitudeAt: Double?
  /// A barometer reading counts as current this long, seconds; then GPS altitude takes over.
  public var barometerFreshness = 5.0

  private var barometric = AscentAccumulator()
  private var gps = AscentAccumulator()
  private var countedBarometric = Totals()
  private var countedGPS = Totals()

  private struct Totals: Sendable, Hashable, Codable {
    var ascent = 0.0
    var descent = 0.0
  }

  public init(calibrator: SeaLevelCalibrator = SeaLevelCalibrator()) {
    self.calibrator = calibrator
  }

  /// The source in use at monotonic time `time`.
  public func source(at time: Double) -> Source {
    if let at = barometricAltitudeAt, time - at <= barometerFreshness { return .barometer }
    return .gps
  }

  /// Takes a barometer reading (Pa). Returns the climbing and descending it adds, metres.
  public mutating func pressure(_ pascals: Double, at time: Double) -> (ascent: Double, descent: Double) {
    guard pascals.isFinite, pascals > 0 else { return (0, 0) }
    calibrator.addPressure(pascals, at: time)
    pressure = pascals
    barometricAltitude = calibrator.altitude(pressure: pascals)
    barometricAltitudeAt = time
    guard let standard = BarometricAltitude.altitude(pressure: pascals) else { return (0, 0) }
    barometric.add(altitude: standard, at: time)
    return growth(of: barometric, counted: &countedBarometric, counts: true)
  }

  /// Takes a GPS fix. Returns the climbing and descending it adds (only while GPS is the source).
  public mutating func fix(_ fix: GPSFix, at time: Double) -> (ascent: Double, descent: Double) {
    calibrator.addFix(fix, at: time)
    guard fix.dimension == .threeD, let altitude = fix.altitude else { return (0, 0) }
    let active = source(at: time) == .gps
    gps.add(altitude: altitude, at: time)
    return growth(of: gps, counted: &countedGPS, counts: active)
  }

  /// After a restart the monotonic clock may have begun again: start the accumulators afresh
  /// (what they had counted stays in the session's totals) and forget the stale reading.
  public mutating func resume() {
    barometric = AscentAccumulator(configuration: barometric.configuration)
    gps = AscentAccumulator(configuration: gps.configuration)
    countedBarometric = Totals()
    countedGPS = Totals()
    barometricAltitude = nil
    barometricAltitudeAt = nil
    pressure = nil
  }

  private func growth(
    of accumulator: AscentAccumulator, counted: inout Totals, counts: Bool
  ) -> (
    ascent: Double, descent: Double
  ) {
    let growth = accumulator.growth(beyondAscent: &counted.ascent, descent: &counted.descent)
    return counts ? growth : (0, 0)
  }
}
