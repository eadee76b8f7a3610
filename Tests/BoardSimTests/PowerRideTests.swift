import Foundation
import Testing
import WorkoutCore
import WorkoutTestSupport

@testable import BoardSim

/// Real rides with a power meter, replayed with their power through the engine as the simulated
/// board does, against the devices' own totals (their session or lap messages, in the rides'
/// "device totals" lines): issue 16's acceptance figures.
struct PowerRideTests {
  struct Outcome {
    var summary: SessionSummary
    var laps: [LapSummary]
    var points: [TrackPoint]
    /// What `workoutctl status` said in the ride's last running second.
    var lastRunningStatus: EngineStatus?
  }

  /// The whole ride through the engine with zones for both quantities and an FTP, keeping the
  /// last live status. Auto-pause off, as both devices had it (their timer is their elapsed
  /// time: the stops at lights are in their averages, zeros and all).
  func ride(_ file: String, ftp: Double = 300) throws -> (ReplayRide, Outcome) {
    let ride = try ReplayRide.load(path: repositoryRoot + "/board/sim/rides/" + file)
    var settings = EngineSettings(autoPause: .some(nil))
    settings.zones = [
      try SystemZones.heartRate(age: 40, resting: 55),
      try SystemZones.power(ftp: ftp),
    ]
    settings.ftp = ftp
    var lastRunning: EngineStatus?
    let h = replay(ride, settings: settings) { h in
      if h.engine.state == .running { lastRunning = h.engine.status(at: h.now) }
    }
    let summary = try #require(h.summaries.last)
    return (ride, Outcome(summary: summary, laps: h.laps, points: h.points, lastRunningStatus: lastRunning))
  }

  func total(_ ride: ReplayRide, _ key: String) throws -> Double {
    try #require(Double(ride.deviceTotals[key] ?? ""), "\(key) in the ride's device totals")
  }

  /// Average power, normalized power, average and maximum heart rate of the ride against the
  /// device's, and time in zone over the laps against the timer.
  func check(
    _ file: String, averageIncludesZeros: Bool, normalizedPowerWithin: Double? = nil
  ) throws -> Outcome {
    let (ride, outcome) = try ride(file)
    var metrics = TrainingMetrics()
    for point in outcome.points {
      if let watts = point.power { metrics.addPower(watts) }
    }
    let withZeros = try #require(outcome.summary.totals.power.mean)
    #expect(abs((metrics.averagePower ?? 0) - withZeros) < 0.5, "the metrics' average is the builder's")
    // A Garmin averages power with the zeros (coasting) by default; a rider can set it to
    // leave them out ("Data Averaging"), as the Edge 1000's did.
    let average = try #require(averageIncludesZeros ? metrics.averagePower : metrics.averagePowerWithoutZeros)
    let deviceAverage = try total(ride, "avg_power")
    print("\(file): avg power \(average) W vs device \(deviceAverage) W (zeros \(averageIncludesZeros ? "in" : "out"))")
    #expect(abs(average / deviceAverage - 1) < 0.01)
    if let within = normalizedPowerWithin {
      let np = try #require(metrics.normalizedPower)
      let deviceNP = try total(ride, "normalized_power")
      print("\(file): NP \(np) W vs device \(deviceNP) W")
      #expect(abs(np / deviceNP - 1) < within)
      // The live figure (status) is the same as the one derived from the stored points.
      let live = try #require(outcome.lastRunningStatus?.normalizedPower)
      #expect(abs(live - np) / np < 0.005, "live NP \(live) W, from the points \(np) W")
    }
    let heartRate = outcome.summary.totals.heartRate
    let averageHR = try #require(heartRate.mean)
    let maxHR = try #require(heartRate.maximum)
    print(
      "\(file): HR avg \(averageHR) max \(maxHR) vs device \(ride.deviceTotals["avg_heart_rate"] ?? "?")/\(ride.deviceTotals["max_heart_rate"] ?? "?")"
    )
    #expect(abs(averageHR - (try total(ride, "avg_heart_rate"))) <= 1)
    #expect(abs(maxHR - (try total(ride, "max_heart_rate"))) <= 1)

    // Time in zone over the laps sums to the timer time, to the second, for power (a sample
    // every second); heart rate loses only the seconds the strap was silent.
    let timer = outcome.summary.totals.timer
    let lapZones = outcome.laps.compactMap(\.zoneTimes)
    #expect(lapZones.count == outcome.laps.count && !outcome.laps.isEmpty)
    let powerInZones = lapZones.map { $0[1].total }.reduce(0, +)
    let heartRateInZones = lapZones.map { $0[0].total }.reduce(0, +)
    print("\(file): timer \(timer) s, power in zones \(powerInZones) s, HR in zones \(heartRateInZones) s")
    #expect(abs(powerInZones - timer) <= 1)
    #expect(heartRateInZones <= timer + 1 && heartRateInZones > timer * 0.98)
    let workoutZones = try #require(outcome.lastRunningStatus?.zones)
    #expect(workoutZones.count == 2)
    return outcome
  }

  /// DC Rainmaker's Garmin Vector review ride: an Edge 810 with Vector pedals (session: avg
  /// power 276 W, NP 301 W, HR 154 / 176 bpm).
  @Test func theEdge810RideWithVectorPedalsMatchesTheDevicesPowerAndHeartRate() throws {
    _ = try check("garmin-edge-810-2013-08-16.csv", averageIncludesZeros: true, normalizedPowerWithin: 0.02)
  }

  /// An Edge 1000 ride exported by Garmin Connect as TCX (lap extension: avg power 259 W, HR
  /// 127 / 178 bpm); TCX carries no normalized power. Its 259 W is the average without zeros
  /// (805 of its 4,792 seconds are 0 W; with them the average is 215 W).
  @Test func theEdge1000RideMatchesTheDevicesPowerAndHeartRate() throws {
    _ = try check("garmin-edge-1000-2017-08-14.csv", averageIncludesZeros: false)
  }

  @Test func aRideFileFromBeforeThePowerColumnStillReads() throws {
    let path = NSTemporaryDirectory() + "nine-\(getpid()).csv"
    defer { unlink(path) }
    try """
    # start: 2020-01-01T00:00:00Z
    t,kind,lat,lon,alt,speed,hr,cadence,temperature
    0,press,start
    0,rec,46.0,14.5,300,10,120,80,20
    """.write(toFile: path, atomically: true, encoding: .utf8)
    let ride = try ReplayRide.load(path: path)
    #expect(!ride.header.hasPowerColumn)
    #expect(ride.records.first?.heartRate == 120 && ride.records.first?.power == nil)
  }

  @Test func thePowerColumnIsReadAndInterpolatedThroughGaps() throws {
    let path = NSTemporaryDirectory() + "power-\(getpid()).csv"
    defer { unlink(path) }
    try """
    # start: 2020-01-01T00:00:00Z
    t,kind,lat,lon,alt,speed,hr,cadence,temperature,power
    0,press,start
    0,rec,46.0,14.5,300,10,120,80,20,200
    4,rec,46.00036,14.5,304,10,140,80,20,240
    5,press,stop
    """.write(toFile: path, atomically: true, encoding: .utf8)
    let ride = try ReplayRide.load(path: path)
    #expect(ride.header.hasPowerColumn)
    var schedule = ReplaySchedule(ride: ride, countdown: 3)
    var watts: [Double: Int] = [:]
    while let step = schedule.next() {
      for input in step.inputs {
        if case .reading(.power(let w)) = input { watts[step.time] = w }
      }
    }
    #expect(watts[0] == 200 && watts[2] == 220 && watts[4] == 240, "\(watts)")
  }

  @Test func aMalformedPowerFieldNamesTheRow() throws {
    for (row, problem) in [
      ("0,rec,46.0,14.5,300,10,120,80,20,9000", "power \"9000\" is not a number in 0.0...3000.0"),
      ("0,rec,46.0,14.5,300,10,120,80,20", "a rec row has 10 fields, this one has 9"),
      ("0,rec,46.0,14.5,300,10,120,80,20,-5", "power \"-5\" is not a number"),
    ] {
      let path = NSTemporaryDirectory() + "bad-power-\(getpid()).csv"
      defer { unlink(path) }
      try "# start: 2020-01-01T00:00:00Z\n\(ReplayRide.columnHeader)\n\(row)\n".write(
        toFile: path, atomically: true, encoding: .utf8)
      #expect {
        try ReplayRide.load(path: path)
      } throws: { error in
        "\(error)".contains(":3: \(problem)")
      }
    }
  }
}
