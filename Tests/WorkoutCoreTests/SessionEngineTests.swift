import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// Whole scripted rides through the engine with a manual clock: every state change asserted,
/// nothing left running.
struct SessionEngineTests {
  let origin = GeoPoint(latitude: 43.7134, longitude: -79.3661)

  @Test func startPreparesCountsDownThenRuns() {
    var h = EngineHarness()
    #expect(h.press(.start) == .accepted(.prepared))
    #expect(h.engine.state == .prepared)
    #expect(h.commands.contains(.warmUpSensors))
    #expect(h.engine.nextDeadline == 1003)
    guard case .openSession(let opened) = h.commands.first else {
      Issue.record("the first command must open the session")
      return
    }
    #expect(opened.id == 1)

    h.advance(by: 1)
    h.send(.tick)
    h.advance(by: 1)
    h.send(.tick)
    #expect(h.engine.state == .prepared, "two seconds into a three second countdown")
    #expect(h.points.isEmpty, "nothing is recorded during the countdown")
    h.advance(by: 1)
    h.send(.wakeup)
    #expect(h.engine.state == .running)
    #expect(
      h.transitions.map { "\($0.from!)→\($0.to!) \($0.cause!)" } == [
        "notStarted→prepared button", "prepared→running system",
      ])
    #expect(h.transitions.last?.detail == "countdownFinished")
  }

  @Test func aLateWakeupIsCaughtByTheNextTick() {
    var h = EngineHarness()
    _ = h.press(.start)
    h.advance(by: 3.5)
    h.send(.tick)
    #expect(h.engine.state == .running)
  }

  @Test func aRideRecordsOnePointASecondWithDistanceAndHeartRate() {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 60, speed: 5, heartRate: 140, from: &position)
    let status = h.engine.status(at: h.now)
    #expect(status.state == .running)
    #expect(h.points.count == 60)
    #expect(h.points.map(\.sequence) == Array(0..<60))
    #expect(abs(status.timer - 60) < 1e-9)
    #expect(abs(status.elapsed - 60) < 1e-9)
    // 59 steps of 5 m between 60 fixes (the first fix anchors the distance).
    #expect(abs(status.distance - 295) < 0.5)
    #expect(status.heartRate == 140)
    #expect(status.averageHeartRate == 140)
    #expect(status.speed == 5)
    #expect(status.pace == nil, "cycling shows speed, not pace")
    #expect(h.points.last?.heartRate == 140)
    #expect(h.points.last?.latitude != nil)
  }

  @Test func runningShowsPace() {
    var h = EngineHarness(settings: EngineSettings(activity: .running))
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 5, speed: 4, from: &position)
    #expect(h.engine.status(at: h.now).pace == 250, "4 m/s is 4:10 per km")
  }

  @Test func pauseStopsTheTimerButNotElapsedTime() {
    var h = EngineHarness(settings: EngineSettings(autoPause: .some(nil)))
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 30, speed: 5, from: &position)
    #expect(h.press(.pause) == .accepted(.paused))
    h.ride(seconds: 20, speed: 5, from: &position)
    #expect(h.points.count == 30, "no points while paused")
    #expect(h.press(.resume) == .accepted(.running))
    h.ride(seconds: 10, speed: 5, from: &position)
    let status = h.engine.status(at: h.now)
    #expect(abs(status.timer - 40) < 1e-9)
    #expect(abs(status.elapsed - 60) < 1e-9)
    // 29 steps before the pause, then a new segment: 9 steps after it.
    #expect(abs(status.distance - 38 * 5) < 0.5, "distance moved while paused is not counted")
  }

  @Test func autoPauseAndAutoResume() {
    var h = EngineHarness()  // cycling: stop below 1.0 m/s for 2 s, resume at 1.5 m/s for 1 s
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 10, speed: 6, from: &position)
    h.ride(seconds: 2, speed: 0.2, from: &position)
    #expect(h.engine.state == .running, "two slow samples span one second: not yet")
    h.ride(seconds: 1, speed: 0.2, from: &position)
    #expect(h.engine.state == .paused)
    #expect(h.engine.status(at: h.now).pausedBySystem)
    h.ride(seconds: 60, speed: 0, from: &position)
    #expect(h.engine.state == .paused)
    h.ride(seconds: 1, speed: 4, from: &position)
    #expect(h.engine.state == .paused, "one fast sample is not yet a second of moving")
    h.ride(seconds: 1, speed: 4, from: &position)
    #expect(h.engine.state == .running)
    let causes = h.transitions.suffix(2).map { $0.detail }
    #expect(causes == ["autoPause", "autoResume"])
    // The metres ridden while auto-resume made sure are counted (the segment is kept): the
    // next fix measures from where the pause began.
    h.ride(seconds: 1, speed: 4, from: &position)
    let status = h.engine.status(at: h.now)
    let ridden: Double = 9 * 6 + 3 * 0.2 + 3 * 4
    #expect(abs(status.distance - ridden) < 0.5)
  }

  @Test func aRidersOwnPauseIsNeverAutoResumed() {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 5, speed: 6, from: &position)
    _ = h.press(.pause)
    h.ride(seconds: 30, speed: 6, from: &position)
    #expect(h.engine.state == .paused)
  }

  @Test func indoorActivitiesHaveNoAutoPause() {
    var h = EngineHarness(settings: EngineSettings(activity: .indoorCycling))
    #expect(h.engine.settings.autoPause == nil)
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 30, speed: 0, from: &position)
    #expect(h.engine.state == .running)
  }

  @Test func lapsCloseWithTheirOwnTotalsAndStopClosesTheLast() {
    var h = EngineHarness(settings: EngineSettings(autoPause: .some(nil)))
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    h.ride(seconds: 20, speed: 5, heartRate: 120, from: &position)
    #expect(h.press(.lap) == .lapMarked(number: 1))
    h.ride(seconds: 10, speed: 8, heartRate: 160, from: &position)
    #expect(h.press(.stop) == .accepted(.stopped))
    #expect(h.engine.state == .ended, "once the store has finalised, the session ends")
    #expect(h.laps.count == 2)
    #expect(h.laps.map(\.trigger) == [.lapPress, .sessionEnd])
    #expect(h.laps.map(\.number) == [1, 2])
    #expect(abs(h.laps[0].totals.distance - 19 * 5) < 0.5)
    #expect(abs(h.laps[1].totals.distance - 10 * 8) < 0.5)
    #expect(h.laps[0].totals.heartRate.mean == 120)
    #expect(h.laps[1].totals.heartRate.maximum == 160)
    #expect(abs(h.laps[0].totals.timer - 20) < 1e-9)
    let summary = try! #require(h.summaries.first)
    #expect(summary.laps == 2)
    #expect(abs(summary.totals.distance - (19 * 5 + 80)) < 0.5)
    #expect(h.transitions.map(\.to) == [.prepared, .running, .stopped, .ended])
  }

  @Test func endedIsTerminalAndTheNextStartOpensANewSession() {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    _ = h.press(.stop)
    #expect(h.engine.state == .ended)
    #expect(h.press(.resume) == .refused(.noActiveSession, state: .ended))
    #expect(h.press(.pause) == .refused(.noActiveSession, state: .ended))
    h.commands.removeAll()
    #expect(h.press(.start) == .accepted(.prepared))
    #expect(h.engine.session?.id == 2)
    guard case .openSession(let opened) = h.commands.first else {
      Issue.record("a new session must be opened")
      return
    }
    #expect(opened.id == 2)
  }

  @Test func stopDuringTheCountdownEndsAnEmptySession() {
    var h = EngineHarness()
    _ = h.press(.start)
    #expect(h.press(.stop) == .accepted(.stopped))
    #expect(h.engine.state == .ended)
    #expect(h.laps.isEmpty)
    #expect(h.summaries.first?.start == nil)
    h.advance(by: 5)
    h.send(.wakeup)
    #expect(h.engine.state == .ended, "the stale countdown does nothing")
  }

  @Test func refusedRequestsChangeNothingAndWriteNothing() {
    var h = EngineHarness()
    let step = h.send(.request(.pause, .control))
    #expect(step.outcome == .refused(.noActiveSession, state: .notStarted))
    #expect(!step.touchesStore)
    #expect(step.commands.contains { if case .log(.warning, _) = $0 { true } else { false } })
    _ = h.press(.start)
    let again = h.send(.request(.start, .control))
    #expect(again.outcome == .refused(.countdownInProgress, state: .prepared))
    #expect(!again.touchesStore)
  }

  @Test func lowBatteryStopsAndSavesTheRide() {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    h.send(.lowBattery)
    #expect(h.engine.state == .ended)
    #expect(h.transitions.dropLast().last?.detail == "lowBattery")
  }

  @Test func staleReadingsAreLeftOutOfPoints() {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    h.send(.reading(.heartRate(bpm: 150)))
    h.send(.reading(.gps(GPSFix(dimension: .twoD, latitude: 1, longitude: 2, altitude: 50))))
    h.advance(by: 1)
    h.send(.tick)
    h.advance(by: 10)
    h.send(.tick)
    let points = h.points
    #expect(points[0].heartRate == 150)
    #expect(points[0].latitude == 1)
    #expect(points[0].altitude == nil, "a 2D fix has no altitude")
    #expect(points[1].heartRate == nil, "ten seconds without a notification: the strap is gone")
    #expect(points[1].latitude == nil)
  }

  @Test func deviceEventsBelongToTheLiveSessionOrToTheService() {
    var h = EngineHarness()
    let absent = DeviceStatus(device: .barometer, condition: .absent, detail: "no /dev/i2c-1")
    h.send(.device(absent))
    #expect(h.commands.contains { if case .recordEvent(nil, let e) = $0 { e.kind == .deviceAbsent } else { false } })
    _ = h.press(.start)
    h.send(.device(DeviceStatus(device: .gps, condition: .lost, detail: "gpsd closed the connection")))
    #expect(h.commands.contains { if case .recordEvent(1, let e) = $0 { e.kind == .deviceLost } else { false } })
  }

  @Test func theSnapshotStaysTheSameSizeHoweverLongTheRide() throws {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = origin
    let encoder = JSONEncoder()
    // Warm up past every bounded window (the GPS track keeps the last few seconds of fixes;
    // the best efforts, the last 20 minutes of samples).
    h.ride(seconds: 1_300, speed: 5, heartRate: 130, from: &position)
    let early = try encoder.encode(h.engine.session!).count
    h.commands.removeAll(keepingCapacity: true)
    h.ride(seconds: 40_000, speed: 5, heartRate: 131, from: &position)
    let late = try encoder.encode(h.engine.session!).count
    // Forty times the ride: only the digits of growing numbers may add a few bytes.
    #expect(late - early < 64, "snapshot grew from \(early) to \(late) bytes")
  }
}
