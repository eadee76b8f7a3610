import Foundation
import Testing
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

/// `workoutctl show` on a ride recorded with a heart-rate strap: its RR intervals in short.
struct ShowRRIntervalsTests {
  @Test func showGivesTheCountMeanAndRMSSDOfTheRRIntervals() throws {
    let dir = ServiceDirectory()
    try FileManager.default.createDirectory(atPath: dir.state, withIntermediateDirectories: true)
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
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
    try store.write(h.commands, clock: ClockStamp(epoch: "t", moment: Moment(monotonic: 0, wall: 0), wallTrusted: true))

    let ctl = binaryDirectory + "/workoutctl"
    let locations = ["--state-dir", dir.state, "--runtime-dir", dir.runtime]
    let text = try run(ctl, ["show", "1"] + locations)
    #expect(text.status == 0)
    // RMSSD = sqrt((23.4375² + 46.875²) / 2) = 37.06 ms; mean 1000 ms.
    #expect(text.output.contains("RR intervals 3, mean 1000 ms, RMSSD 37 ms"), "\(text.output)")
    let json = try run(ctl, ["show", "1", "--json"] + locations)
    #expect(json.output.contains("\"rrIntervals\""))
    #expect(json.output.contains("\"count\" : 3") || json.output.contains("\"count\":3"))
  }
}
