import Foundation
import Testing

@testable import WorkoutCore

/// Total ascent on real recorded rides, with the one default parameter set.
///
/// Asserted: the two rides whose devices report their own totals and that exist as replay rides
/// (`board/sim/rides/`): Garmin Edge 810 (noisy altitude, recorded every second) and Edge 500
/// (altitude already smoothed by the device). Within 15 % of each device's total_ascent.
/// Reported only: the other corpus recordings with altitude (`Tests/Fixtures/activities/`).
@Suite("Ascent on recorded rides")
struct AscentRideFixtures {
  struct Ride: Sendable, CustomStringConvertible {
    var name: String
    var path: String
    /// The device's own total_ascent / total_descent (FIT session), when it has them.
    var deviceAscent: Double?
    var deviceDescent: Double?
    var description: String { name }
  }

  static let repo = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  static let asserted = [
    Ride(
      name: "Garmin Edge 810 (DC Rainmaker, 2013-08-16)",
      path: "board/sim/rides/garmin-edge-810-2013-08-16.csv", deviceAscent: 514, deviceDescent: 515),
    Ride(
      name: "Garmin Edge 500 (python-fitparse, 2011-09-25)",
      path: "board/sim/rides/garmin-edge-500-2011-09-25.csv", deviceAscent: 541, deviceDescent: 541),
  ]

  static let reported = [
    Ride(
      name: "riderx3.gpx (gpxpy computes 328.9 up / 361.7 down)",
      path: "Tests/Fixtures/activities/riderx3-altitude.csv"),
    Ride(
      name: "Garmin Edge 1000 TCX", path: "Tests/Fixtures/activities/garmin-edge-1000-altitude.csv"),
    Ride(
      name: "Forerunner 410 run TCX (GPS altitude)",
      path: "Tests/Fixtures/activities/forerunner-410-run-altitude.csv"),
    Ride(
      name: "Garmin fenix 5 (60 s)", path: "Tests/Fixtures/activities/garmin-fenix-5-altitude.csv",
      deviceAscent: 0, deviceDescent: 4),
  ]

  /// `(t, alt)` from a replay ride (`t,kind,lat,lon,alt,…`, `rec` rows) or an altitude fixture
  /// (`t,alt`). `#` lines are comments.
  static func altitudes(_ ride: Ride) throws -> [(t: Double, alt: Double)] {
    let text = try String(contentsOf: repo.appendingPathComponent(ride.path), encoding: .utf8)
    var header: [Substring] = []
    var out: [(t: Double, alt: Double)] = []
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
      let fields = line.split(separator: ",", omittingEmptySubsequences: false)
      if header.isEmpty {
        header = fields
        continue
      }
      if let kind = header.firstIndex(of: "kind"), fields[kind] != "rec" { continue }
      guard let ti = header.firstIndex(of: "t"), let ai = header.firstIndex(of: "alt"),
        let t = Double(fields[ti]), let alt = Double(fields[ai])
      else { continue }
      out.append((t, alt))
    }
    return out
  }

  static func accumulate(
    _ samples: [(t: Double, alt: Double)],
    _ configuration: AscentAccumulator.Configuration = .init()
  ) -> AscentAccumulator {
    var a = AscentAccumulator(configuration: configuration)
    for s in samples { a.add(altitude: s.alt, at: s.t) }
    return a
  }

  static func percent(_ value: Double, of reference: Double) -> String {
    String(format: "%+.1f %%", (value / reference - 1) * 100)
  }

  @Test(arguments: asserted)
  func withinFifteenPercentOfTheDevice(ride: Ride) throws {
    let samples = try Self.altitudes(ride)
    #expect(samples.count > 4000)
    let a = Self.accumulate(samples)
    let up = try #require(ride.deviceAscent)
    let down = try #require(ride.deviceDescent)
    print(
      "ascent \(ride.name): \(String(format: "%.1f", a.totalAscent)) m vs device \(Int(up)) m "
        + "(\(Self.percent(a.totalAscent, of: up))); descent "
        + "\(String(format: "%.1f", a.totalDescent)) m vs \(Int(down)) m "
        + "(\(Self.percent(a.totalDescent, of: down))); τ 4 s, threshold 2 m")
    #expect(abs(a.totalAscent / up - 1) <= 0.15)
    #expect(abs(a.totalDescent / down - 1) <= 0.15)
  }

  /// Margin, not a knife edge: the neighbourhood of the defaults (τ 3…5 s, threshold 1.5…2.5 m)
  /// also stays within 15 % on both rides.
  @Test func neighbouringParametersAlsoHold() throws {
    let rides = try Self.asserted.map { ($0, try Self.altitudes($0)) }
    var table: [String] = []
    for tau in [3.0, 4, 5] {
      for threshold in [1.5, 2, 2.5] {
        var row = "τ \(tau) s, threshold \(threshold) m:"
        for (ride, samples) in rides {
          let a = Self.accumulate(samples, .init(timeConstant: tau, threshold: threshold))
          let up = try #require(ride.deviceAscent)
          row += " \(Self.percent(a.totalAscent, of: up))"
          #expect(abs(a.totalAscent / up - 1) <= 0.15, "\(row)")
        }
        table.append(row)
      }
    }
    print("ascent sensitivity (Edge 810, Edge 500):\n  " + table.joined(separator: "\n  "))
  }

  /// Not asserted against a total (these files carry none, or a 60 s one): printed so a reader
  /// sees the defaults generalise. Only sanity is checked.
  @Test(arguments: reported)
  func reportOtherRecordings(ride: Ride) throws {
    let samples = try Self.altitudes(ride)
    #expect(samples.count > 10)
    let a = Self.accumulate(samples)
    var line =
      "ascent \(ride.name): \(String(format: "%.1f", a.totalAscent)) m up, "
      + "\(String(format: "%.1f", a.totalDescent)) m down"
    if let up = ride.deviceAscent, let down = ride.deviceDescent {
      line += " (device: \(Int(up)) up, \(Int(down)) down)"
    }
    print(line)
    let heights = samples.map(\.alt)
    // Ascent minus descent is the net change (to within a threshold at each end), and the
    // ascent never exceeds the naive sum of every rise.
    let net = heights.last! - heights.first!
    #expect(abs(a.totalAscent - a.totalDescent - net) <= 4)
    let naive = zip(heights, heights.dropFirst()).reduce(0.0) { $0 + max(0, $1.1 - $1.0) }
    #expect(a.totalAscent <= naive)
  }
}
