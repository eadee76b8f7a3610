import Testing
import WorkoutCore

@testable import SensorProtocols

/// The pure pipeline (mapping → quality filter → track / monitor / clock) over the TPVs that
/// gpsd itself reports for real captures (the `.chk` files, gpsd's regression reference).
/// The same captures go through a real gpsd in BoardLinuxTests.
@Suite("gpsd captures through the pure pipeline")
struct GPSDCaptureTests {
  /// Distance over a stretch where the receiver did not move. The quality limit is opened
  /// (these NMEA receivers report 20–60 m errors) so that every fix reaches the track: this
  /// tests the track, not the acceptance.
  @Test(
    "stationary stretches add under 5 m per minute",
    arguments: [
      // (capture, from, to): from the captures' headers and speeds (≤ 0.3 m/s throughout).
      ("bt451", "2009-12-09T15:25:00Z", "2009-12-09T15:26:00Z"),  // header: "Stationary"
      ("gp-320fw-2019-04-06-overflow", "2019-04-06T23:57:00Z", "2019-04-06T23:58:00Z"),
      ("unicore-um621", "2024-06-09T00:06:50Z", "2024-06-09T00:07:02Z"),  // before it moves
      ("com-1289", "2007-10-12T14:37:00Z", "2007-10-12T14:39:00Z"),
      ("garmin25lp", "2005-03-15T12:03:00Z", "2005-03-15T12:04:00Z"),
      ("bu353-glonass", "2014-05-26T08:14:00Z", "2014-05-26T08:15:00Z"),
      ("iTrek", "2005-07-27T04:58:00Z", "2005-07-27T04:59:20Z"),  // it walks off at 04:59:21
    ])
  func stationaryCreep(name: String, from: String, to: String) throws {
    let window = GPSDCaptures.time(from)...GPSDCaptures.time(to)
    let steps = gpsdPipeline(
      try GPSDCaptures.chkTPVs(name), quality: FixQualitySettings(maxHorizontalError: 100))
    var track = GPSTrack()
    var clock = GPSDReplayMonotonic()
    var raw: [GeoPoint] = []
    var times: [Double] = []
    for step in steps {
      guard let fix = step.accepted, let t = fix.time, window.contains(t) else { continue }
      track.add(fix, at: clock.arrival(of: fix))
      raw.append(fix.position)
      times.append(t)
    }
    let minutes = max((times.last ?? 0) - (times.first ?? 0), 1) / 60
    let perMinute = track.distance / minutes
    print(
      "creep \(name): \(raw.count) fixes over \(Int(minutes * 60)) s, raw \(gpsdFormat(gpsdPathLength(raw) / minutes)) m/min, filtered \(gpsdFormat(perMinute)) m/min"
    )
    #expect(raw.count >= 4)
    #expect(perMinute < 5)
  }

  @Test("the stationary captures do jitter: raw fixes alone would creep past 5 m/min")
  func rawJitterIsReal() throws {
    // Guards the test above against passing only because the positions never moved.
    var creeping = 0
    for (name, from, to) in [
      ("bt451", "2009-12-09T15:25:00Z", "2009-12-09T15:26:00Z"),
      ("garmin25lp", "2005-03-15T12:03:00Z", "2005-03-15T12:04:00Z"),
      ("bu353-glonass", "2014-05-26T08:14:00Z", "2014-05-26T08:15:00Z"),
      ("iTrek", "2005-07-27T04:58:00Z", "2005-07-27T04:59:20Z"),
    ] {
      let window = GPSDCaptures.time(from)...GPSDCaptures.time(to)
      let fixes = gpsdPipeline(try GPSDCaptures.chkTPVs(name), quality: FixQualitySettings(maxHorizontalError: 100))
        .compactMap(\.accepted).filter { $0.time.map(window.contains) ?? false }
      let minutes = (fixes.last!.time! - fixes.first!.time!) / 60
      if gpsdPathLength(fixes.map(\.position)) / minutes > 5 { creeping += 1 }
    }
    #expect(creeping == 4)
  }

  /// humminbird-M37's receiver time steps back 13 s mid-track while its positions go on: the
  /// board's own clock carries the track across.
  @Test(
    "moving captures: filtered distance within 2 % (or 5 m) of the raw path",
    arguments: [("bundg_zeus_9", 400.0), ("humminbird-M37", 55.0)])
  func movingDistance(name: String, atLeast: Double) throws {
    let steps = gpsdPipeline(try GPSDCaptures.chkTPVs(name), quality: FixQualitySettings())
    var track = GPSTrack()
    var clock = GPSDReplayMonotonic()
    var rawLength = 0.0
    var previous: GPSFix?
    var count = 0
    for step in steps {
      guard let fix = step.accepted else { continue }
      track.add(fix, at: clock.arrival(of: fix))
      if let previous { rawLength += previous.position.distance(to: fix.position) }
      previous = fix
      count += 1
    }
    print("moving \(name): \(count) fixes, raw \(gpsdFormat(rawLength)) m, filtered \(gpsdFormat(track.distance)) m")
    #expect(rawLength > atLeast)
    // End effects: the last few metres stay inside the deadband and the filter's lag.
    #expect(abs(track.distance - rawLength) <= max(0.02 * rawLength, 5))
  }

  /// quectel-eg25-g: a PinePhone modem barely moving (its positions within about 200 m over
  /// half a minute), its altitude swinging by 100 m and more from second to second (epv 55–85
  /// m). The default 20 m horizontal limit refuses these fixes; a rider who loosens it to 100 m
  /// gets them, and their altitudes go to the climb, where the spike gate leaves out the jumps
  /// no rider makes. Without the gate this half minute made 181 m of ascent; with it, 29 m.
  @Test func aModemsAltitudeSwingsAreNotAClimb() throws {
    let fixes = gpsdPipeline(
      try GPSDCaptures.chkTPVs("quectel-eg25-g"), quality: FixQualitySettings(maxHorizontalError: 100)
    ).compactMap(\.accepted)
    var climbing = AscentAccumulator()
    var clock = GPSDReplayMonotonic()
    var altitudes: [Double] = []
    var left = 0
    for fix in fixes {
      let at = clock.arrival(of: fix)
      guard fix.dimension == .threeD, let altitude = fix.altitude else { continue }
      let fresh = climbing.lastTime.map { at > $0 } ?? true
      if !climbing.add(altitude: altitude, at: at), fresh { left += 1 }
      altitudes.append(altitude)
    }
    print(
      "quectel-eg25-g: \(altitudes.count) 3D fixes from \(gpsdFormat(altitudes.min()!)) to "
        + "\(gpsdFormat(altitudes.max()!)) m; ascent \(gpsdFormat(climbing.totalAscent)) m, "
        + "descent \(gpsdFormat(climbing.totalDescent)) m; \(left) left out")
    #expect(altitudes.max()! - altitudes.min()! > 250, "the swings are the capture's")
    #expect(left >= 1)
    #expect(climbing.totalAscent < 40, "\(climbing.totalAscent) m")
  }

  @Test("april6_2019 as the newer gpsd reports it (1999-08-22): the time is never believed")
  func april6Rejected() throws {
    let fixes = gpsdPipeline(try GPSDCaptures.chkTPVs("april6_2019"), quality: FixQualitySettings())
      .compactMap(\.accepted)
    let timed = fixes.filter { $0.time != nil }
    #expect(timed.count == 1)
    #expect(timed.first?.time == GPSDCaptures.time("1999-08-22T00:02:31.420Z"))
    for floor in [GPSDCaptures.time("2019-01-01T00:00:00Z"), GPSClockSettings.defaultEarliestPlausible] {
      var clock = GPSClock(settings: GPSClockSettings(earliestPlausible: floor, requiredAgreeing: 1))
      for (i, fix) in fixes.enumerated() {
        let observation = clock.observe(fix, at: Moment(monotonic: Double(i), wall: Double(i)))
        switch observation {
        case .rejected(.noTime), .rejected(.beforeEarliestPlausible): break
        default: Issue.record("\(observation)")
        }
      }
      #expect(!clock.isTrusted)
    }
  }

  @Test("gp-320fw after the April 2019 rollover: the clock trusts 2019-04-06 and corrects a 1970 board")
  func gp320Rollover() throws {
    let fixes = gpsdPipeline(
      try GPSDCaptures.chkTPVs("gp-320fw-2019-04-06-overflow"), quality: FixQualitySettings(maxHorizontalError: 30)
    ).compactMap(\.accepted).filter { $0.time != nil }
    #expect(fixes.count >= 10)
    let start = fixes[0].time!
    var clock = GPSClock(settings: GPSClockSettings(earliestPlausible: GPSDCaptures.time("2019-01-01T00:00:00Z")))
    var established: GPSClockCorrection?
    for fix in fixes {
      // A board without RTC, booted at "1970-01-01 00:00:10", seeing the fixes as they come.
      let elapsed = fix.time! - start
      let moment = Moment(monotonic: 10 + elapsed, wall: 10 + elapsed)
      if case .established(let correction) = clock.observe(fix, at: moment) { established = correction }
    }
    let correction = try #require(established)
    #expect(correction.gpsTime == fixes[2].time)
    let wall = clock.wallTime(at: Moment(monotonic: 10, wall: 10))
    #expect(abs(wall - start) < 1e-6)
    #expect(gpsdUTCDate(wall) == "2019-04-06")
    // With the default floor (a 2025 build), a 2019 time is not believable.
    var strict = GPSClock()
    for fix in fixes { _ = strict.observe(fix, at: Moment(monotonic: 0, wall: 0)) }
    #expect(!strict.isTrusted)
  }

  @Test(
    "fix lost and regained in unicore-um621 and quectel-eg25-g",
    arguments: [
      ("unicore-um621", 20.0, "2024-06-09T00:07:02Z", "2024-06-09T00:07:07Z", "2024-06-09T00:07:11Z"),
      ("quectel-eg25-g", 40.0, "2022-09-11T19:15:16.980Z", "2022-09-11T19:15:25.980Z", "2022-09-11T19:15:28.980Z"),
    ])
  func fixLoss(name: String, limit: Double, lastFix: String, detected: String, regained: String) throws {
    let steps = gpsdPipeline(try GPSDCaptures.chkTPVs(name), quality: FixQualitySettings(maxHorizontalError: limit))
    var monitor = FixMonitor(settings: FixMonitorSettings(lostAfter: 5))
    var clock = -Double.infinity
    var events: [FixMonitorEvent] = []
    for step in steps {
      // Replayed faster than real time: the receiver's own times are the clock.
      guard let t = step.replayTime else { continue }
      clock = max(clock, t)
      if step.accepted != nil {
        events += monitor.fixAccepted(at: clock)
      } else if let event = monitor.advance(to: clock) {
        events.append(event)
      }
    }
    #expect(
      events == [
        .lost(lastFixAt: GPSDCaptures.time(lastFix), detectedAt: GPSDCaptures.time(detected)),
        .regained(
          at: GPSDCaptures.time(regained), lostFor: GPSDCaptures.time(regained) - GPSDCaptures.time(lastFix)),
      ])
  }

  @Test("garbage and bad checksums: holux gives no fix at all, com-1289 and triton400 only real ones")
  func garbage() throws {
    #expect(
      gpsdPipeline(try GPSDCaptures.chkTPVs("holux-gm-210"), quality: FixQualitySettings()).allSatisfy {
        $0.verdict == nil
      })
    for name in ["com-1289", "triton400"] {
      let fixes = gpsdPipeline(try GPSDCaptures.chkTPVs(name), quality: FixQualitySettings(maxHorizontalError: 100))
        .compactMap(\.accepted)
      #expect(!fixes.isEmpty)
      // Every accepted position is within 50 m of the capture's median: no garbage point.
      let lat = fixes.map(\.latitude).sorted()[fixes.count / 2]
      let lon = fixes.map(\.longitude).sorted()[fixes.count / 2]
      let centre = GeoPoint(latitude: lat, longitude: lon)
      #expect(fixes.allSatisfy { $0.position.distance(to: centre) < 50 }, "\(name)")
    }
  }
}

func gpsdFormat(_ value: Double) -> String {
  let scaled = (value * 10).rounded() / 10
  return "\(scaled)"
}

/// "YYYY-MM-DD" of a UTC time (civil-from-days, H. Hinnant).
func gpsdUTCDate(_ seconds: Double) -> String {
  let days = Int64((seconds / 86_400).rounded(.down))
  let z = days + 719_468
  let era = (z >= 0 ? z : z - 146_096) / 146_097
  let doe = z - era * 146_097
  let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
  let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
  let mp = (5 * doy + 2) / 153
  let day = doy - (153 * mp + 2) / 5 + 1
  let month = mp < 10 ? mp + 3 : mp - 9
  let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
  func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
  return "\(year)-\(two(month))-\(two(day))"
}
