import Foundation
import SensorProtocols
import WorkoutCore

/// The gpsd captures copied into Tests/Fixtures/gpsd (see its MANIFEST.md), and helpers to run
/// their `.chk` TPVs through the same pipeline the board uses.
enum GPSDCaptures {
  static let directory: String = {
    // #filePath: <repo>/Tests/SensorProtocolsTests/GPSDTestSupport.swift
    var url = URL(fileURLWithPath: #filePath)
    url.deleteLastPathComponent()
    url.deleteLastPathComponent()
    return url.appendingPathComponent("Fixtures/gpsd").path
  }()

  static let names = [
    "april6_2019", "bt451", "bu353-glonass", "bundg_zeus_9", "com-1289", "furuno_gl_ga",
    "garmin25lp", "gp-320fw-2019-04-06-overflow", "haicom-305N", "holux-gm-210", "humminbird-M37",
    "iTrek", "magellan-ec10", "quectel-eg25-g", "triton400", "unicore-um621",
  ]

  static func lines(_ file: String) throws -> [Substring] {
    let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
    // Character-wise, "\r\n" is one newline Character: split on any newline.
    return text.split(whereSeparator: \.isNewline)
  }

  /// Every TPV of a capture's `.chk`, in order, decoded as libgps would.
  static func chkTPVs(_ name: String) throws -> [TPVSnapshot] {
    try lines(name + ".log.chk").compactMap { line in
      line.hasPrefix("{\"class\":\"TPV\"") ? GPSDJSON.tpv(from: line) : nil
    }
  }

  /// UTC seconds of an ISO time, for writing expectations.
  static func time(_ iso: String) -> Double {
    GPSDJSON.parseTime(iso)!.secondsSince1970
  }
}

/// One TPV through mapping and the quality filter, as GPSDSource does it.
struct GPSDPipelineStep {
  var snapshot: TPVSnapshot
  var report: GPSDReport
  var verdict: FixVerdict?
  /// The receiver's time if the report had one, whatever its mode: used only as the replay's
  /// clock (reports are replayed faster than real time), never as a fix's time.
  var replayTime: Double?

  var accepted: GPSFix? { verdict?.fix }
}

func gpsdPipeline(_ snapshots: [TPVSnapshot], quality: FixQualitySettings) -> [GPSDPipelineStep] {
  var filter = FixQualityFilter(settings: quality)
  return snapshots.map { snapshot in
    let report = GPSDMapping.report(from: snapshot)
    var verdict: FixVerdict?
    if case .fix(let fix) = report { verdict = filter.evaluate(fix) }
    return GPSDPipelineStep(
      snapshot: snapshot, report: report, verdict: verdict, replayTime: snapshot.time?.secondsSince1970)
  }
}

/// Great-circle length of a path.
func gpsdPathLength(_ points: [GeoPoint]) -> Double {
  zip(points, points.dropFirst()).reduce(0) { $0 + $1.0.distance(to: $1.1) }
}

/// The board's monotonic clock during a replay: fixes arrive as the receiver emits them, so it
/// advances by the receiver's time step when that is a plausible step forward (0–30 s), and by
/// the receiver's 1 s period otherwise (a receiver time that steps back or jumps ahead does not
/// stop the board's clock).
struct GPSDReplayMonotonic {
  private(set) var now = 1_000.0
  private var lastReceiverTime: Double?

  mutating func arrival(of fix: GPSFix) -> Double {
    defer { if let t = fix.time { lastReceiverTime = t } }
    if let t = fix.time, let last = lastReceiverTime, t - last >= 0, t - last <= 30 {
      now += t - last
    } else {
      now += 1
    }
    return now
  }
}
