import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutCore

@Suite("Barometric altitude (ISA)")
struct AltitudeFormulaTests {
  @Test func constants() {
    // The familiar forms of the formula: h = 44330.77 · (1 − (p/p0)^0.190263).
    #expect(abs(BarometricAltitude.scaleHeight - 44330.77) < 0.01)
    #expect(abs(BarometricAltitude.exponent - 0.190263) < 1e-6)
    #expect(abs(1 / BarometricAltitude.exponent - 5.25588) < 1e-5)
  }

  @Test func standardAtmosphereTable() throws {
    // ICAO Standard Atmosphere (Doc 7488) pressures: 1013.25 hPa at 0 m, 898.75 hPa at 1000 m,
    // 794.95 hPa at 2000 m, 226.32 hPa at the tropopause (11 000 m).
    #expect(try #require(BarometricAltitude.altitude(pressure: 101_325)) == 0)
    for (h, p) in [(1000.0, 89_875.0), (2000, 79_495), (11_000, 22_632)] {
      let computed = try #require(BarometricAltitude.pressure(altitude: h))
      #expect(abs(computed - p) < 2, "at \(h) m: \(computed) Pa, table \(p) Pa")
      let back = try #require(BarometricAltitude.altitude(pressure: p))
      #expect(abs(back - h) < 0.3, "\(p) Pa: \(back) m, table \(h) m")
    }
  }

  @Test func oneHectopascalIsAboutEightMetresAtSeaLevel() throws {
    // dh/dp = −R*·T0/(g0·M·p0) ≈ −0.0832 m/Pa near sea level.
    let h = try #require(BarometricAltitude.altitude(pressure: 101_225))
    #expect(abs(h - 8.32) < 0.02)
  }

  @Test(arguments: [97_000.0, 101_325, 103_500])
  func roundTrips(seaLevel: Double) throws {
    for h in stride(from: -400.0, through: 4_800, by: 173) {
      let p = try #require(BarometricAltitude.pressure(altitude: h, seaLevelPressure: seaLevel))
      let back = try #require(BarometricAltitude.altitude(pressure: p, seaLevelPressure: seaLevel))
      #expect(abs(back - h) < 1e-6)
      let p0 = try #require(BarometricAltitude.seaLevelPressure(pressure: p, altitude: h))
      #expect(abs(p0 - seaLevel) < 1e-6)
    }
  }

  @Test func higherSeaLevelPressureMeansHigherAltitude() throws {
    // The same reading is higher above the sea when the sea-level pressure is higher.
    let low = try #require(BarometricAltitude.altitude(pressure: 95_000, seaLevelPressure: 100_000))
    let high = try #require(
      BarometricAltitude.altitude(pressure: 95_000, seaLevelPressure: 102_000))
    #expect(high > low + 150)
  }

  @Test func nonsenseInputsGiveNil() {
    #expect(BarometricAltitude.altitude(pressure: 0) == nil)
    #expect(BarometricAltitude.altitude(pressure: -5) == nil)
    #expect(BarometricAltitude.altitude(pressure: .nan) == nil)
    #expect(BarometricAltitude.altitude(pressure: 100_000, seaLevelPressure: 0) == nil)
    #expect(BarometricAltitude.altitude(pressure: .infinity) == nil)
    #expect(BarometricAltitude.pressure(altitude: 50_000) == nil)
    #expect(BarometricAltitude.pressure(altitude: .nan) == nil)
    #expect(BarometricAltitude.seaLevelPressure(pressure: 100_000, altitude: 44_331) == nil)
    #expect(BarometricAltitude.seaLevelPressure(pressure: -1, altitude: 10) == nil)
  }
}

@Suite("Sea-level pressure calibration")
struct AltitudeCalibratorTests {
  static func fix(
    _ altitude: Double?, epv: Double?, dimension: GPSFix.Dimension = .threeD
  )
    -> GPSFix
  {
    GPSFix(
      dimension: dimension, latitude: 47.6, longitude: -52.8, altitude: altitude,
      verticalError: epv)
  }

  /// A ride's first minute: the rider climbs from 120 m at 0.3 m/s, today's sea-level pressure
  /// is 1008 hPa, GPS height has 3 m (1σ) of noise and reports epv 6 m.
  @Test func settlesFromGoodFixesWhileMoving() throws {
    let trueP0 = 100_800.0
    var rng = SeededRandom(seed: 42)
    var calibrator = SeaLevelCalibrator()
    var settledAt: Int? = nil
    for second in 0..<60 {
      let t = Double(second)
      let h = 120 + 0.3 * t
      let p = try #require(BarometricAltitude.pressure(altitude: h, seaLevelPressure: trueP0))
      calibrator.addPressure(p, at: t - 0.4)
      let outcome = calibrator.addFix(Self.fix(h + 3 * rng.gaussian(), epv: 6), at: t)
      if case .settled = outcome { settledAt = second }
      if settledAt == nil { #expect(outcome == .accepted(count: second + 1)) }
    }
    #expect(settledAt == 29)
    #expect(calibrator.source == .gps(fixes: 30))
    let p0 = try #require(calibrator.settledPressure)
    // 30 fixes of 3 m noise average to ~0.55 m ≈ 7 Pa (the noise is independent here; real GPS
    // errors are correlated, which is why it wants many fixes).
    #expect(abs(p0 - trueP0) < 20, "settled on \(p0) Pa")
    let pNow = try #require(BarometricAltitude.pressure(altitude: 200, seaLevelPressure: trueP0))
    let h = try #require(calibrator.altitude(pressure: pNow))
    #expect(abs(h - 200) < 1.7)
  }

  @Test func refusesFixesItCannotTrust() throws {
    var c = SeaLevelCalibrator()
    #expect(c.addFix(Self.fix(50, epv: 5), at: 0) == .rejected(.noRecentPressure))
    c.addPressure(100_000, at: 10)
    #expect(c.addFix(Self.fix(nil, epv: 5, dimension: .twoD), at: 10) == .rejected(.notThreeD))
    #expect(c.addFix(Self.fix(50, epv: nil), at: 10) == .rejected(.noVerticalError))
    #expect(c.addFix(Self.fix(50, epv: 25), at: 10) == .rejected(.verticalErrorTooLarge))
    #expect(c.addFix(Self.fix(50, epv: .nan), at: 10) == .rejected(.noVerticalError))
    #expect(c.addFix(Self.fix(50, epv: 5), at: 12.5) == .rejected(.noRecentPressure))
    #expect(c.addFix(Self.fix(50, epv: 5), at: 7.9) == .rejected(.noRecentPressure))
    // 100 000 Pa at 5 000 m would need a sea-level pressure of ~190 000 Pa.
    #expect(c.addFix(Self.fix(5_000, epv: 5), at: 10) == .rejected(.implausible))
    #expect(c.acceptedFixes == 0)
    #expect(!c.isSettled)
    #expect(c.seaLevelPressure == BarometricAltitude.standardSeaLevelPressure)
    #expect(c.addFix(Self.fix(50, epv: 5), at: 11) == .accepted(count: 1))
  }

  @Test func preciseFixesOutweighVagueOnes() throws {
    // Five fixes with epv 2 m at the true height and five with epv 10 m reading 20 m high: an
    // unweighted mean would be 10 m off; inverse-variance weighting keeps it under 1 m.
    let trueP0 = 101_000.0
    let h = 300.0
    let p = try #require(BarometricAltitude.pressure(altitude: h, seaLevelPressure: trueP0))
    var c = SeaLevelCalibrator(configuration: .init(requiredFixes: 10))
    for i in 0..<10 {
      c.addPressure(p, at: Double(i))
      let good = i % 2 == 0
      c.addFix(Self.fix(good ? h : h + 20, epv: good ? 2 : 10), at: Double(i))
    }
    #expect(c.isSettled)
    let measured = try #require(c.altitude(pressure: p))
    #expect(abs(measured - h) < 1, "\(measured) m")
    #expect(measured > h)  // pulled a little towards the vague fixes, not ignoring them
  }

  @Test func settledStaysSettled() throws {
    var c = SeaLevelCalibrator(configuration: .init(requiredFixes: 3))
    for i in 0..<3 {
      c.addPressure(99_000, at: Double(i))
      c.addFix(Self.fix(100, epv: 4), at: Double(i))
    }
    let p0 = try #require(c.settledPressure)
    c.addPressure(95_000, at: 3)
    #expect(c.addFix(Self.fix(900, epv: 1), at: 3) == .alreadySettled)
    #expect(c.settledPressure == p0)
    #expect(abs(try #require(c.altitude(pressure: 99_000)) - 100) < 1e-6)
  }

  @Test func configuredValue() throws {
    let c = try #require(SeaLevelCalibrator(configuredSeaLevelPressure: 101_900))
    #expect(c.isSettled)
    #expect(c.source == .configured)
    #expect(c.seaLevelPressure == 101_900)
    var copy = c
    copy.addPressure(100_000, at: 0)
    #expect(copy.addFix(Self.fix(10, epv: 1), at: 0) == .alreadySettled)
    // A value in hPa by mistake, or nonsense, is refused.
    #expect(SeaLevelCalibrator(configuredSeaLevelPressure: 1019) == nil)
    #expect(SeaLevelCalibrator(configuredSeaLevelPressure: .nan) == nil)
  }

  @Test func ignoresNonsensePressure() {
    var c = SeaLevelCalibrator()
    c.addPressure(.nan, at: 0)
    c.addPressure(-3, at: 0)
    #expect(c.addFix(Self.fix(10, epv: 1), at: 0) == .rejected(.noRecentPressure))
  }
}
