import Foundation

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
    var rng = GPSTestRandom(seed: seed)
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

/// GPSTestRandom: a small deterministic generator, so noise tests are reproducible.
struct GPSTestRandom: RandomNumberGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A standard normal sample (Box–Muller).
  mutating func gaussian() -> Double {
    let u1 = max(Double(next() >> 11) / Double(1 << 53), 1e-300)
    let u2 = Double(next() >> 11) / Double(1 << 53)
    return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
  }
}
