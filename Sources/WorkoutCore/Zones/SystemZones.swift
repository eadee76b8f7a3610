/// The zones the system computes when the rider has set none (FIELD-NOTES "Zone/metric
/// conventions").
public enum SystemZones {
  /// Maximum heart rate by Tanaka, Monahan and Seals (J Am Coll Cardiol 2001;37:153–6):
  /// 208 − 0.7 × age, count/min.
  public static func tanakaMaximumHeartRate(age: Int) -> Double {
    208 - 0.7 * Double(age)
  }

  /// The heart-rate reserve fractions where zones 2 to 5 begin (Karvonen: resting + fraction ×
  /// (maximum − resting)); zone 1, nominally from 50 %, is open below.
  public static let heartRateReserveBoundaries = [0.6, 0.7, 0.8, 0.9]

  /// Five heart-rate zones by heart-rate reserve (Karvonen, 50/60/70/80/90 %), from the
  /// rider's resting heart rate and their maximum (Tanaka's from `age` unless `maximum`).
  public static func heartRate(
    age: Int, resting: Double, maximum: Double? = nil
  ) throws(ZoneConfigurationError)
    -> ZoneConfiguration
  {
    let top = maximum ?? tanakaMaximumHeartRate(age: age)
    guard resting > 0, top > resting else {
      throw .syntax(
        "heart-rate zones need a resting heart rate below the maximum (resting \(ZoneConfiguration.format(resting)), "
          + "maximum \(ZoneConfiguration.format(top.rounded())))")
    }
    let boundaries = heartRateReserveBoundaries.map { (resting + $0 * (top - resting)).rounded() }
    return try ZoneConfiguration(quantity: .heartRate, source: .system, boundaries: boundaries)
  }

  /// Power zones as fractions of FTP where each zone after the first begins.
  public enum PowerModel: String, Sendable, Hashable, Codable, CaseIterable {
    /// Six zones: Coggan's levels 1–5, with 6 and 7 as one zone above 120 %.
    case sixZone
    /// Coggan's seven levels: ≤ 55, 56–75, 76–90, 91–105, 106–120, 121–150, > 150 % FTP.
    case coggan

    /// A level's upper percentage counts in it ("≤ 55 %"): the next zone begins just above,
    /// at 56 % of FTP and so on.
    public var boundaries: [Double] {
      switch self {
      case .sixZone: [0.56, 0.76, 0.91, 1.06, 1.21]
      case .coggan: [0.56, 0.76, 0.91, 1.06, 1.21, 1.51]
      }
    }
  }

  /// Cycling power zones from FTP (W).
  public static func power(
    ftp: Double, model: PowerModel = .sixZone
  ) throws(ZoneConfigurationError)
    -> ZoneConfiguration
  {
    guard ftp.isFinite, ftp > 0 else { throw .syntax("power zones need an FTP above 0 W") }
    let boundaries = model.boundaries.map { ($0 * ftp).rounded() }
    return try ZoneConfiguration(quantity: .cyclingPower, source: .system, boundaries: boundaries)
  }
}
