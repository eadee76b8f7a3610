import Testing

@testable import WorkoutCore

@Suite("GPS fix monitor")
struct GPSFixMonitorTests {
  let fix = SensorReading.gps(GPSFix(dimension: .threeD, latitude: 1, longitude: 2))

  @Test("before the first fix nothing is lost, however long it takes")
  func awaiting() {
    var monitor = FixMonitor()
    #expect(monitor.advance(to: 1_000) == nil)
    #expect(monitor.observe(.gpsNoFix, at: 2_000).isEmpty)
    #expect(monitor.state == .awaitingFirstFix)
    #expect(monitor.deadline == nil)
  }

  @Test("lost exactly lostAfter seconds after the last fix, once; regained with the gap")
  func lostAndRegained() {
    var monitor = FixMonitor(settings: FixMonitorSettings(lostAfter: 5))
    #expect(monitor.fixAccepted(at: 100).isEmpty)
    #expect(monitor.deadline == 105)
    #expect(monitor.advance(to: 104.9) == nil)
    #expect(monitor.observe(.gpsNoFix, at: 104.95).isEmpty)
    #expect(monitor.advance(to: 105) == .lost(lastFixAt: 100, detectedAt: 105))
    #expect(monitor.isLost)
    #expect(monitor.advance(to: 200) == nil)
    #expect(monitor.deadline == nil)
    #expect(monitor.observe(fix, at: 112) == [.regained(at: 112, lostFor: 12)])
    #expect(!monitor.isLost)
    #expect(monitor.deadline == 117)
  }

  @Test("a fix after a silence with no tick in between gives the loss, then the regain")
  func silence() {
    var monitor = FixMonitor(settings: FixMonitorSettings(lostAfter: 5))
    _ = monitor.fixAccepted(at: 10)
    #expect(monitor.fixAccepted(at: 40) == [.lost(lastFixAt: 10, detectedAt: 40), .regained(at: 40, lostFor: 30)])
  }

  @Test("fixes within lostAfter keep it fixed; other readings only let time pass")
  func steady() {
    var monitor = FixMonitor(settings: FixMonitorSettings(lostAfter: 3))
    for t in stride(from: 0.0, through: 60, by: 2.5) {
      #expect(monitor.observe(fix, at: t).isEmpty)
      #expect(monitor.observe(.heartRate(bpm: 120), at: t + 1).isEmpty)
    }
    #expect(monitor.observe(.heartRate(bpm: 120), at: 63) == [.lost(lastFixAt: 60, detectedAt: 63)])
    monitor.reset()
    #expect(monitor.state == .awaitingFirstFix)
  }

  @Test("a stamp earlier than the last fix never moves the deadline back")
  func backwardsStamp() {
    var monitor = FixMonitor(settings: FixMonitorSettings(lostAfter: 5))
    _ = monitor.fixAccepted(at: 50)
    _ = monitor.fixAccepted(at: 49)
    #expect(monitor.deadline == 55)
    #expect(monitor.fixAccepted(at: .nan).isEmpty)
  }
}
