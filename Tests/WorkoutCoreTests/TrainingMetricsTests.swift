import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// Time in zone and the training metrics on hand-made data with known answers.
struct TrainingMetricsTests {
  let hr = try! ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175])

  @Test func eachSamplesZoneHoldsUntilTheNext() {
    var tracker = ZoneTracker(configuration: hr)
    var changes: [ZoneChange] = []
    // 10 s in zone 1 (110), 5 s in zone 3 (150), 5 s back in zone 1.
    for second in 0...20 {
      let bpm: Double = second < 10 ? 110 : second < 15 ? 150 : 115
      if let change = tracker.sample(bpm, atTimer: Double(second)) { changes.append(change) }
    }
    tracker.count(to: 20)
    #expect(tracker.workout.seconds == [15, 0, 5, 0, 0])
    #expect(changes.map(\.zone) == [0, 2, 0])
    #expect(changes.map(\.previous) == [nil, 0, 2])
    #expect(changes[1].sampleTimer == 10)
    #expect(changes[2].times.seconds == [10, 0, 5, 0, 0], "the running totals at the change")
  }

  @Test func theWorkoutsFirstPointCountsTheSecondBeforeIt() {
    // Points at timer 1, 2, ... 600 (the first a second after the start), a lap at 300: every
    // second of the timer is in a zone, in each lap and in the workout.
    var tracker = ZoneTracker(configuration: hr)
    var laps: [ZoneTimes] = []
    for second in 1...600 {
      _ = tracker.sample(second < 200 ? 110 : 150, atTimer: Double(second))
      if second == 300 { laps.append(tracker.closeLap(atTimer: 300)) }
    }
    laps.append(tracker.closeLap(atTimer: 600))
    #expect(tracker.workout.total == 600)
    #expect(laps.map(\.total) == [300, 300])
    #expect(tracker.workout.seconds == [200, 0, 400, 0, 0])
  }

  @Test func aHeartRateWaveringOnABoundaryIsOneChangeOnceItHolds() {
    var tracker = ZoneTracker(configuration: hr, announceAfter: 3)
    var changes: [ZoneChange] = []
    let samples: [Double] = [130, 139, 140, 139, 140, 139, 141, 142, 143, 144, 145, 139]
    for (second, bpm) in samples.enumerated() {
      if let change = tracker.sample(bpm, atTimer: Double(second)) { changes.append(change) }
    }
    tracker.count(to: Double(samples.count))
    // Zone 2 (from 1) at once; zone 3 only once 140+ held 3 s (from 6 s to 9 s); the last
    // second's dip is not yet news.
    #expect(changes.map(\.zone) == [1, 2])
    #expect(changes.map(\.previous) == [nil, 1])
    #expect(changes[1].sampleTimer == 9)
    #expect(tracker.workout.seconds == [0, 5, 7, 0, 0], "time in zone counts every second as it was")
  }

  @Test func aQuietStrapHoldsItsZoneOnlyForItsFreshness() {
    var tracker = ZoneTracker(configuration: hr, freshness: 5)
    _ = tracker.sample(130, atTimer: 0)
    tracker.count(to: 60)  // nothing for a minute
    #expect(tracker.workout.seconds[1] == 5)
    _ = tracker.sample(nil, atTimer: 61)
    _ = tracker.sample(130, atTimer: 70)
    tracker.count(to: 72)
    #expect(tracker.workout.seconds[1] == 7)
  }

  @Test func lapsAndActivitiesSplitTheWorkoutsTime() {
    var tracker = ZoneTracker(configuration: hr)
    var laps: [ZoneTimes] = []
    for second in 0..<300 {
      _ = tracker.sample(Double(100 + second / 3), atTimer: Double(second))
      if second == 100 || second == 250 { laps.append(tracker.closeLap(atTimer: Double(second))) }
    }
    laps.append(tracker.closeLap(atTimer: 300))
    let activity = tracker.closeActivity(atTimer: 300)
    #expect(laps.map(\.total) == [100, 150, 50])
    #expect(laps.map(\.total).reduce(0, +) == tracker.workout.total)
    #expect(tracker.workout.total == 300)
    #expect(activity == tracker.workout)
    for zone in 0..<5 {
      #expect(laps.map { $0.seconds[zone] }.reduce(0, +) == tracker.workout.seconds[zone])
    }
  }

  @Test func aConstant200WattHour() {
    var metrics = TrainingMetrics()
    for _ in 0..<3600 { metrics.addPower(200) }
    #expect(metrics.normalizedPower == 200)
    #expect(metrics.averagePower == 200)
    #expect(metrics.intensityFactor(ftp: 250) == 0.8)
    // TSS = 100 × hours × IF² = 100 × 1 × 0.64.
    #expect(abs(metrics.trainingStressScore(ftp: 250)! - 64) < 1e-9)
    #expect(metrics.work == 720_000)
    #expect(metrics.bestPower(5) == 200 && metrics.bestPower(1200) == 200)
    #expect(metrics.estimatedFTP == 190)
  }

  @Test func normalizedPowerWeighsSurgesAndZerosAreAveragedOrNot() {
    var metrics = TrainingMetrics()
    // 30 s at 400 W, 30 s at 0, ten times: average 200 W, NP well above.
    for _ in 0..<10 {
      for _ in 0..<30 { metrics.addPower(400) }
      for _ in 0..<30 { metrics.addPower(0) }
    }
    #expect(metrics.averagePower == 200)
    #expect(metrics.averagePowerWithoutZeros == 400)
    // Reference: the rolling means computed naively.
    var samples: [Double] = []
    for _ in 0..<10 { samples += Array(repeating: 400, count: 30) + Array(repeating: 0, count: 30) }
    var fourth = 0.0
    var n = 0
    for end in 30...samples.count {
      let mean = samples[(end - 30)..<end].reduce(0, +) / 30
      fourth += pow(mean, 4)
      n += 1
    }
    let np = pow(fourth / Double(n), 0.25)
    #expect(abs(metrics.normalizedPower! - np) < 1e-6)
    #expect(metrics.normalizedPower! > 250)
    #expect(metrics.bestPower(5) == 400 && metrics.bestPower(60) == 200)
    #expect(metrics.bestPower(300) == 200 && metrics.bestPower(1200) == nil, "10 minutes: no 20-minute best yet")
  }

  @Test func bestEffortsMatchABruteForceSearchInFixedMemory() throws {
    var efforts = BestEfforts(windows: [5, 60, 300, 1200])
    var rng = SystemRandomNumberGenerator()
    var samples: [Int] = []
    for _ in 0..<4000 {
      let value = Int.random(in: 0...900, using: &rng)
      samples.append(value)
      efforts.add(value)
    }
    for window in [5, 60, 300, 1200] {
      var best = 0.0
      var sum = samples[0..<window].reduce(0, +)
      best = Double(sum) / Double(window)
      for end in window..<samples.count {
        sum += samples[end] - samples[end - window]
        best = max(best, Double(sum) / Double(window))
      }
      #expect(efforts.best(window) == best, "window \(window)")
    }
    // The checkpoint form: the same after a round trip, and it goes on the same.
    let data = try JSONEncoder().encode(efforts)
    var decoded = try JSONDecoder().decode(BestEfforts.self, from: data)
    #expect(decoded == efforts)
    #expect(data.count < 4000, "\(data.count) bytes")
    decoded.add(900)
    efforts.add(900)
    #expect(decoded == efforts)
    // A short stretch holds only its samples; it also goes on the same after a round trip.
    var short = BestEfforts(windows: [5, 1200])
    for value in [100, 200, 300] { short.add(value) }
    let shortData = try JSONEncoder().encode(short)
    var shortDecoded = try JSONDecoder().decode(BestEfforts.self, from: shortData)
    #expect(shortDecoded == short && shortData.count < 120, "\(shortData.count) bytes")
    for value in [400, 500] {
      short.add(value)
      shortDecoded.add(value)
    }
    #expect(shortDecoded == short && short.best(5) == 300)
    #expect(throws: DecodingError.self) {
      try JSONDecoder().decode(
        BestEfforts.self, from: Data(#"{"windows":[5],"ring":"!!","sums":[0],"best":[null],"count":0}"#.utf8))
    }
  }

  @Test func base64IsRFC4648() {
    let vectors = [
      "": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=", "foobar": "Zm9vYmFy",
    ]
    for (plain, encoded) in vectors {
      #expect(Base64.encode(Array(plain.utf8)) == encoded)
      #expect(Base64.decode(encoded) == Array(plain.utf8))
    }
    #expect(Base64.decode("Zm9v=YmFy") == nil)
    #expect(Base64.decode("Zm9") == nil)
  }

  @Test func bestTwentyMinuteHeartRate() {
    var metrics = TrainingMetrics()
    for second in 0..<1800 { metrics.addHeartRate(second < 600 ? 120 : 160) }
    #expect(metrics.bestTwentyMinuteHeartRate == 160)
  }
}

/// Zones in the engine: the configuration and each change are events; laps carry their times;
/// a stored ride analysed afterwards gives the same times.
struct ZoneEngineTests {
  @Test func aRideWithZonesRecordsTheConfigurationAndEachChange() throws {
    var settings = EngineSettings(countdown: 0)
    let hr = try ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175])
    settings.zones = [hr]
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 47, longitude: 8)
    h.ride(seconds: 60, speed: 6, heartRate: 110, from: &position)
    h.ride(seconds: 60, speed: 6, heartRate: 150, from: &position)
    _ = h.press(.lap)
    h.ride(seconds: 30, speed: 6, heartRate: 130, from: &position)
    _ = h.press(.stop)
    let events = h.commands.compactMap { command -> SessionEvent? in
      if case .recordEvent(_, let event) = command { return event }
      return nil
    }
    let configuration = events.filter { $0.kind == .zoneConfiguration }
    #expect(configuration.map(\.detail) == ["heartRate user 0-120,120-140,140-160,160-175,175- bpm"])
    #expect(SessionAnalysis.configuration(fromEvent: configuration[0].detail!) == hr)
    let changes = events.filter { $0.kind == .zoneChange }
    #expect(
      changes.map(\.detail) == [
        // The zone, the previous one, the running totals then (the new zone held 3 s before it
        // was announced), the timer time of the sample that announced it.
        "heartRate zone 1 of 5; in zones 0,0,0,0,0 s; sample at 1 s",
        "heartRate zone 3 of 5 (was 1); in zones 61,0,3,0,0 s; sample at 64 s",
        "heartRate zone 2 of 5 (was 3); in zones 61,3,60,0,0 s; sample at 124 s",
      ])
    #expect(changes.map(\.value) == [1, 3, 2])
    // Each lap's time in zone, and the whole, sum to the timer time exactly.
    let laps = h.laps
    #expect(laps.count == 2)
    let lapTimes = laps.map { $0.zoneTimes?.first?.total ?? -1 }
    for (lap, total) in zip(laps, lapTimes) {
      #expect(abs(lap.totals.timer - total) < 1e-9, "\(lap.totals.timer) vs \(total)")
    }
    let seconds = laps.compactMap { $0.zoneTimes?.first?.seconds }
    #expect(abs(seconds[0][0] - 60) <= 1 && abs(seconds[0][2] - 60) <= 1)
    #expect(abs(seconds[1][1] - 30) <= 1)
    // The stored points analysed afterwards: the same times.
    let samples = h.points.map { TrainingSample(timer: $0.timer, heartRate: $0.heartRate, power: $0.power) }
    var ends: [Double] = []
    var sum = 0.0
    for lap in laps {
      sum += lap.totals.timer
      ends.append(sum)
    }
    let (breakdowns, _) = SessionAnalysis.analyze(samples, zones: [hr], lapEnds: ends, endTimer: sum)
    #expect(breakdowns[0].laps.map(\.seconds) == seconds)
    #expect(breakdowns[0].workout.total == laps.map { $0.zoneTimes![0].total }.reduce(0, +))
  }

  @Test func statusShowsTheCurrentZoneItsTimesAndNormalizedPower() throws {
    var settings = EngineSettings(countdown: 0)
    settings.zones = [try SystemZones.power(ftp: 250)]
    settings.ftp = 250
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    for _ in 0..<120 {
      h.advance(by: 1)
      h.send(.reading(.power(watts: 200)))
      h.send(.tick)
    }
    let status = h.engine.status(at: h.now)
    let zone = try #require(status.zones?.first)
    #expect(zone.quantity == .cyclingPower && zone.zoneCount == 6)
    #expect(zone.zone == 3, "200 W of FTP 250 is 80 %: zone 3 (76–90 %)")
    #expect(abs(zone.seconds[2] - 119) <= 1)
    #expect(status.normalizedPower == 200)
    #expect(status.intensityFactor == 0.8)
    let json = String(decoding: try JSONEncoder().encode(status), as: UTF8.self)
    #expect(json.contains("\"zones\"") && json.contains("\"normalizedPower\""))
  }

  @Test func aRideWithoutZonesHasNoZoneEvents() {
    var h = EngineHarness(settings: EngineSettings(countdown: 0))
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 47, longitude: 8)
    h.ride(seconds: 20, speed: 6, heartRate: 150, from: &position)
    _ = h.press(.stop)
    let kinds = h.commands.compactMap { command -> SessionEvent.Kind? in
      if case .recordEvent(_, let event) = command { return event.kind }
      return nil
    }
    #expect(!kinds.contains(.zoneChange) && !kinds.contains(.zoneConfiguration))
    #expect(h.laps.allSatisfy { $0.zoneTimes == [] })
  }

  @Test func theRidersProfileIsRecordedWithTheWorkoutWhenSet() {
    func riderEvents(_ rider: RiderProfile) -> [String?] {
      var settings = EngineSettings(countdown: 0)
      settings.rider = rider
      var h = EngineHarness(settings: settings)
      _ = h.press(.start)
      h.finishCountdown()
      return h.commands.compactMap { command -> String?? in
        if case .recordEvent(_, let event) = command, event.kind == .rider { return .some(event.detail) }
        return nil
      }
    }
    #expect(riderEvents(RiderProfile(age: 40, weight: 72, sex: .female)) == ["age=40 weight=72 sex=female"])
    #expect(riderEvents(RiderProfile()).isEmpty, "nothing set, nothing recorded")
  }
}

/// A workout's own zones (`workoutctl zones set`): before it runs, never after.
struct CustomZoneTests {
  @Test func theWorkoutsOwnZonesReplaceTheConfiguredOnesOfTheirQuantity() throws {
    var settings = EngineSettings(countdown: 5)
    settings.zones = [
      try SystemZones.heartRate(age: 40, resting: 60), try SystemZones.power(ftp: 250),
    ]
    settings.ftp = 250
    var h = EngineHarness(settings: settings)
    let own = try ZoneConfiguration(parsing: "100,150,200,250,300,350,400", quantity: .cyclingPower, source: .custom)
    #expect(h.send(.customZones(own)).outcome == .accepted(.notStarted))
    _ = h.press(.start)
    // While prepared, heart rate too.
    let ownHR = try ZoneConfiguration(parsing: "130,150,170", quantity: .heartRate, source: .custom)
    #expect(h.send(.customZones(ownHR)).outcome == .accepted(.prepared))
    h.finishCountdown()
    #expect(h.engine.state == .running)
    let refused = try ZoneConfiguration(parsing: "1,2,3", quantity: .heartRate, source: .custom)
    #expect(h.send(.customZones(refused)).outcome == .refused(.zonesAfterStart, state: .running))
    let details = h.commands.compactMap { command -> String? in
      if case .recordEvent(_, let event) = command, event.kind == .zoneConfiguration { return event.detail }
      return nil
    }
    #expect(details == [WorkoutPlan.describe(ownHR), WorkoutPlan.describe(own)])
    #expect(h.engine.session?.builder.zoneTrackers?.map(\.configuration) == [ownHR, own])
    #expect(h.engine.workoutPlan.nextZones == nil, "used by this workout, not the next")
    _ = h.press(.stop)
    _ = h.press(.start)
    h.finishCountdown()
    #expect(h.engine.session?.builder.zoneTrackers?.map(\.configuration.source) == [.system, .system])
  }

  @Test func zonesSetAfterAWorkoutHasStoppedAreTheNextOnes() throws {
    var settings = EngineSettings(countdown: 5)
    settings.zones = [try SystemZones.heartRate(age: 40, resting: 60)]
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    _ = h.press(.stop)
    let stoppedState = h.engine.state
    #expect(stoppedState == .stopped || stoppedState == .ended)
    let own = try ZoneConfiguration(parsing: "130,150,170", quantity: .heartRate, source: .custom)
    #expect(h.send(.customZones(own)).outcome == .accepted(stoppedState))
    #expect(h.engine.workoutPlan.nextZones == [own])
    _ = h.press(.start)
    h.finishCountdown()
    #expect(h.engine.session?.builder.zoneTrackers?.map(\.configuration) == [own])
    #expect(h.engine.workoutPlan.nextZones == nil)
  }
}

/// A ride whose best 20 minutes beat the configured FTP says so once, when it stops.
struct FTPSuggestionTests {
  func ride(watts: Int, minutes: Int, ftp: Double?) -> [SessionEvent] {
    var settings = EngineSettings(countdown: 0)
    settings.ftp = ftp
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    for _ in 0..<(minutes * 60) {
      h.advance(by: 1)
      h.send(.reading(.power(watts: watts)))
      h.send(.tick)
    }
    _ = h.press(.stop)
    return h.commands.compactMap { command -> SessionEvent? in
      if case .recordEvent(_, let event) = command, event.kind == .ftpSuggested { return event }
      return nil
    }
  }

  @Test func twentyFiveMinutesAt300WattsSuggest285() {
    let events = ride(watts: 300, minutes: 25, ftp: 250)
    #expect(events.count == 1)
    #expect(events.first?.value == 285)
    #expect(events.first?.detail == "the best 20 minutes suggest FTP 285 W (set: 250 W)")
  }

  @Test func noSuggestionBelowTheFTPOrWithoutTwentyMinutesOrWithoutAnFTP() {
    #expect(ride(watts: 250, minutes: 25, ftp: 250).isEmpty, "95 % of 250 is below 250")
    #expect(ride(watts: 400, minutes: 15, ftp: 250).isEmpty, "no 20 minutes yet")
    #expect(ride(watts: 300, minutes: 25, ftp: nil).isEmpty)
  }
}

/// `[metrics] average_power`: status shows the average as the rider counts it, and the session
/// records the choice (its exports and `show` follow it).
struct PowerAveragingTests {
  func status(_ averaging: PowerAveraging) -> (EngineStatus, [SessionEvent]) {
    var settings = EngineSettings(countdown: 0)
    settings.powerAveraging = averaging
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    for second in 0..<60 {
      h.advance(by: 1)
      h.send(.reading(.power(watts: second % 3 == 0 ? 0 : 240)))
      h.send(.tick)
    }
    let events = h.commands.compactMap { command -> SessionEvent? in
      if case .recordEvent(_, let event) = command, event.kind == .powerAveraging { return event }
      return nil
    }
    return (h.engine.status(at: h.now), events)
  }

  @Test func withZerosTheCoastingCounts() throws {
    let (status, events) = status(.withZeros)
    #expect(try #require(status.averagePower) == 160)
    #expect(events.map(\.detail) == ["withZeros"])
  }

  @Test func withoutZerosOnlyThePedalledSeconds() throws {
    let (status, events) = status(.withoutZeros)
    #expect(try #require(status.averagePower) == 240)
    #expect(events.map(\.detail) == ["withoutZeros"])
  }
}
