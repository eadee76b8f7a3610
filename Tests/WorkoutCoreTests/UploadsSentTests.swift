import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// The uploader's "all sent" as the LED shows it: between rides only, for a while, then dark.
struct UploadsSentTests {
  func patterns(_ h: EngineHarness) -> [IndicatorPattern] {
    h.commands.compactMap { if case .indicate(let p) = $0 { p } else { nil } }
  }

  @Test func ridesSentShowBetweenRidesForAWhile() {
    var h = EngineHarness()
    h.send(.uploadsSent)
    #expect(patterns(h).last == .sent)
    #expect(h.engine.nextDeadline == h.now.monotonic + SessionEngine.sentIndication, "the runtime wakes to end it")
    h.advance(by: SessionEngine.sentIndication)
    h.send(.wakeup)
    #expect(patterns(h).last == .off)
    #expect(h.engine.sentIndicatedUntil == nil)
  }

  @Test func aRideStartedMeanwhileShowsItsOwnRhythm() {
    var h = EngineHarness()
    h.send(.uploadsSent)
    _ = h.press(.start)
    #expect(patterns(h).last != .sent)
    #expect(h.engine.sentIndicatedUntil == nil)
  }

  @Test func aFaultOutranksIt() {
    #expect(IndicatorPattern.choose(state: .ended, gps: .fix, fault: true, sent: true) == .fault)
    #expect(IndicatorPattern.choose(state: .ended, gps: .fix, fault: false, copying: true, sent: true) == .copying)
    #expect(IndicatorPattern.choose(state: .running, gps: .fix, fault: false, sent: true) == .running)
    #expect(IndicatorPattern.choose(state: .notStarted, gps: .fix, fault: false, sent: true) == .sent)
  }
}
