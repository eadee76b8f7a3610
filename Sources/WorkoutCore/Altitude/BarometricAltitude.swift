#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Height from air pressure with the international barometric formula: the pressure–height
/// relation of the ICAO Standard Atmosphere (ICAO Doc 7488/3; ISO 2533:1975; identical to the
/// U.S. Standard Atmosphere 1976 below 11 km) in its troposphere layer, where temperature falls
/// linearly with height:
///
///     h = T0/L · (1 − (p/p0)^(R*·L/(g0·M)))        p = p0 · (1 − L·h/T0)^(g0·M/(R*·L))
///
/// with T0 = 288.15 K, L = 0.0065 K/m, g0 = 9.80665 m/s², M = 0.0289644 kg/mol,
/// R* = 8.31432 J/(mol·K): T0/L = 44330.77 m and the exponent 0.190263 (= 1/5.25588).
///
/// `p0` is the pressure at mean sea level *today* (QNH-like), not the standard 101325 Pa: set it
/// from a known altitude (`SeaLevelCalibrator`) and the formula gives heights above mean sea
/// level; leave it standard and it gives pressure altitude, whose *differences* are still good
/// to a fraction of a percent (ascent does not need the calibration).
public enum BarometricAltitude {
  /// ISA sea-level pressure, Pa.
  public static let standardSeaLevelPressure = 101_325.0
  /// ISA sea-level temperature, K.
  public static let standardTemperature = 288.15
  /// ISA tropospheric temperature lapse rate, K/m.
  public static let lapseRate = 0.0065
  /// Standard gravity, m/s².
  public static let standardGravity = 9.80665
  /// Molar mass of dry air, kg/mol.
  public static let molarMass = 0.0289644
  /// Universal gas constant as the standard atmosphere uses it, J/(mol·K).
  public static let gasConstant = 8.31432
  /// Top of the troposphere layer, m: the formula holds below it.
  public static let tropopause = 11_000.0

  /// R*·L/(g0·M) ≈ 0.190263.
  public static let exponent = gasConstant * lapseRate / (standardGravity * molarMass)
  /// T0/L ≈ 44330.77 m.
  public static let scaleHeight = standardTemperature / lapseRate

  /// Height in metres at which the air pressure is `pressure` Pa, given the sea-level pressure.
  /// Nil for a pressure or sea-level pressure that is not a positive finite number.
  public static func altitude(
    pressure: Double, seaLevelPressure: Double = standardSeaLevelPressure
  ) -> Double? {
    guard pressure.isFinite, pressure > 0, seaLevelPressure.isFinite, seaLevelPressure > 0 else {
      return nil
    }
    return scaleHeight * (1 - pow(pressure / seaLevelPressure, exponent))
  }

  /// The pressure, Pa, at `altitude` metres given the sea-level pressure (the inverse of
  /// `altitude(pressure:seaLevelPressure:)`). Nil for inputs the formula cannot take (non-finite,
  /// a non-positive sea-level pressure, or a height at or above T0/L).
  public static func pressure(
    altitude: Double, seaLevelPressure: Double = standardSeaLevelPressure
  ) -> Double? {
    guard altitude.isFinite, seaLevelPressure.isFinite, seaLevelPressure > 0 else { return nil }
    let base = 1 - altitude / scaleHeight
    guard base > 0 else { return nil }
    return seaLevelPressure * pow(base, 1 / exponent)
  }

  /// The sea-level pressure, Pa, that makes `pressure` Pa correspond to `altitude` metres (the
  /// barometric formula solved for p0). Nil for inputs the formula cannot take.
  public static func seaLevelPressure(pressure: Double, altitude: Double) -> Double? {
    guard pressure.isFinite, pressure > 0, altitude.isFinite else { return nil }
    let base = 1 - altitude / scaleHeight
    guard base > 0 else { return nil }
    return pressure / pow(base, 1 / exponent)
  }
}
