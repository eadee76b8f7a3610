import Testing
import WorkoutTestSupport

@testable import WorkoutCore

@Suite("GPS track: filtered distance, speed, pace")
struct GPSTrackTests {
  let origin = GeoPoint(latitude: 55.797, longitude: 23.569)

  /// Real 1 Hz rides recorded by Garmin devices (board/sim/rides, with the devices' own
  /// session distance). The track must not undercount real movement: within 1 % of the
  /// device and of the raw path, with the device's speed as Doppler and without any speed.
  @Test(
    "real rides: filtered distance within 1 % of the device's and of the raw path",
    arguments: [
      ("garmin-edge-500-2011-09-25.csv", 92_622.34), ("garmin-edge-810-2013-08-16.csv", 41_339.38),
    ])
  func realRides(file: String, deviceDistance: Double) throws {
    let points = try GPSTestData.ride(file)
    #expect(points.count > 4_000)
    let raw = zip(points, points.dropFirst()).reduce(0.0) {
      $0
        + GeoPoint(latitude: $1.0.latitude, longitude: $1.0.longitude)
        .distance(to: GeoPoint(latitude: $1.1.latitude, longitude: $1.1.longitude))
    }
    for withSpeed in [true, false] {
      var track = GPSTrack()
      for p in points {
        let fix = GPSFix(
          dimension: .threeD, time: p.t, latitude: p.latitude, longitude: p.longitude,
          speed: withSpeed ? p.speed : nil)
        track.add(fix, at: p.t)
      }
      print(
        "ride \(file) speed=\(withSpeed): raw \(Int(raw)) m, device \(Int(deviceDistance)) m, filtered \(Int(track.distance)) m"
      )
      #expect(abs(track.distance - deviceDistance) / deviceDistance < 0.01)
      #expect(abs(track.distance - raw) / raw < 0.01)
    }
  }

  /// Ten minutes at rest with the slowly wandering error real receivers have. The raw fixes
  /// creep by tens of metres a minute; the track must add under 5 m a minute, with a Doppler
  /// speed (noisy around zero) and without one.
  @Test(
    "ten minutes at rest with wandering noise: under 5 m per minute",
    arguments: [
      (3.0, 60.0, 1.0, 5.0), (2.0, 120.0, 0.5, 4.0), (1.5, 60.0, 1.0, 5.0), (2.0, 60.0, 0.3, 5.0),
    ])
  func stationaryNoise(sigma: Double, tau: Double, white: Double, eph: Double) {
    for seed in UInt64(1)...4 {
      let noise = GPSTestData.restingNoise(seconds: 600, sigma: sigma, tau: tau, white: white, seed: seed)
      var rng = SeededRandom(seed: seed &* 31)
      for withDoppler in [true, false] {
        var track = GPSTrack()
        var raw = 0.0
        var previous: GeoPoint?
        for (t, n) in noise.enumerated() {
          let p = GPSTestData.offset(origin, east: n.east, north: n.north)
          let speed = withDoppler ? abs(0.08 * rng.gaussian()) : nil
          track.add(
            GPSFix(
              dimension: .threeD, time: Double(t), latitude: p.latitude, longitude: p.longitude, speed: speed,
              horizontalError: eph),
            at: Double(t))
          if let previous { raw += previous.distance(to: p) }
          previous = p
        }
        #expect(raw / 10 > 20, "the noise does creep when not filtered")
        #expect(track.distance / 10 < 5, "seed \(seed) doppler \(withDoppler): \(track.distance / 10) m/min")
      }
    }
  }

  @Test("a slow walk (1.2 m/s) through wandering noise is not cut short")
  func slowWalk() {
    let noise = GPSTestData.restingNoise(seconds: 300, sigma: 2, tau: 60, white: 1, seed: 9)
    var track = GPSTrack()
    for (t, n) in noise.enumerated() {
      let p = GPSTestData.offset(origin, east: n.east + 1.2 * Double(t), north: n.north)
      track.add(
        GPSFix(dimension: .threeD, latitude: p.latitude, longitude: p.longitude, horizontalError: 5), at: Double(t))
    }
    // 299 s × 1.2 m/s = 358.8 m. Nothing is lost to the stationary rules or the deadband;
    // the wandering bias itself moves at ~0.3 m/s, which no filter can tell from walking, so
    // the count may run a few per cent over.
    #expect(track.distance > 0.97 * 358.8)
    #expect(track.distance < 1.10 * 358.8)
  }

  @Test("paused: the filter follows, nothing is counted; auto-resume keeps the segment, startNewSegment drops it")
  func pausing() throws {
    func fix(_ east: Double) -> GPSFix {
      let p = GPSTestData.offset(origin, east: east, north: 0)
      return GPSFix(
        dimension: .threeD, latitude: p.latitude, longitude: p.longitude, speed: 5, track: 90, horizontalError: 3)
    }
    var auto = GPSTrack()
    var manual = GPSTrack()
    for t in 0...10 {
      auto.add(fix(5 * Double(t)), at: Double(t))
      manual.add(fix(5 * Double(t)), at: Double(t))
    }
    let before = auto.distance
    #expect(abs(before - 50) < 6)
    for t in 11...20 {
      #expect(auto.add(fix(5 * Double(t)), at: Double(t), counting: false).distanceAdded == 0)
      manual.add(fix(5 * Double(t)), at: Double(t), counting: false)
    }
    #expect(auto.distance == before)
    manual.startNewSegment()
    for t in 21...30 {
      auto.add(fix(5 * Double(t)), at: Double(t))
      manual.add(fix(5 * Double(t)), at: Double(t))
    }
    // Auto-pause: the metres from 50 to 150 count (the rider did ride them); manual: 105 to 150.
    #expect(abs(auto.distance - 150) < 6)
    #expect(abs(manual.distance - (before + 45)) < 6)
  }

  @Test("a 60 s gap while riding is bridged; an impossible jump is not")
  func gaps() {
    func fix(_ east: Double) -> GPSFix {
      let p = GPSTestData.offset(origin, east: east, north: 0)
      return GPSFix(
        dimension: .threeD, latitude: p.latitude, longitude: p.longitude, speed: 8, track: 90, horizontalError: 4)
    }
    var track = GPSTrack()
    for t in 0...10 { track.add(fix(8 * Double(t)), at: Double(t)) }
    let atTunnel = track.distance
    let update = track.add(fix(8 * 70), at: 70)
    #expect(update.filter == .started(.gap(seconds: 60)))
    #expect(abs(update.distanceAdded - 480) < 10)
    let beforeJump = track.distance
    for t in 71...80 { track.add(fix(8 * Double(t)), at: Double(t)) }
    let jump = track.add(fix(8 * 80 + 20_000), at: 120)  // 20 km in 40 s
    #expect(jump.distanceAdded == 0)
    #expect(beforeJump > atTunnel)
  }

  @Test("a receiver clock that steps back does not break the track when the board's clock goes on")
  func receiverClockGlitch() {
    var track = GPSTrack()
    for i in 0..<40 {
      let p = GPSTestData.offset(origin, east: 3 * Double(i), north: 0)
      let receiverTime = i < 20 ? Double(i) : Double(i - 13)  // steps back 13 s at i = 20
      let update = track.add(
        GPSFix(
          dimension: .threeD, time: receiverTime, latitude: p.latitude, longitude: p.longitude, speed: 3, track: 90),
        at: 1_000 + Double(i))
      if case .started = update.filter, i > 0 { Issue.record("restarted at \(i)") }
    }
    #expect(abs(track.distance - 117) < 8)
  }

  @Test("speed: Doppler when given, filtered otherwise; pace for runners")
  func speedAndPace() throws {
    var doppler = GPSTrack()
    var derived = GPSTrack()
    for t in 0..<30 {
      let p = GPSTestData.offset(origin, east: 0, north: 3 * Double(t))
      doppler.add(GPSFix(dimension: .threeD, latitude: p.latitude, longitude: p.longitude, speed: 2.9), at: Double(t))
      derived.add(GPSFix(dimension: .threeD, latitude: p.latitude, longitude: p.longitude), at: Double(t))
    }
    #expect(doppler.speed == 2.9)
    #expect(abs(try #require(derived.speed) - 3) < 0.1)
    #expect(GPSTrack.pace(forSpeed: 3.3) == 1_000 / 3.3)
    #expect(GPSTrack.pace(forSpeed: 0.4) == nil)
    #expect(GPSTrack.pace(forSpeed: nil) == nil)
    #expect(GPSTrack.pace(forSpeed: .nan) == nil)
  }
}
