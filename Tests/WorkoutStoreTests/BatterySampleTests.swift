import Foundation
import GRDB
import Testing
import WorkoutCore
import WorkoutTestSupport

@testable import WorkoutStore

/// The battery as a ride's companion data: a row a minute in `battery_sample`, through the
/// store's write path, and `show`'s line from them.
struct BatterySampleTests {
  /// Rides `minutes` minutes with the gauge read every 5 s, falling `perHour` % an hour from
  /// 80 %, each engine step written as the service writes it.
  func ride(into store: WorkoutStore, minutes: Int, perHour: Double = 12) throws -> EngineHarness {
    var h = EngineHarness()
    var written = 0
    func flush() throws {
      try store.write(Array(h.commands[written...]), clock: testClock)
      written = h.commands.count
    }
    _ = h.press(.start)
    h.finishCountdown()
    try flush()
    for second in 0..<(minutes * 60) {
      h.advance(by: 1)
      if second % 5 == 0 {
        let level = 80 - perHour * Double(second) / 3600
        h.send(.reading(.battery(BatteryReading(supply: "BAT0", level: level, voltage: 3.8, status: .discharging))))
      }
      h.send(.tick)
      try flush()
    }
    return h
  }

  @Test func aSampleAMinuteNotEverySecond() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    let h = try ride(into: store, minutes: 10)
    let commands = h.commands.filter { if case .recordBatterySample = $0 { true } else { false } }
    #expect(commands.count == 10)
    let samples = try store.batterySamples(sessionID: 1)
    #expect(samples.count == 10)
    let gaps = zip(samples.dropFirst(), samples).map { $0.monotonic - $1.monotonic }
    #expect(gaps.allSatisfy { $0 == 60 }, "\(gaps)")
    #expect(samples.first?.level == 80)
    #expect(samples.first?.voltage == 3.8)
    #expect(samples.first?.status == "discharging")
  }

  @Test func showSaysTheLevelAtStartAndEndAndTheDrain() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    _ = try ride(into: store, minutes: 31)
    let line = BatterySampleRecord.summaryLine(try store.batterySamples(sessionID: 1))
    #expect(line == "battery 80 % at the start, 74 % at the end, drain 12 %/h")
    #expect(BatterySampleRecord.summaryLine([]) == nil, "no gauge: no line")
  }

  @Test func noGaugeNoSamples() throws {
    let dir = TemporaryDirectory()
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    try recordRide(into: store, seconds: 120)
    #expect(try store.batterySamples(sessionID: 1).isEmpty)
  }

  /// A database of the release before (v9) gets the table at the next start, its ride kept.
  @Test func aVersion9DatabaseGetsTheTable() throws {
    let dir = TemporaryDirectory()
    do {
      let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
      try recordRide(into: store, seconds: 20)
    }
    try DatabaseQueue(path: dir.database).write { db in
      try db.execute(sql: "DROP TABLE battery_sample")
      try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v10:%'")
    }
    let (store, _) = try WorkoutStore.open(at: dir.database, wallNow: 0)
    #expect(try store.points(sessionID: 1).count == 20)
    #expect(try store.batterySamples(sessionID: 1).isEmpty)
    let sample = BatterySample(
      BatteryReading(supply: "BAT0", level: 50, status: .discharging), at: Moment(monotonic: 1, wall: 2))
    try store.write([.recordBatterySample(sessionID: 1, sample)], clock: testClock)
    #expect(try store.batterySamples(sessionID: 1).map(\.level) == [50])
  }
}
