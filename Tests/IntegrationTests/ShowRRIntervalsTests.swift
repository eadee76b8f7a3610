import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutCore
@testable import WorkoutStore

/// `workoutctl show` on a ride recorded with BLE sensors: the RR intervals in short, and what
/// each sensor channel gave.
struct ShowRRIntervalsTests {
  @Test func showGivesTheCountMeanAndRMSSDOfTheRRIntervals() throws {
    let dir = ServiceDirectory()
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    // 1024, 1000, 1048 (1/1024 s): 1000, 976.6, 1023.4 ms; successive differences -23.4, +46.9.
    for intervals: [UInt16] in [[1024, 1000], [1048]] {
      h.advance(by: 1)
      h.send(.reading(.heartRate(bpm: 60)))
      h.send(.reading(.rrIntervals(intervals)))
      h.send(.tick)
    }
    try dir.record(h.commands)

    let text = try dir.workoutctl(["show", "1"])
    #expect(text.status == 0)
    // RMSSD = sqrt((23.4375² + 46.875²) / 2) = 37.06 ms; mean 1000 ms.
    #expect(text.output.contains("RR intervals 3, mean 1000 ms, RMSSD 37 ms"), "\(text.output)")
    let json = try dir.workoutctl(["show", "1", "--json"])
    #expect(json.output.contains("\"rrIntervals\""))
    #expect(json.output.contains("\"count\" : 3") || json.output.contains("\"count\":3"))
  }

  @Test func showGivesEachSensorChannelsSecondsMeanAndMaximum() throws {
    let dir = ServiceDirectory()
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    // Four seconds: a power meter throughout (200, 220, 240, 260 W), a wheel sensor for the
    // last two (5 and 7 m/s), no heart rate.
    for second in 0..<4 {
      h.advance(by: 1)
      h.send(.reading(.power(watts: 200 + 20 * second)))
      if second >= 2 { h.send(.reading(.wheelSpeed(metersPerSecond: Double(2 * second + 1), distance: 5))) }
      h.send(.tick)
    }
    try dir.record(h.commands)
    let totals = try WorkoutStore.open(at: dir.database, wallNow: 0).0.channelTotals(sessionID: 1)
    #expect(totals.map(\.channel) == [.power, .wheelSpeed])
    #expect(totals.first == ChannelTotals(channel: .power, seconds: 4, average: 230, maximum: 260))

    let text = try dir.workoutctl(["show", "1"])
    #expect(text.status == 0)
    let lines = text.output.split(separator: "\n").map {
      $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }
    #expect(lines.contains("power 4 100 % 230 W 260 W"), "\(text.output)")
    #expect(lines.contains("wheel speed 2 50 % 21.6 km/h 25.2 km/h"), "\(text.output)")
    #expect(!text.output.contains("heart rate "), "no heart rate was recorded: \(text.output)")
  }
}
