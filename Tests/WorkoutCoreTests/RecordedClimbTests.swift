import Testing

@testable import WorkoutCore

struct RecordedClimbTests {
  func point(_ second: Int, pressure: Double? = nil, calibrated: Double? = nil, gps: Double? = nil) -> TrackPoint {
    var point = TrackPoint(
      sequence: second, moment: Moment(monotonic: Double(second), wall: Double(second)), elapsed: Double(second),
      timer: Double(second), distance: 0)
    point.pressure = pressure
    point.barometricAltitude = calibrated
    point.altitude = gps
    point.fixDimension = gps == nil ? nil : 3
    return point
  }

  /// Points stored before pressures were (schema v3) have only their calibrated altitude; a
  /// session that goes on after an upgrade has both. The step between the two heights (the
  /// calibration's 139 m here) is not a climb; what the rider climbs on either side is.
  @Test func anUpgradeMidRideMakesNoStep() throws {
    var climb = RecordedClimb()
    var ascent = 0.0
    for second in 0..<120 {
      let height = 100 + 0.5 * Double(second)
      let p =
        second < 60
        ? point(second, calibrated: height, gps: height)
        : point(
          second, pressure: try #require(BarometricAltitude.pressure(altitude: height, seaLevelPressure: 103_000)),
          calibrated: height, gps: height)
      let added = climb.add(p)
      #expect(added.descent == 0)
      ascent += added.ascent
    }
    // 59.5 m climbed; each accumulator's filter lags the height by about 2 m, and the second
    // began 60 s in.
    #expect(ascent > 50 && ascent < 60, "\(ascent) m")
  }

  /// GPS altitude counts while a point has no barometer, and only then.
  @Test func gpsCountsOnlyWithoutABarometer() throws {
    var climb = RecordedClimb()
    var ascent = 0.0
    for second in 0..<60 {
      // The barometer holds level; the GPS's height wanders up 30 m.
      let pressure = try #require(BarometricAltitude.pressure(altitude: 200))
      ascent += climb.add(point(second, pressure: pressure, gps: 200 + Double(second) / 2)).ascent
    }
    #expect(ascent == 0)
    for second in 60..<120 {
      ascent += climb.add(point(second, gps: 230 + Double(second - 60) / 2)).ascent
    }
    #expect(ascent > 20 && ascent < 30, "\(ascent) m: the climb after the barometer was lost, from where GPS was")
    #expect(climb.add(point(120)) == (0, 0))
  }
}
