import Foundation
import WorkoutTestSupport

@testable import WorkoutCore

/// Replay rides and synthetic tracks for the GPS tests.
enum GPSTestData {
  static let repo = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  struct RidePoint {
    var t: Double
    var latitude: Double
    var longitude: Double
    var speed: Double?
  }

  /// The `rec` rows with a position of a replay ride (`board/sim/rides/*.csv`:
  /// `t,kind,lat,lon,alt,speed,hr,cadence,temperature`).
  static func ride(_ file: String) throws -> [RidePoint] {
    let text = try String(contentsOf: repo.appendingPathComponent("board/sim/rides/" + file), encoding: .utf8)
    var points: [RidePoint] = []
    for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
      let f = line.split(separator: ",", omittingEmptySubsequences: false)
      guard f.count > 5, f[1] == "rec", let t = Double(f[0]), let lat = Double(f[2]), let lon = Double(f[3])
      else { continue }
      points.append(RidePoint(t: t, latitude: lat, longitude: lon, speed: Double(f[5])))
    }
    return points
  }

  /// A point `east`, `north` metres from `origin` (equirectangular, fine for a few km).
  static func offset(_ origin: GeoPoint, east: Double, north: Double) -> GeoPoint {
    let metresPerDegree = GeoPoint.earthRadius * .pi / 180
    return GeoPoint(
      latitude: origin.latitude + north / metresPerDegree,
      longitude: origin.longitude + east / (metresPerDegree * cos(origin.latitude * .pi / 180)))
  }

  /// Realistic noise of a receiver at rest: a slowly wandering bias (first-order Gauss-Markov,
  /// `sigma` per axis, correlation time `tau` seconds, as GPS errors from atmosphere and
  /// multipath behave) plus white noise `white` per axis, one sample per second.
  static func restingNoise(
    seconds: Int, sigma: Double, tau: Double, white: Double, seed: UInt64
  ) -> [(east: Double, north: Double)] {
    var rng = SeededRandom(seed: seed)
    let a = exp(-1 / tau)
    let drive = (1 - a * a).squareRoot() * sigma
    var e = sigma * rng.gaussian()
    var n = sigma * rng.gaussian()
    var out: [(Double, Double)] = []
    for _ in 0..<seconds {
      e = a * e + drive * rng.gaussian()
      n = a * n + drive * rng.gaussian()
      out.append((e + white * rng.gaussian(), n + white * rng.gaussian()))
    }
    return out
  }
}
