import Testing
import WorkoutCore

/// Calories: 1 kcal a kJ of work with power, Keytel et al.'s equation from heart rate without;
/// the rider's profile as a workout records it.
struct EnergyExpenditureTests {
  let rider = RiderProfile(age: 40, weight: 75, sex: .male, restingHeartRate: 50, maxHeartRate: 185)

  @Test func keytelsEquationForEachSex() throws {
    // Keytel 2005, without VO2max: male -55.0969 + 0.6309 HR + 0.1988 W + 0.2017 A (kJ/min).
    let male = try #require(rider.heartRateKilocaloriesPerSecond(150))
    #expect(abs(male * 60 * 4.184 - (-55.0969 + 0.6309 * 150 + 0.1988 * 75 + 0.2017 * 40)) < 1e-9)
    var female = rider
    female.sex = .female
    let her = try #require(female.heartRateKilocaloriesPerSecond(150))
    #expect(abs(her * 60 * 4.184 - (-20.4022 + 0.4472 * 150 - 0.1263 * 75 + 0.074 * 40)) < 1e-9)
    // Near rest the equation goes below zero: no energy, never a negative one.
    #expect(rider.heartRateKilocaloriesPerSecond(40) == 0)
    // Without what it needs, none.
    #expect(RiderProfile(age: 40, weight: 75).heartRateKilocaloriesPerSecond(150) == nil)
  }

  @Test func powerComesFirstThenHeartRate() throws {
    var withPower = EnergyTally()
    var heartOnly = EnergyTally()
    for _ in 0..<3600 {
      withPower.add(TrainingSample(timer: 0, heartRate: 150, power: 200), rider: rider)
      heartOnly.add(TrainingSample(timer: 0, heartRate: 150, power: nil), rider: rider)
    }
    #expect(try #require(withPower.kilocalories) == 720, "200 W for an hour: 720 kJ, 720 kcal")
    let perHour = try #require(rider.heartRateKilocaloriesPerSecond(150)) * 3600
    #expect(abs(try #require(heartOnly.kilocalories) - perHour) < 1e-6)
    #expect(abs(perHour - 896.6) < 0.1, "\(perHour)")
    var nothing = EnergyTally()
    nothing.add(TrainingSample(timer: 0, heartRate: 150, power: nil), rider: nil)
    #expect(nothing.kilocalories == nil, "heart rate without the rider's age, weight and sex")
  }

  @Test func theProfileRoundTripsThroughItsEvent() {
    #expect(rider.eventDetail == "age=40 weight=75 sex=male resting=50 max=185")
    #expect(RiderProfile(eventDetail: rider.eventDetail) == rider)
    // A newer release's words are skipped; a bad number is no figure.
    #expect(RiderProfile(eventDetail: "age=40 vo2max=55 weight=x sex=other") == RiderProfile(age: 40))
    #expect(RiderProfile().isEmpty && RiderProfile().eventDetail.isEmpty)
  }

  @Test func theAnalyzerGivesEachLapItsFigures() throws {
    // Two laps: 600 s at 100 W, 600 s at 300 W; a point at a lap's end is that lap's.
    var analyzer = SessionAnalyzer(zones: [], lapEnds: [600, 1200], endTimer: 1200, ftp: 250, rider: rider)
    for second in 1...1200 {
      analyzer.add(TrainingSample(timer: Double(second), heartRate: 140, power: second <= 600 ? 100 : 300))
    }
    let result = analyzer.finish()
    #expect(result.laps.count == 2)
    #expect(result.laps.map(\.work) == [60_000, 180_000])
    #expect(result.laps.map(\.normalizedPower) == [100, 300])
    #expect(result.whole.work == 240_000 && result.whole.kilocalories == 240)
    #expect(result.laps[1].intensityFactor == 1.2)
    let tss = try #require(result.whole.trainingStressScore)
    #expect(abs(tss - 1200 * result.whole.normalizedPower! * result.whole.intensityFactor! / (250 * 3600) * 100) < 1e-9)
  }
}
