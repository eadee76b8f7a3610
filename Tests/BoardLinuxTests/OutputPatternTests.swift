import Testing
import WorkoutCore

@testable import BoardLinux

struct OutputPatternTests {
  @Test func aRepeatingPatternRepeatsAndAChirpPlaysOnce() {
    let paused = OutputPattern(IndicatorPattern.paused)
    let early = paused.level(after: 10.2)
    #expect(early.on && abs((early.change ?? 0) - 0.3) < 1e-9, "1 Hz, lit for the first half second")
    #expect(!paused.level(after: 10.7).on)

    let chirp = OutputPattern(ChirpPattern.double)
    #expect(chirp.level(after: 0.01).on)
    #expect(!chirp.level(after: 0.1).on)
    #expect(chirp.level(after: 0.25).on)
    let after = chirp.level(after: 0.5)
    #expect(!after.on && after.change == nil, "silent for good once the chirp has played")

    let off = OutputPattern.off.level(after: 3)
    #expect(!off.on && off.change == nil)
    let steady = OutputPattern(IndicatorPattern.saving).level(after: 99)
    #expect(steady.on && steady.change == nil)
  }
}
