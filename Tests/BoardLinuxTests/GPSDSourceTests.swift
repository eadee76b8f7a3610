import Foundation
import SensorProtocols
import Testing
import WorkoutCore
import WorkoutTestSupport

@testable import BoardLinux

#if canImport(Glibc)
  import Glibc
#endif

/// GPSDSource against a real gpsd (Debian's 3.22, started by gpsfake), replaying real
/// receiver captures. Each replay compares what our source read and accepted with the TPVs
/// that the same gpsd sent, in the same run, to gpsfake's own JSON client.
/// All tests that start a gpsd run one after another (the machine has 2 cores; gpsfake paces
/// its replays with sleeps).
@Suite("gpsd, for real (gpsfake)", .serialized, .enabled(if: GPSFake.isAvailable, "needs gpsd and gpsfake"))
enum GPSDLive {}

extension GPSDLive {
  @Suite("GPSDSource against gpsd replays")
  struct Replays {
    /// The common check: every TPV gpsd sent reached us as libgps decoded it (mode, time,
    /// lat, lon), and the fixes we posted are exactly the reference TPVs that meet the
    /// acceptance rules. Returns the accepted fixes.
    @discardableResult
    func checkMatch(_ run: (recorder: GPSDRecorder, reference: [TPVSnapshot], fake: GPSFake), limit: Double) -> [GPSFix]
    {
      let (recorder, reference, fake) = run
      let ours = recorder.snapshots
      #expect(!reference.isEmpty, "gpsd sent no TPV for \(fake.capture): \(fake.stderr)")
      #expect(
        ours.count == reference.count, "\(fake.capture): we read \(ours.count) TPVs, gpsd sent \(reference.count)")
      for (a, b) in zip(ours, reference) where !gpsdSameReport(a, b) {
        Issue.record("\(fake.capture): read \(a) but gpsd sent \(b)")
        break
      }
      let expected = gpsdExpectedAccepted(reference, limit: limit)
      let fixes = recorder.fixes
      #expect(fixes.count == expected.count, "\(fake.capture): accepted \(fixes.count), expected \(expected.count)")
      for (fix, tpv) in zip(fixes, expected) where !gpsdSameFix(fix, tpv) {
        Issue.record("\(fake.capture): accepted \(fix) but the matching TPV is \(tpv)")
        break
      }
      for fix in fixes {
        let values = [fix.time, fix.altitude, fix.speed, fix.track, fix.horizontalError, fix.verticalError]
        #expect(values.allSatisfy { $0 == nil || $0!.isFinite })
        #expect(fix.latitude.isFinite && fix.longitude.isFinite)
        if fix.dimension == .twoD { #expect(fix.altitude == nil) }
      }
      #expect(recorder.hasStopped)
      print(
        "\(fake.capture): gpsd sent \(reference.count) TPVs, we read \(ours.count), accepted \(fixes.count) (limit \(limit) m)"
      )
      return fixes
    }

    /// Fix-monitor events over a replay, on the replay clock (see `GPSDReplayClock`). With
    /// `runOn`, the board's clock goes on that many seconds after the last report (its ticks
    /// continue when the receiver has stopped reporting fixes).
    func fixEvents(_ recorder: GPSDRecorder, lostAfter: Double = 5, runOn: Double = 0) -> [FixMonitorEvent] {
      var clock = GPSDReplayClock()
      var monitor = FixMonitor(settings: FixMonitorSettings(lostAfter: lostAfter))
      var events: [FixMonitorEvent] = []
      for entry in recorder.all {
        switch entry {
        case .trace(.report(let snapshot, _, _)):
          clock.advance(with: snapshot)
          if let now = clock.now, let event = monitor.advance(to: now) { events.append(event) }
        case .input(.reading(let reading)):
          // A fix happened at its own receiver time: the source hands an epoch on once it is
          // complete (when the next one begins), so the replay clock has moved on by then.
          if case .gps(let fix) = reading, let time = fix.time {
            events += monitor.observe(reading, at: time)
          } else if let now = clock.now {
            events += monitor.observe(reading, at: now)
          }
        default:
          break
        }
      }
      if runOn > 0, let now = clock.now, let event = monitor.advance(to: now + runOn) { events.append(event) }
      return events
    }

    @Test("magellan-ec10: lower-case checksums, 2D fixes only, no fix → fix → no fix")
    func magellan() throws {
      let run = try gpsdReplay("magellan-ec10.log")
      let fixes = checkMatch(run, limit: 20)
      #expect(fixes.count == 21)
      #expect(fixes.allSatisfy { $0.dimension == .twoD && $0.altitude == nil })
      // No fix at the start and at the end: gpsNoFix before the first fix and after the last.
      let kinds = run.recorder.inputs.compactMap { input -> String? in
        switch input {
        case .reading(.gps): "fix"
        case .reading(.gpsNoFix): "none"
        default: nil
        }
      }
      #expect(kinds.first == "none" && kinds.last == "none")
      #expect(kinds.filter { $0 == "none" }.count == 2)
      // The log ends with nine no-fix reports; the board's clock runs on past the 5 s limit.
      let events = fixEvents(run.recorder, runOn: 5)
      #expect(events.count == 1)
      if case .lost(let last, _)? = events.first {
        #expect(last == fixes.last?.time)
      } else {
        Issue.record("no fixLost: \(events)")
      }
      // gpsd closed the receiver at the end of the log: the source said so.
      #expect(run.recorder.receiverClosed)
      let conditions = run.recorder.statuses.map(\.condition)
      #expect(conditions.contains(.available) && conditions.last == .lost)
    }

    @Test("holux-gm-210: garbage and a partial last sentence, no fix ever: no crash, no point")
    func holux() throws {
      let run = try gpsdReplay("holux-gm-210.log")
      let fixes = checkMatch(run, limit: 20)
      #expect(fixes.isEmpty)
      #expect(run.recorder.inputs.contains { if case .reading(.gpsNoFix) = $0 { true } else { false } })
    }

    @Test("triton400: a malformed unterminated GGA glued to a GLL: no false point")
    func triton() throws {
      let run = try gpsdReplay("triton400.log", limit: 100)
      let fixes = checkMatch(run, limit: 100)
      #expect(fixes.count >= 4)
      let centre = GeoPoint(
        latitude: fixes.map(\.latitude).sorted()[fixes.count / 2],
        longitude: fixes.map(\.longitude).sorted()[fixes.count / 2])
      #expect(fixes.allSatisfy { $0.position.distance(to: centre) < 50 })
    }

    @Test("com-1289: a GSV with a bad checksum, ZDA before RMC; the 20 m limit applies")
    func com1289() throws {
      let run = try gpsdReplay("com-1289.log")
      let fixes = checkMatch(run, limit: 20)
      // Its NMEA-derived errors straddle the limit (19.0–20.9 m): some taken, some not.
      let rejected = run.recorder.all.filter {
        if case .trace(.report(_, _, .rejected(.horizontalErrorTooLarge)?)) = $0 { true } else { false }
      }
      #expect(!fixes.isEmpty)
      #expect(!rejected.isEmpty)
    }

    @Test("quectel-eg25-g: the fix is lost and regained (40 m limit: its errors are 21–78 m)")
    func quectel() throws {
      let run = try gpsdReplay("quectel-eg25-g.log", limit: 40)
      let fixes = checkMatch(run, limit: 40)
      #expect(fixes.count > 10)
      let events = fixEvents(run.recorder)
      guard events.count == 2, case .lost(let last, _) = events[0], case .regained(let at, let lostFor) = events[1]
      else {
        Issue.record("expected lost then regained: \(events)")
        return
      }
      #expect(last == GPSDCapturesTime.iso("2022-09-11T19:15:16.980Z"))
      #expect(at == GPSDCapturesTime.iso("2022-09-11T19:15:28.980Z"))
      #expect(abs(lostFor - 12) < 0.001)
    }

    @Test("unicore-um621: starts with a fix, loses it, regains it (default 20 m limit)")
    func unicore() throws {
      let run = try gpsdReplay("unicore-um621.log")
      let fixes = checkMatch(run, limit: 20)
      #expect(fixes.count >= 10)
      let events = fixEvents(run.recorder)
      guard events.count == 2, case .lost(let last, let detected) = events[0], case .regained(let at, _) = events[1]
      else {
        Issue.record("expected lost then regained: \(events)")
        return
      }
      // The fix is lost after the last accepted fix before the gap, counted lost 5 s later
      // (`fix_lost_after_seconds`), and regained at the first fix after it. gpsd 3.22 (bookworm)
      // dates this receiver's last fix 00:07:03 and the next 00:07:12; gpsd 3.25 (trixie) dates
      // each epoch a second earlier: the times are the ones gpsd sent.
      let times = fixes.compactMap(\.time)
      let gapStart = try #require(zip(times, times.dropFirst()).first { $1 - $0 > 5 })
      #expect(last == gapStart.0)
      #expect(detected == gapStart.0 + 5)
      #expect(at == gapStart.1)
      let release = [GPSDCapturesTime.iso("2024-06-09T00:07:03Z"), GPSDCapturesTime.iso("2024-06-09T00:07:02Z")]
      #expect(release.contains(last), "gpsd 3.22 or 3.25")
    }

    @Test(
      "read by the engine (.byEngine, read every 0.2 s): quectel-eg25-g gives the same fixes, the same loss and regain, in arrival order"
    )
    func engineReads() throws {
      let run = try gpsdReplay("quectel-eg25-g.log", limit: 40, engineReadsEvery: 0.2)
      let fixes = checkMatch(run, limit: 40)
      #expect(fixes.count > 10)
      let events = fixEvents(run.recorder)
      guard events.count == 2, case .lost(let last, _) = events[0], case .regained(let at, _) = events[1] else {
        Issue.record("expected lost then regained: \(events)")
        return
      }
      #expect(last == GPSDCapturesTime.iso("2022-09-11T19:15:16.980Z"))
      #expect(at == GPSDCapturesTime.iso("2022-09-11T19:15:28.980Z"))
      // Each reading carries when it arrived (read up to 0.2 s later): never out of order; gpsd
      // was absent (started after the source), came up, and went at the end.
      // (Readings only: a connection failure is posted by the source's own thread when it
      // happens, not read by the engine.)
      let readings = run.recorder.stamped.compactMap { entry -> (at: Double, input: EngineInput)? in
        if case .input(let input) = entry.entry, case .reading = input { (entry.at, input) } else { nil }
      }
      // (Within a millisecond: each read measures its ages from its own clock reading.)
      let backwards = zip(readings, readings.dropFirst()).filter { $0.at > $1.at + 1e-3 }
      #expect(
        backwards.isEmpty,
        "\(backwards.count) out of order, first: \(backwards.first.map { "\($0.0.input) at \($0.0.at) then \($0.1.input) at \($0.1.at)" } ?? "")"
      )
      #expect(run.recorder.statuses.map(\.condition) == [.absent, .available, .lost])
    }

    @Test("gp-320fw after the April 2019 rollover: 2019-04-06, trusted as the board's time")
    func gp320() throws {
      let run = try gpsdReplay("gp-320fw-2019-04-06-overflow.log", limit: 30)
      let fixes = checkMatch(run, limit: 30).filter { $0.time != nil }
      #expect(fixes.count >= 10)
      #expect(fixes.allSatisfy { gpsdUTCDay($0.time!) == "2019-04-06" })
      let floor2019 = GPSDCapturesTime.iso("2019-01-01T00:00:00Z")
      let (clock, established) = boardClock(fixes, settings: GPSClockSettings(earliestPlausible: floor2019))
      #expect(established)
      #expect(gpsdUTCDay(clock.wallTime(at: Moment(monotonic: 10, wall: 10))) == "2019-04-06")
      // A 2025 build does not believe a 2019 date.
      #expect(!boardClock(fixes, settings: GPSClockSettings()).established)
    }

    @Test("april6_2019: a Telit reporting 22 Aug 1999 after the rollover; gpsd 3.22 says 2019-04-07")
    func april6() throws {
      let run = try gpsdReplay("april6_2019.log")
      let fixes = checkMatch(run, limit: 20)
      let timed = fixes.compactMap(\.time)
      #expect(timed.count == 1)
      #expect(timed.allSatisfy { gpsdUTCDay($0) == "2019-04-07" })
      let floor2019 = GPSDCapturesTime.iso("2019-01-01T00:00:00Z")
      let (clock, established) = boardClock(
        fixes.filter { $0.time != nil }, settings: GPSClockSettings(earliestPlausible: floor2019, requiredAgreeing: 1))
      #expect(established)
      #expect(gpsdUTCDay(clock.wallTime(at: Moment(monotonic: 10, wall: 10))) == "2019-04-07")
      // What the receiver itself said, 1999-08-22, is never believed, whatever the floor.
      let receiverSaid = GPSFix(
        dimension: .twoD, time: GPSDCapturesTime.iso("1999-08-22T00:02:31.420Z"), latitude: 48.48, longitude: 0.37)
      for settings in [GPSClockSettings(earliestPlausible: floor2019, requiredAgreeing: 1), GPSClockSettings()] {
        var clock = GPSClock(settings: settings)
        #expect(!clock.observe(receiverSaid, at: Moment(monotonic: 1, wall: 1)).isTrust)
      }
    }

    @Test("bt451 'Stationary': under 5 m per minute through gpsd")
    func bt451Stationary() throws {
      let run = try gpsdReplay("bt451.log", limit: 100)
      let fixes = checkMatch(run, limit: 100)
      let timed = fixes.filter { $0.time != nil }
      let start = try #require(timed.first?.time)
      let stationary = timed.filter { $0.time! >= start && $0.time! < start + 60 }
      #expect(stationary.count >= 5)
      var track = GPSTrack()
      for fix in stationary { track.add(fix, at: fix.time! - start) }
      let minutes = (stationary.last!.time! - start) / 60
      let raw = zip(stationary, stationary.dropFirst()).reduce(0.0) { $0 + $1.0.position.distance(to: $1.1.position) }
      print(
        "bt451 stationary through gpsd: \(stationary.count) fixes, raw \(raw / minutes) m/min, filtered \(track.distance / minutes) m/min"
      )
      #expect(raw / minutes > 5)
      #expect(track.distance / minutes < 5)
    }

    /// Feeds timed fixes to a GPSClock as a board booted in 1970 would see them.
    func boardClock(_ fixes: [GPSFix], settings: GPSClockSettings) -> (GPSClock, established: Bool) {
      var clock = GPSClock(settings: settings)
      var established = false
      guard let start = fixes.first?.time else { return (clock, false) }
      for fix in fixes {
        let elapsed = fix.time! - start
        if case .established = clock.observe(fix, at: Moment(monotonic: 10 + elapsed, wall: 10 + elapsed)) {
          established = true
        }
      }
      return (clock, established)
    }
  }
}

extension GPSClockObservation {
  var isTrust: Bool {
    switch self {
    case .established, .confirmed, .corrected: true
    default: false
    }
  }
}

enum GPSDCapturesTime {
  static func iso(_ text: String) -> Double { GPSDJSON.parseTime(text)!.secondsSince1970 }
}

/// "YYYY-MM-DD" of a UTC time.
func gpsdUTCDay(_ seconds: Double) -> String {
  var t = time_t(seconds.rounded(.down))
  var parts = tm()
  gmtime_r(&t, &parts)
  func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
  return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))"
}
