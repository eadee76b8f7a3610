import BoardSim
import Foundation
import Testing
import WorkoutCore
import WorkoutTestSupport

/// The simulated board's receiver goes through the gpsd source's fix filter: the replay runs
/// the GPS the one way the real board does.
struct ReplayFixFilterTests {
  /// A device writes 0°, 0° before its first fix and in a dropout, and some write a second
  /// twice. Replayed, 0°, 0° was a fix: the ride's distance went to the Gulf of Guinea and
  /// back (about 5,000 km each way); now it is a `gpsRejected` as gpsd's would be, the second
  /// written twice is one epoch, and no standstill or ridden-through fix starts at 0°, 0°.
  @Test func aRecordedZeroPositionIsRefusedAsTheGPSDSourceRefusesIt() throws {
    let path = NSTemporaryDirectory() + "zero-\(UUID().uuidString).csv"
    defer { unlink(path) }
    try """
    # start: 2020-01-01T00:00:00Z
    t,kind,lat,lon,alt,speed,hr,cadence,temperature
    0,press,start
    0,rec,0,0,,,,,
    1,rec,46.0,14.5,300,10,120,,
    1,rec,46.0,14.5,300,10,120,,
    2,rec,46.00009,14.5,300,10,120,,
    3,rec,0,0,,,,,
    4,rec,46.00027,14.5,300,10,120,,
    8,rec,46.00063,14.5,300,10,120,,
    9,press,stop
    """.write(toFile: path, atomically: true, encoding: .utf8)
    let ride = try ReplayRide.load(path: path)
    var schedule = ReplaySchedule(ride: ride, countdown: 3)
    var fixes: [Double: [GPSFix]] = [:]
    var rejected: [Double: [FixRejection]] = [:]
    while let step = schedule.next() {
      for input in step.inputs {
        if case .reading(.gps(let fix)) = input { fixes[step.time, default: []].append(fix) }
        if case .reading(.gpsRejected(let why)) = input { rejected[step.time, default: []].append(why) }
      }
    }
    #expect(rejected == [0: [.zeroPosition], 3: [.zeroPosition]])
    #expect(fixes.values.joined().allSatisfy { $0.latitude > 45 }, "no fix at 0°, 0°")
    #expect(fixes[1]?.count == 1, "the second written twice is one epoch")
    #expect(fixes[0] == nil && fixes[3] == nil, "a refused report is that second's, as gpsd's is")
    // 4 → 8 is ridden through from the last real position, not from 0°, 0°.
    #expect((5...7).allSatisfy { fixes[Double($0)]?.first.map { abs($0.latitude - 46.00027) < 0.0004 } == true })
    // The lead-in waits at the first real position.
    #expect(fixes[-1]?.first?.latitude == 46.0)

    let h = replay(ride, settings: EngineSettings(countdown: 3))
    let summary = try #require(h.summaries.last)
    #expect(summary.totals.distance > 50 && summary.totals.distance < 90, "\(summary.totals.distance) m")
  }
}
