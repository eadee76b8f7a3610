import Testing

@testable import WorkoutCore

@Suite("GPS fix quality")
struct GPSFixQualityTests {
  let here = (latitude: 48.149963, longitude: 11.584667)

  func fix(
    _ dimension: GPSFix.Dimension = .threeD, time: Double? = 100, error: Double? = 5,
    latitude: Double? = nil, longitude: Double? = nil
  ) -> GPSFix {
    GPSFix(
      dimension: dimension, time: time, latitude: latitude ?? here.latitude,
      longitude: longitude ?? here.longitude, altitude: 464, speed: 1, track: 90,
      horizontalError: error, verticalError: 9)
  }

  @Test("the horizontal error limit: 20 m by default, inclusive, configurable")
  func limit() {
    var filter = FixQualityFilter()
    #expect(filter.settings.maxHorizontalError == 20)
    #expect(filter.evaluate(fix(time: 1, error: 20)).fix != nil)
    #expect(filter.evaluate(fix(time: 2, error: 20.01)) == .rejected(.horizontalErrorTooLarge(error: 20.01, limit: 20)))
    var loose = FixQualityFilter(settings: FixQualitySettings(maxHorizontalError: 50))
    #expect(loose.evaluate(fix(time: 2, error: 20.01)).fix != nil)
    #expect(filter.acceptedCount == 1 && filter.rejectedCount == 1)
  }

  @Test("no reported error: accepted by default, rejected when the settings require one")
  func unknownError() {
    var lenient = FixQualityFilter()
    #expect(lenient.evaluate(fix(error: nil)).fix?.horizontalError == nil)
    var strict = FixQualityFilter(settings: FixQualitySettings(acceptUnknownHorizontalError: false))
    #expect(strict.evaluate(fix(error: nil)) == .rejected(.horizontalErrorUnknown))
    #expect(strict.evaluate(fix(error: .nan)) == .rejected(.horizontalErrorUnknown))
  }

  @Test("an absurd error is too large, never unknown, and its rejection reads without a trap")
  func absurdError() {
    var filter = FixQualityFilter()
    // +∞ (a source that overflowed) is refused as too large, standing as the largest Double so
    // the rejection stays a finite figure; before, it read as unknown and was accepted.
    #expect(
      filter.evaluate(fix(error: .infinity))
        == .rejected(.horizontalErrorTooLarge(error: .greatestFiniteMagnitude, limit: 20)))
    // Errors past Int's range (gpsd's eph is any number its JSON holds): the rider's words
    // used to convert them with Int(_:), which traps, taking the engine with it.
    for error in [1e19, 1e300, Double.greatestFiniteMagnitude] {
      guard case .rejected(let why) = filter.evaluate(fix(error: error)) else {
        Issue.record("accepted an error of \(error) m")
        continue
      }
      #expect(why.description.hasPrefix("horizontal error \(error) m > limit 20 m"), "\(why)")
    }
    #expect(
      FixRejection.horizontalErrorTooLarge(error: 123_456.6, limit: 20).description.hasPrefix(
        "horizontal error 123457 m > limit 20 m"))
  }

  @Test("invalid and null-island positions")
  func positions() {
    var filter = FixQualityFilter()
    #expect(filter.evaluate(fix(latitude: .nan)) == .rejected(.invalidPosition))
    #expect(filter.evaluate(fix(longitude: .infinity)) == .rejected(.invalidPosition))
    #expect(filter.evaluate(fix(latitude: 90.5)) == .rejected(.invalidPosition))
    #expect(filter.evaluate(fix(latitude: 0, longitude: 0)) == .rejected(.zeroPosition))
    #expect(filter.evaluate(fix(latitude: 0, longitude: 0.0001)).fix != nil)
  }

  @Test("the first usable report of an epoch is kept, later ones of the same epoch are not")
  func repeatedEpoch() {
    var filter = FixQualityFilter()
    #expect(filter.evaluate(fix(time: 10, error: 30)) == .rejected(.horizontalErrorTooLarge(error: 30, limit: 20)))
    // A rejected report does not count: the same epoch, now good enough, is taken.
    #expect(filter.evaluate(fix(time: 10, error: 8)).fix != nil)
    #expect(filter.evaluate(fix(time: 10, error: 4)) == .rejected(.repeatedTime(10)))
    #expect(filter.evaluate(fix(time: 11)).fix != nil)
    // Fixes without a time are never repeats.
    #expect(filter.evaluate(fix(time: nil)).fix != nil)
    #expect(filter.evaluate(fix(time: nil)).fix != nil)
    filter.reset()
    #expect(filter.evaluate(fix(time: 11)).fix != nil)
  }

  @Test("accepted fixes carry no NaN and no 2D altitude")
  func sanitised() throws {
    var raw = GPSFix(
      dimension: .threeD, time: .nan, latitude: 1, longitude: 2, altitude: .nan, speed: -3, track: .infinity,
      horizontalError: 4, verticalError: .nan)
    var filter = FixQualityFilter()
    let clean = try #require(filter.evaluate(raw).fix)
    #expect(clean.time == nil && clean.altitude == nil && clean.speed == nil && clean.track == nil)
    #expect(clean.verticalError == nil && clean.horizontalError == 4)
    raw = GPSFix(dimension: .threeD, time: 5, latitude: 1, longitude: 2, altitude: 100)
    raw.dimension = .twoD
    #expect(try #require(filter.evaluate(raw).fix).altitude == nil)
  }

  @Test("an altitude or speed no receiver can measure is dropped, the fix kept; the limits themselves are kept")
  func beyondAReceiver() throws {
    var filter = FixQualityFilter()
    var time = 0.0
    func judged(altitude: Double, speed: Double) throws -> GPSFix {
      time += 1
      return try #require(
        filter.evaluate(
          GPSFix(dimension: .threeD, time: time, latitude: 1, longitude: 2, altitude: altitude, speed: speed)
        ).fix)
    }
    for (altitude, speed) in [(1e300, 1e300), (-1e300, 515.01), (18_000.5, 1e17), (-1_000.5, 600)] {
      let clean = try judged(altitude: altitude, speed: speed)
      #expect(clean.altitude == nil && clean.speed == nil, "\(altitude) m, \(speed) m/s")
      #expect(clean.latitude == 1 && clean.longitude == 2)
    }
    // Everest (8,849 m), the Dead Sea shore (−430 m), the edges, and an airliner's speed.
    for (altitude, speed) in [(8_849.0, 0.0), (-430, 250), (18_000, 515), (-1_000, 0.5)] {
      let clean = try judged(altitude: altitude, speed: speed)
      #expect(clean.altitude == altitude && clean.speed == speed)
    }
  }
}
