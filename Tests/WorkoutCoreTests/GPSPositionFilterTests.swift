import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutCore

@Suite("GPS position filter (constant-velocity Kalman)")
struct GPSPositionFilterTests {
  let origin = GeoPoint(latitude: 43.7, longitude: -79.4)

  @Test("follows a straight track through noise better than the raw fixes, with a steadier speed")
  func smoothsNoise() throws {
    var rng = SeededRandom(seed: 7)
    var filter = PositionFilter()
    var rawError = 0.0
    var filteredError = 0.0
    var count = 0.0
    var previous: GeoPoint?
    var rawSpeedError = 0.0
    var filteredSpeedError = 0.0
    for t in 0..<180 {
      let truth = GPSTestData.offset(origin, east: 4 * Double(t), north: 3 * Double(t))  // 5 m/s
      let measured = GPSTestData.offset(truth, east: 3 * rng.gaussian(), north: 3 * rng.gaussian())
      filter.update(
        with: GPSFix(
          dimension: .threeD, latitude: measured.latitude, longitude: measured.longitude,
          horizontalError: 3 * PositionFilterSettings.eph95PerSigma),
        at: Double(t))
      if t >= 30, let previous {
        rawError += pow(measured.distance(to: truth), 2)
        filteredError += pow(try #require(filter.position).distance(to: truth), 2)
        rawSpeedError += pow(previous.distance(to: measured) - 5, 2)
        filteredSpeedError += pow(try #require(filter.speed) - 5, 2)
        count += 1
      }
      previous = measured
    }
    let rawRMS = (rawError / count).squareRoot()
    let filteredRMS = (filteredError / count).squareRoot()
    #expect(filteredRMS < 0.75 * rawRMS)
    // Speed derived from the filter is far steadier than speed from position differences.
    #expect((filteredSpeedError / count).squareRoot() < 0.5 * (rawSpeedError / count).squareRoot())
  }

  @Test("a Doppler velocity is used at once")
  func dopplerVelocity() throws {
    var filter = PositionFilter()
    let fix = GPSFix(dimension: .threeD, latitude: origin.latitude, longitude: origin.longitude, speed: 8, track: 90)
    filter.update(with: fix, at: 0)
    let v = try #require(filter.velocity)
    #expect(abs(v.east - 8) < 0.1 && abs(v.north) < 0.1)
  }

  @Test("restarts: the first fix, a long gap, time going back, a run of outliers")
  func restarts() {
    var settings = PositionFilterSettings.standard
    settings.maxGap = 30
    settings.maxConsecutiveOutliers = 3
    var filter = PositionFilter(settings: settings)
    let fix = GPSFix(dimension: .twoD, latitude: origin.latitude, longitude: origin.longitude, horizontalError: 10)
    #expect(filter.update(with: fix, at: 0) == .started(.first))
    #expect(filter.update(with: fix, at: 1) == .updated)
    #expect(filter.update(with: fix, at: 40) == .started(.gap(seconds: 39)))
    #expect(filter.update(with: fix, at: 35) == .started(.timeWentBackwards(seconds: 5)))
    for t in 36...40 { filter.update(with: fix, at: Double(t)) }
    let far = GPSTestData.offset(origin, east: 800, north: 0)
    let jump = GPSFix(dimension: .twoD, latitude: far.latitude, longitude: far.longitude, horizontalError: 10)
    for t in 41...43 {
      guard case .outlier = filter.update(with: jump, at: Double(t)) else {
        Issue.record("a 800 m jump at t=\(t) was used")
        return
      }
    }
    #expect(filter.update(with: jump, at: 44) == .started(.outliers(count: 4)))
    #expect(filter.position.map { $0.distance(to: far) < 1 } == true)
  }

  @Test("a 100 km straight line: the moving local plane keeps the position exact")
  func longTrack() throws {
    var filter = PositionFilter()
    var last = origin
    for t in 0...10_000 {
      let truth = GPSTestData.offset(origin, east: 0, north: 10 * Double(t))
      filter.update(
        with: GPSFix(dimension: .threeD, latitude: truth.latitude, longitude: truth.longitude, horizontalError: 5),
        at: Double(t))
      last = truth
    }
    #expect(try #require(filter.position).distance(to: last) < 1)
    #expect(abs(try #require(filter.speed) - 10) < 0.05)
  }

  @Test("the filter is a value: saved and restored mid-track, it goes on identically")
  func codable() throws {
    var filter = PositionFilter()
    for t in 0..<20 {
      let p = GPSTestData.offset(origin, east: Double(t * t) / 4, north: 2 * Double(t))
      filter.update(with: GPSFix(dimension: .threeD, latitude: p.latitude, longitude: p.longitude), at: Double(t))
    }
    var restored = try JSONDecoder().decode(PositionFilter.self, from: JSONEncoder().encode(filter))
    #expect(restored == filter)
    let next = GPSFix(dimension: .threeD, latitude: origin.latitude + 0.0004, longitude: origin.longitude + 0.001)
    #expect(restored.update(with: next, at: 20) == filter.update(with: next, at: 20))
    #expect(restored == filter)
  }
}
