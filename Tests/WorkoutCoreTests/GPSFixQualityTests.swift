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
}
