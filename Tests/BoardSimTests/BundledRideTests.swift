import BoardSim
import Foundation
import Testing
import WorkoutCore
import WorkoutTestSupport

/// The repository's root, found from this file (tests must not depend on the working directory).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .deletingLastPathComponent().path

let bundledRidePath = repositoryRoot + "/board/sim/rides/garmin-edge-500-2011-09-25.csv"

/// Replays a whole ride through the engine with a manual clock: the same inputs the simulated
/// board posts, stamped with board time.
func replay(_ ride: ReplayRide, settings: EngineSettings = EngineSettings()) -> EngineHarness {
  var h = EngineHarness(settings: settings, start: Moment(monotonic: 0, wall: ride.startWall))
  var schedule = ReplaySchedule(ride: ride, countdown: settings.countdown)
  h.now = Moment(monotonic: schedule.startTime, wall: ride.startWall + schedule.startTime)
  while let step = schedule.next() {
    h.now = Moment(monotonic: step.time, wall: ride.startWall + step.time)
    if let deadline = h.engine.nextDeadline, deadline <= step.time {
      h.now = Moment(monotonic: deadline, wall: ride.startWall + deadline)
      h.send(.wakeup)
      h.now = Moment(monotonic: step.time, wall: ride.startWall + step.time)
    }
    for input in step.inputs { h.send(input) }
    h.send(.tick)
  }
  return h
}

struct BundledRideTests {
  @Test func theBundledRideParses() throws {
    let ride = try ReplayRide.load(path: bundledRidePath)
    #expect(ride.records.count == 10_686)
    #expect(ride.presses.map(\.request) == [.start] + Array(repeating: .lap, count: 8) + [.stop])
    #expect(ride.startWall == 1_316_955_621)  // 2011-09-25T13:00:21Z
    #expect(ride.deviceTotals["total_distance"] == "92622.34")
  }

  /// The bundled ride's first `count` lines (header included), minus the rows `dropping` names.
  func shortRide(lines count: Int, dropping: (Substring) -> Bool) throws -> String {
    let text = try String(contentsOfFile: bundledRidePath, encoding: .utf8)
    let lines = text.split(separator: "\n").prefix(count).filter { !dropping($0) }
    let path = NSTemporaryDirectory() + "short-\(getpid())-\(UUID().uuidString.prefix(6)).csv"
    try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  @Test func aRideWithNoStopPressEndsAfterItsLastRecord() throws {
    let path = try shortRide(lines: 300) { $0.contains(",press,stop") }
    defer { unlink(path) }
    let ride = try ReplayRide.load(path: path)
    #expect(!ride.presses.contains { $0.request == .stop })
    let h = replay(ride)
    #expect([.stopped, .ended].contains(h.engine.state), "stopped a second after the last record")
    let lastRecord = try #require(ride.records.last).time
    let stop = h.commands.compactMap { command -> SessionEvent? in
      if case .recordEvent(_, let e) = command, e.kind == .transition, e.to == .stopped { e } else { nil }
    }
    #expect(stop.count == 1)
    #expect(stop.first.map { $0.moment.monotonic - lastRecord } == 1)
  }

  @Test func aRideWithNoStartPressIsReadAndSaidSo() throws {
    let path = try shortRide(lines: 300) { $0.contains(",press,") }
    defer { unlink(path) }
    let validated = try ReplayRideReader.validate(path: path)
    #expect(!validated.pressesStart)
    #expect(try ReplayRideReader.validate(path: bundledRidePath).pressesStart)
  }

  @Test func aRideSavedWithCRLFLineEndsReadsTheSame() throws {
    let text = try String(contentsOfFile: bundledRidePath, encoding: .utf8)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).prefix(200)
    let path = NSTemporaryDirectory() + "crlf-\(getpid()).csv"
    defer { unlink(path) }
    try lines.joined(separator: "\r\n").write(toFile: path, atomically: true, encoding: .utf8)
    let crlf = try ReplayRide.load(path: path)
    let original = try ReplayRide.load(path: bundledRidePath)
    #expect(crlf.startWall == original.startWall)
    #expect(crlf.records.count > 150)
    #expect(Array(crlf.records) == Array(original.records.prefix(crlf.records.count)))
  }

  /// The acceptance figure: distance and timer time within 2 % of the Edge 500's own
  /// totals (its session message: 92,622.34 m, 10,641.06 s), with the default cycling settings.
  @Test func distanceAndTimerMatchTheDevicesOwnTotals() throws {
    let ride = try ReplayRide.load(path: bundledRidePath)
    let h = replay(ride)
    #expect(h.engine.state == .ended)
    let summary = try #require(h.summaries.last)
    let deviceDistance = try #require(Double(ride.deviceTotals["total_distance"] ?? ""))
    let deviceTimer = try #require(Double(ride.deviceTotals["total_timer_time"] ?? ""))
    let distanceError = summary.totals.distance / deviceDistance - 1
    let timerError = summary.totals.timer / deviceTimer - 1
    print(
      "bundled ride: distance \(summary.totals.distance) m vs device \(deviceDistance) m (\(distanceError * 100) %), "
        + "timer \(summary.totals.timer) s vs device \(deviceTimer) s (\(timerError * 100) %), laps \(summary.laps)")
    #expect(abs(distanceError) < 0.02)
    #expect(abs(timerError) < 0.02)
    // The replay's barometer reads the pressure of the device's own (barometric) altitude.
    let deviceAscent = try #require(Double(ride.deviceTotals["total_ascent"] ?? ""))
    print("bundled ride: ascent \(summary.totals.ascent) m vs device \(deviceAscent) m")
    #expect(abs(summary.totals.ascent / deviceAscent - 1) < 0.15)
    #expect(summary.laps == 9, "8 lap presses and the last lap closed by stop, as the device had")
    let pauses = h.transitions.filter { $0.to == .paused }
    #expect(pauses.allSatisfy { $0.detail == "autoPause" })
    #expect(pauses.count > 20, "the device auto-paused 49 times; so must we, roughly")
    #expect(
      h.points.count == Int(summary.totals.timer.rounded()) || abs(h.points.count - Int(summary.totals.timer)) <= 2)
  }
}
