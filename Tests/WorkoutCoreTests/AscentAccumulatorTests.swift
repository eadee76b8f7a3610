import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutCore

@Suite("Ascent and descent: behaviour")
struct AscentAccumulatorTests {
  /// No smoothing: the swing logic alone, exactly.
  static let raw = AscentAccumulator.Configuration(timeConstant: 0, threshold: 2)

  static func run(
    _ altitudes: [Double], every dt: Double = 1,
    configuration: AscentAccumulator.Configuration = raw
  ) -> AscentAccumulator {
    var a = AscentAccumulator(configuration: configuration)
    for (i, h) in altitudes.enumerated() { a.add(altitude: h, at: Double(i) * dt) }
    return a
  }

  @Test func swingsBelowTheThresholdDoNotCount() {
    let a = Self.run([0, 1.9, 0, 1.9, 0.1, 1.99, 0])
    #expect(a.totalAscent == 0)
    #expect(a.totalDescent == 0)
  }

  @Test func aSwingCountsInFullFromTurningPointToTurningPoint() {
    // Up 3, down 3, ten times: plain 2 m hysteresis would count 2 of every 3 m (20 m); the
    // swing threshold counts all 30.
    var heights: [Double] = [0]
    for _ in 0..<10 { heights += [1, 2, 3, 2, 1, 0] }
    let a = Self.run(heights)
    #expect(a.totalAscent == 30)
    #expect(a.totalDescent == 30)
  }

  @Test func theClimbInProgressCountsOnceItPassesTheThreshold() {
    var a = AscentAccumulator(configuration: Self.raw)
    a.add(altitude: 100, at: 0)
    a.add(altitude: 101.5, at: 1)
    #expect(a.totalAscent == 0)
    a.add(altitude: 102, at: 2)
    #expect(a.totalAscent == 2)
    a.add(altitude: 107, at: 3)
    #expect(a.totalAscent == 7)
    a.add(altitude: 105.5, at: 4)  // a dip smaller than the threshold: still climbing
    #expect(a.totalAscent == 7)
    a.add(altitude: 110, at: 5)
    #expect(a.totalAscent == 10)
    a.add(altitude: 108, at: 6)  // turned: the climb is committed, the descent begins
    #expect(a.totalAscent == 10)
    #expect(a.totalDescent == 2)
  }

  @Test func descentFirst() {
    let a = Self.run([50, 49, 48, 45, 46, 47, 48])
    #expect(a.totalDescent == 5)
    #expect(a.totalAscent == 3)
  }

  @Test func totalsNeverDecrease() {
    var rng = SeededRandom(seed: 7)
    var a = AscentAccumulator()
    var h = 200.0
    var lastUp = 0.0
    var lastDown = 0.0
    var regressions = 0
    for i in 0..<20_000 {
      h += rng.gaussian()
      a.add(altitude: h, at: Double(i))
      if a.totalAscent < lastUp || a.totalDescent < lastDown { regressions += 1 }
      lastUp = a.totalAscent
      lastDown = a.totalDescent
    }
    #expect(regressions == 0)
    #expect(lastUp > 0 && lastDown > 0)
  }

  /// An hour standing still with a noisy 1 Hz altimeter (0.5 m RMS white noise, more than a
  /// BMP280 at the logger's settings): the raw sum of rises is hundreds of metres; the
  /// accumulator must report next to nothing.
  @Test func noiseAloneIsNotAscent() {
    var rng = SeededRandom(seed: 2024)
    var a = AscentAccumulator()
    var naive = 0.0
    var previous: Double? = nil
    for i in 0..<3600 {
      let h = 150 + 0.5 * rng.gaussian()
      if let p = previous, h > p { naive += h - p }
      previous = h
      a.add(altitude: h, at: Double(i))
    }
    #expect(naive > 500)
    #expect(a.totalAscent < 2.5, "\(a.totalAscent) m from noise")
    #expect(a.totalDescent < 2.5)
  }

  /// A real hill under noise: 120 m up at 0.4 m/s, 120 m down at 1 m/s, with 0.5 m noise.
  @Test func aHillUnderNoise() {
    var rng = SeededRandom(seed: 99)
    var a = AscentAccumulator()
    var t = 0.0
    func feed(_ h: Double) {
      a.add(altitude: h + 0.5 * rng.gaussian(), at: t)
      t += 1
    }
    for _ in 0..<60 { feed(50) }
    for i in 0..<300 { feed(50 + 0.4 * Double(i)) }
    for i in 0..<120 { feed(170 - Double(i)) }
    for _ in 0..<60 { feed(50) }
    #expect(abs(a.totalAscent - 120) < 3, "\(a.totalAscent)")
    #expect(abs(a.totalDescent - 120) < 3, "\(a.totalDescent)")
  }

  /// The filter's parameter is time, so the sample rate does not matter: the same smooth
  /// profile sampled at 1 Hz, 25 Hz (a BMP280 in normal mode) and irregularly gives the same
  /// totals.
  @Test func sampleRateIndependence() {
    func profile(_ t: Double) -> Double { 100 + 15 * sin(t / 90) + 4 * sin(t / 17) }
    func run(_ times: [Double]) -> AscentAccumulator {
      var a = AscentAccumulator()
      for t in times { a.add(altitude: profile(t), at: t) }
      return a
    }
    let oneHz = run(Array(stride(from: 0.0, through: 3000, by: 1)))
    let fast = run(Array(stride(from: 0.0, through: 3000, by: 0.04)))
    var rng = SeededRandom(seed: 5)
    var irregular: [Double] = [0]
    while irregular.last! < 3000 {
      irregular.append(irregular.last! + Double.random(in: 0.5...6, using: &rng))
    }
    let smart = run(irregular)
    #expect(oneHz.totalAscent > 100)
    #expect(abs(fast.totalAscent - oneHz.totalAscent) < 0.5)
    #expect(abs(smart.totalAscent - oneHz.totalAscent) < 2)
    #expect(abs(fast.totalDescent - oneHz.totalDescent) < 0.5)
  }

  @Test func gaps() {
    // Auto-paused for 20 minutes at the same place: nothing.
    var a = AscentAccumulator()
    for i in 0..<30 { a.add(altitude: 80, at: Double(i)) }
    for i in 0..<30 { a.add(altitude: 80, at: 1230 + Double(i)) }
    #expect(a.totalAscent == 0)
    // Recording resumed 10 m higher (the rider walked up while nothing was recorded): the
    // filter takes the new height at once and the change counts.
    for i in 0..<30 { a.add(altitude: 90, at: 3000 + Double(i)) }
    #expect(abs(a.totalAscent - 10) < 1e-6)
  }

  @Test func samplesItCannotUse() {
    var a = AscentAccumulator(configuration: Self.raw)
    // (mutating calls cannot go inside #expect)
    let used = [
      a.add(altitude: 10, at: 5),
      a.add(altitude: .nan, at: 6),
      a.add(altitude: 30, at: .infinity),
      a.add(altitude: 30, at: 4),  // earlier than the last sample
      a.add(altitude: 30, at: 5),  // same time
    ]
    #expect(used == [true, false, false, false, false])
    #expect(a.totalAscent == 0)
    #expect(a.smoothedAltitude == 10)
    let next = a.add(altitude: 13, at: 6)
    #expect(next)
    #expect(a.totalAscent == 3)
  }

  /// A receiver's altitude spike: 1 Hz GPS at 300 m, one second 500 m up (or down, or a
  /// spike of 120 m, beyond the 70 m a second allows at τ = 4 s). Without the gate the
  /// filter's fifth of it counted both ways.
  @Test(arguments: [800.0, -200, 420, 180])
  func aSpikeNoRiderCouldMakeIsLeftOut(spike: Double) {
    var a = AscentAccumulator()
    var used: [Bool] = []
    for i in 0..<60 { used.append(a.add(altitude: i == 30 ? spike : 300, at: Double(i))) }
    #expect(used.filter { !$0 }.count == 1 && !used[30])
    #expect(a.totalAscent == 0 && a.totalDescent == 0, "\(a.totalAscent) m up, \(a.totalDescent) m down")
    #expect(a.smoothedAltitude == 300 && a.lastTime == 59)
  }

  /// Spikes inside the reach still pass through the filter as before: the gate is for jumps
  /// no rider makes, not for noise (a 50 m spike of one second: about 11 m each way).
  @Test func aSpikeWithinReachIsSmoothedNotGated() {
    var a = AscentAccumulator()
    var used: [Bool] = []
    for i in 0..<60 { used.append(a.add(altitude: i == 30 ? 350 : 300, at: Double(i))) }
    #expect(!used.contains(false))
    #expect(a.totalAscent > 10 && a.totalAscent < 12, "\(a.totalAscent)")
  }

  /// The steepest real profiles pass whole: a climb and a descent at 9 m/s (beyond any rider)
  /// at 1 Hz and at a barometer's 25 Hz, with noise, give the same totals as without the gate.
  @Test(arguments: [1.0, 0.04])
  func theSteepestRealProfilesPass(every dt: Double) {
    var rng = SeededRandom(seed: 3)
    var a = AscentAccumulator()
    var t = 0.0
    var rejected = 0
    func feed(_ h: Double) {
      if !a.add(altitude: h + 2 * rng.gaussian(), at: t) { rejected += 1 }
      t += dt
    }
    let steps = Int(60 / dt)
    for _ in 0..<steps { feed(100) }
    for i in 0..<steps { feed(100 + 9 * Double(i) * dt) }  // 540 m up in a minute
    for _ in 0..<steps { feed(640) }
    for i in 0..<steps { feed(640 - 9 * Double(i) * dt) }
    for _ in 0..<steps { feed(100) }
    #expect(rejected == 0)
    #expect(abs(a.totalAscent - 540) < 10, "\(a.totalAscent)")
    #expect(abs(a.totalDescent - 540) < 10, "\(a.totalDescent)")
  }

  /// A real change the gate first refuses is taken once the time since could explain it:
  /// after a tunnel (no fix for 90 s, 250 m lower at its end) at once; a receiver that
  /// re-acquires 200 m off with no gap, within 20 s. Either is counted like any change.
  @Test func aRealChangeIsTakenOnceTheTimeExplainsIt() {
    var tunnel = AscentAccumulator()
    for i in 0..<30 { tunnel.add(altitude: 900, at: Double(i)) }
    var taken = 0
    for i in 120..<150 where tunnel.add(altitude: 650, at: Double(i)) { taken += 1 }
    #expect(taken == 30)
    #expect(abs(tunnel.totalDescent - 250) < 1e-6, "\(tunnel.totalDescent)")

    var shifted = AscentAccumulator()
    var refused = 0
    for i in 0..<30 { shifted.add(altitude: 300, at: Double(i)) }
    for i in 30..<90 where !shifted.add(altitude: 500, at: Double(i)) { refused += 1 }
    #expect(refused > 0 && refused <= 20, "\(refused)")
    #expect(abs((shifted.smoothedAltitude ?? 0) - 500) < 1e-3)
    #expect(abs(shifted.totalAscent - 200) < 1e-3, "\(shifted.totalAscent)")
  }

  @Test func shiftingTheReferenceCountsNothing() {
    var a = AscentAccumulator(configuration: Self.raw)
    for (i, h) in [100.0, 103, 106].enumerated() { a.add(altitude: h, at: Double(i)) }
    #expect(a.totalAscent == 6)
    // The barometer is re-referenced (a new sea-level pressure): every height reads 40 m more.
    a.shift(by: 40)
    #expect(a.smoothedAltitude == 146)
    for (i, h) in [148.0, 150, 146, 143].enumerated() { a.add(altitude: h, at: 3 + Double(i)) }
    #expect(a.totalAscent == 10)
    #expect(a.totalDescent == 7)
  }

  /// The accumulator is saved with the session and restored after a restart: a restored copy
  /// continues exactly as the original.
  @Test func survivesASnapshot() throws {
    var rng = SeededRandom(seed: 11)
    var original = AscentAccumulator()
    var h = 300.0
    var samples: [(Double, Double)] = []
    for i in 0..<4000 {
      h += 0.3 * rng.gaussian() + 0.02 * sin(Double(i) / 200)
      samples.append((Double(i), h))
    }
    for (t, x) in samples[..<2000] { original.add(altitude: x, at: t) }
    let data = try JSONEncoder().encode(original)
    var restored = try JSONDecoder().decode(AscentAccumulator.self, from: data)
    #expect(restored == original)
    for (t, x) in samples[2000...] {
      original.add(altitude: x, at: t)
      restored.add(altitude: x, at: t)
    }
    #expect(restored == original)
    #expect(restored.totalAscent == original.totalAscent)
  }

  @Test func configurationSanitised() {
    let c = AscentAccumulator.Configuration(timeConstant: -1, threshold: .nan)
    #expect(c == AscentAccumulator.Configuration())
    #expect(c.timeConstant == 4 && c.threshold == 2)
  }
}
