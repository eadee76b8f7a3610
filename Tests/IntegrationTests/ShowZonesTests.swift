import Foundation
import Testing
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

/// `workoutctl show` prints a stored ride's time in zone (whole and per lap) and its training
/// metrics, derived from its points and the zones it was recorded with; `zones rebucket` sorts
/// the same points into other zones.
struct ShowZonesTests {
  /// A 25-minute ride at a constant 200 W: 10 minutes at 110 bpm, a lap, 15 minutes at 150 bpm.
  func recordRide(at dir: ServiceDirectory) throws {
    var settings = EngineSettings(countdown: 0)
    settings.zones = [try ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175])]
    settings.ftp = 250
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    for second in 0..<1500 {
      if second == 600 { _ = h.press(.lap) }
      h.advance(by: 1)
      h.send(.reading(.heartRate(bpm: second < 600 ? 110 : 150)))
      h.send(.reading(.power(watts: 200)))
      h.send(.tick)
    }
    _ = h.press(.stop)
    try dir.record(h.commands)
  }

  @Test func theZoneTableKeepsItsColumnsFromLapTenOn() throws {
    var settings = EngineSettings(countdown: 0)
    settings.zones = [try ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175])]
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    for second in 0..<120 {
      if second > 0 && second % 10 == 0 { _ = h.press(.lap) }
      h.advance(by: 1)
      h.send(.reading(.heartRate(bpm: 110 + second / 2)))
      h.send(.tick)
    }
    _ = h.press(.stop)
    let dir = ServiceDirectory()
    try dir.record(h.commands)
    let text = try dir.workoutctl(["show", "1"])
    #expect(text.status == 0, "\(text.output)")
    // "lap 12" and then five zones and the total, each a word of its own.
    let rows = text.output.split(separator: "\n").filter { $0.hasPrefix("lap 1") && $0.contains(":") }
    #expect(rows.count == 4, "laps 1, 10, 11, 12: \(rows)")
    for row in rows {
      #expect(row.split(separator: " ").count == 2 + 5 + 1, "\(row)")
    }
  }

  @Test func showPrintsZonesPerLapAndTheMetrics() throws {
    let dir = ServiceDirectory()
    try recordRide(at: dir)
    let text = try dir.workoutctl(["show", "1"])
    #expect(text.status == 0, "\(text.output)")
    #expect(text.output.contains("power avg 200 W (200 W without zeros), NP 200 W, work 300 kJ"), "\(text.output)")
    // 25 min at IF 0.8: TSS = 100 × (1500/3600) × 0.64 = 26.7.
    #expect(text.output.contains("IF 0.80, TSS 27 (FTP 250 W)"), "\(text.output)")
    #expect(text.output.contains("FTP estimate 190 W"))
    #expect(text.output.contains("heart-rate zones (user): 0-120,120-140,140-160,160-175,175- bpm"))
    #expect(text.output.contains("zoneChange"), "the zone changes are events")

    let json = try dir.workoutctl(["show", "1", "--json"])
    struct Shown: Decodable {
      struct Training: Decodable {
        struct Zone: Decodable {
          var quantity: String
          var seconds: [Double]
          var laps: [[Double]]
        }
        struct Metrics: Decodable {
          var normalizedPower: Double?
          var trainingStressScore: Double?
        }
        var zones: [Zone]
        var metrics: Metrics
      }
      struct Session: Decodable { var timer: Double }
      var training: Training
      var session: Session
    }
    let shown = try JSONDecoder().decode(Shown.self, from: Data(json.output.utf8))
    let zone = try #require(shown.training.zones.first)
    #expect(zone.quantity == "heartRate")
    // Time in zone over the laps sums to the timer time, to the second.
    #expect(abs(zone.laps.flatMap { $0 }.reduce(0, +) - shown.session.timer) <= 1)
    #expect(zone.laps.count == 2)
    #expect(abs(zone.laps[0][0] - 600) <= 1 && abs(zone.laps[1][2] - 900) <= 1)
    #expect(shown.training.metrics.normalizedPower == 200)
  }

  @Test func rebucketSortsTheSamePointsIntoOtherZones() throws {
    let dir = ServiceDirectory()
    try recordRide(at: dir)
    // Seven zones instead of five: 110 in zone 2, 150 in zone 6.
    let json = try dir.workoutctl(["zones", "rebucket", "1", "--zones", "100,115,125,135,145,155", "--json"])
    #expect(json.status == 0, "\(json.output)")
    struct Zone: Decodable {
      var source: String
      var seconds: [Double]
    }
    let zones = try JSONDecoder().decode([Zone].self, from: Data(json.output.utf8))
    #expect(zones.count == 1 && zones[0].source == "custom" && zones[0].seconds.count == 7)
    #expect(abs(zones[0].seconds[1] - 600) <= 1 && abs(zones[0].seconds[5] - 900) <= 1)
    let refused = try dir.workoutctl(["zones", "rebucket", "1", "--zones", "100,90,120"])
    #expect(refused.status != 0)
    #expect(refused.output.contains("--zones: zone 2 must end above where it starts (100–90)"), "\(refused.output)")
  }
}
