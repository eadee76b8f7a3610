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
/// board posts, stamped with board time. `afterEachSecond` sees the engine after each tick.
func replay(
  _ ride: ReplayRide, settings: EngineSettings = EngineSettings(),
  afterEachSecond: (EngineHarness) -> Void = { _ in }
) -> EngineHarness {
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
    afterEachSecond(h)
  }
  return h
}

struct BundledRideTests {
  /// A device that smart-records (a point every few seconds while riding) and auto-pauses (no
  /// points while standing): the seconds it left out while riding are ridden through, those it
  /// left out while standing are stood through.
  @Test func gapsAreRiddenThroughWhereTheRiderMovedOnAndStoodThroughWhereTheyStopped() throws {
    let path = NSTemporaryDirectory() + "smart-\(UUID().uuidString).csv"
    defer { unlink(path) }
    // 0 → 4: 40 m north in 4 s (10 m/s, 0.00036° of latitude); 4 → 60: the same place.
    try """
    # start: 2020-01-01T00:00:00Z
    t,kind,lat,lon,alt,speed,hr,cadence,temperature
    0,press,start
    0,rec,46.0,14.5,300,10,120,,
    4,rec,46.00036,14.5,304,10,140,,
    60,rec,46.00036,14.5,304,0,100,,
    61,press,stop
    """.write(toFile: path, atomically: true, encoding: .utf8)
    let ride = try ReplayRide.load(path: path)
    var schedule = ReplaySchedule(ride: ride, countdown: 3)
    var fixes: [Double: GPSFix] = [:]
    var heartRates: [Double: Int] = [:]
    while let step = schedule.next() {
      for input in step.inputs {
        if case .reading(.gps(let fix)) = input { fixes[step.time] = fix }
        if case .reading(.heartRate(let bpm)) = input { heartRates[step.time] = bpm }
      }
    }
    for second in 1...3 {
      let fix = try #require(fixes[Double(second)])
      #expect(abs(fix.latitude - (46.0 + 0.00009 * Double(second))) < 1e-9, "on the line, second \(second)")
      #expect(abs((fix.speed ?? 0) - 10) < 0.1, "at the speed the distance took")
      #expect(abs((fix.altitude ?? 0) - (300 + Double(second))) < 1e-9)
    }
    #expect(heartRates[2] == 130)
    for second in 5..<60 {
      #expect(fixes[Double(second)]?.speed == 0, "standing, second \(second)")
      #expect(fixes[Double(second)]?.latitude == 46.00036)
    }
  }

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
