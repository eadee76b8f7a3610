import SensorProtocols
import Testing
import WorkoutCore

struct GPSEpochAssemblerTests {
  let rmc = GPSFix(dimension: .twoD, time: 100, latitude: 52.85, longitude: 5.31, speed: 2.9, track: 234)
  let gga = GPSFix(
    dimension: .threeD, time: 100, latitude: 52.8501, longitude: 5.3101, altitude: -4, horizontalError: 11.4,
    verticalError: 20.7)

  @Test func laterReportsOfAnEpochFillWhatItLacked() throws {
    var assembler = GPSEpochAssembler()
    let previous = assembler.begin(rmc, at: 0)
    #expect(previous == nil)
    let merged = assembler.merge(gga, at: 0.05)
    #expect(merged)
    let finished = assembler.finish(at: 0.4)
    let fix = try #require(finished)
    #expect(fix.dimension == .threeD)
    #expect(fix.altitude == -4)
    #expect(fix.speed == 2.9 && fix.track == 234)
    #expect(fix.horizontalError == 11.4 && fix.verticalError == 20.7)
    #expect(fix.latitude == 52.85, "the first report's position is kept")
  }

  @Test func anEpochIsHandedOnAtTheVeryDeadlineItGives() throws {
    var assembler = GPSEpochAssembler(settle: 0.3)
    _ = assembler.begin(rmc, at: 101)
    let deadline = try #require(assembler.settleDeadline)
    #expect(assembler.finish(at: deadline) == rmc, "101.3 - 101 rounds below 0.3: not what is compared")
  }

  @Test func anEpochIsHandedOnWhenTheNextBeginsOrAfterQuiet() {
    var assembler = GPSEpochAssembler(settle: 0.3)
    _ = assembler.begin(rmc, at: 0)
    let early = assembler.finish(at: 0.2)
    #expect(early == nil, "still settling")
    var next = rmc
    next.time = 101
    let handedOn = assembler.begin(next, at: 1)
    #expect(handedOn == rmc)
    let forced = assembler.finish(at: 1.1, force: true)
    #expect(forced == next)
    let empty = assembler.finish(at: 5, force: true)
    #expect(empty == nil)
  }

  @Test func aReportOfAnotherTimeIsNotMerged() {
    var assembler = GPSEpochAssembler()
    _ = assembler.begin(rmc, at: 0)
    var other = gga
    other.time = 99
    let merged = assembler.merge(other, at: 0.1)
    #expect(!merged)
    #expect(assembler.inProgress == rmc)
  }
}
