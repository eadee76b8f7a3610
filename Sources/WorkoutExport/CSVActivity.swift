import Foundation
import WorkoutCore
import WorkoutStore

/// A session's points as CSV (RFC 4180: comma-separated, CRLF line ends, a header row): one
/// row per stored point, every channel in its own column with its unit in the column's name,
/// an empty field where a channel had no value that second (a gap stays a gap). Numbers are
/// written with a fixed number of decimals and '.' whatever the locale, so the same session
/// always gives the same bytes. The columns (`CSVActivityWriter.columns`):
///
/// - `time_utc`: ISO 8601 UTC with milliseconds; `elapsed_s` since the start, pauses included;
///   `timer_s`, pauses left out; `distance_m`, cumulative.
/// - `latitude_deg`, `longitude_deg` (WGS 84), `gps_altitude_m` (3D fixes), `fix` ("2d", "3d"
///   or empty), `horizontal_error_m`; `speed_m_s` from GPS and `wheel_speed_m_s` from a wheel
///   sensor, both when both exist.
/// - `baro_altitude_m`, `pressure_pa`, `temperature_c`, `humidity_pct` from the barometer.
/// - `heart_rate_bpm`, `rr_intervals_ms` (every beat-to-beat interval that arrived in that
///   second, ';'-separated, oldest first), `cadence_rpm`, `power_w`. On foot `cadence_rpm` is
///   strides a minute (a foot pod's, or the inertial sensor's steps).
/// - `vibration_m_s2`, the road's roughness: RMS of the acceleration's magnitude about its
///   1 s mean; `peak_acceleration_m_s2`, the second's largest, gravity in it (inertial sensor).
public struct CSVActivityWriter: ActivityEncoder {
  public static let columns = [
    "time_utc", "elapsed_s", "timer_s", "distance_m", "latitude_deg", "longitude_deg", "gps_altitude_m", "fix",
    "horizontal_error_m", "speed_m_s", "wheel_speed_m_s", "baro_altitude_m", "pressure_pa", "temperature_c",
    "humidity_pct", "heart_rate_bpm", "rr_intervals_ms", "cadence_rpm", "power_w", "vibration_m_s2",
    "peak_acceleration_m_s2",
  ]

  private var rows = 0

  public init(_ session: ExportedSession) {}

  public mutating func begin() -> [UInt8] {
    Array((Self.columns.joined(separator: ",") + "\r\n").utf8)
  }

  public mutating func point(_ exportPoint: ExportPoint) -> [UInt8] {
    let point = exportPoint.point
    func fixed(_ value: Double?, _ decimals: Int) -> String {
      guard let value, value.isFinite else { return "" }
      return String(format: "%.\(decimals)f", value)
    }
    let fix: String =
      switch point.fixDim {
      case 2: "2d"
      case 3: "3d"
      default: ""
      }
    let intervals = exportPoint.rrIntervals.map { String(format: "%.3f", Double($0) * 1000 / 1024) }
    let fields = [
      ExportTime.iso8601(point.wall, milliseconds: true), fixed(point.elapsed, 3), fixed(point.timer, 3),
      fixed(point.distance, 2), fixed(point.lat, 7), fixed(point.lon, 7),
      fixed(point.fixDim == 3 ? point.altGPS : nil, 2),
      fix, fixed(point.hError, 1), fixed(point.speed, 3), fixed(point.wheelSpeed, 3), fixed(point.altBaro, 2),
      fixed(point.pressure, 1), fixed(point.temperature, 2), fixed(point.humidity, 1), point.hr.map(String.init) ?? "",
      intervals.joined(separator: ";"), fixed(point.cadence, 1), point.power.map(String.init) ?? "",
      fixed(point.vibration, 3), fixed(point.peakAcceleration, 3),
    ]
    rows += 1
    return Array((fields.joined(separator: ",") + "\r\n").utf8)
  }

  public mutating func finish() -> ActivityEncoderEnd {
    ActivityEncoderEnd(tail: [], points: rows)
  }
}
