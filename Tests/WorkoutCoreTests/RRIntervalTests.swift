import Testing
import WorkoutTestSupport

@testable import WorkoutCore

@Suite("RR intervals go with the point of the second they arrived in")
struct RRIntervalTests {
  private struct Recorded: Equatable {
    var sequence: Int
    var rr: [UInt16]?
  }

  /// Each point's sequence and the RR intervals recorded with it (in the same step, right after it).
  private func points(_ commands: [EngineCommand]) -> [Recorded] {
    var out: [Recorded] = []
    for command in commands {
      switch command {
      case .recordPoint(_, let p): out.append(Recorded(sequence: p.sequence, rr: nil))
      case .recordRRIntervals(_, let sequence, let rr):
        #expect(out.last?.sequence == sequence, "RR intervals go right after their point")
        out[out.count - 1].rr = rr
      default: break
      }
    }
    return out
  }

  @Test func eachSecondsIntervalsInOrderAndNoMoreThanAHeartCanBeat() {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    h.advance(by: 1)
    h.send(.reading(.rrIntervals([700, 710])))
    h.send(.reading(.rrIntervals([720])))
    h.send(.tick)
    h.advance(by: 1)
    h.send(.tick)
    // A strap replaying a backlog after a dropout: at most 16 go with one point.
    h.advance(by: 1)
    h.send(.reading(.rrIntervals(Array(repeating: 500, count: 20))))
    h.send(.tick)
    let recorded = points(h.commands)
    #expect(recorded.count == 3)
    #expect(recorded[0].rr == [700, 710, 720])
    #expect(recorded[1].rr == nil)
    #expect(recorded[2].rr?.count == 16)
  }

  @Test func nothingIsKeptFromBeforeTheStartOrWhilePaused() {
    var h = EngineHarness()
    h.send(.reading(.rrIntervals([800])))  // no session yet
    _ = h.press(.start)
    h.send(.reading(.rrIntervals([810])))  // countdown
    h.finishCountdown()
    h.advance(by: 1)
    h.send(.tick)
    _ = h.press(.pause)
    h.send(.reading(.rrIntervals([820])))
    h.advance(by: 1)
    _ = h.press(.resume)
    h.advance(by: 1)
    h.send(.reading(.rrIntervals([830])))
    h.send(.tick)
    #expect(points(h.commands).map(\.rr) == [nil, [830]])
  }
}
