import Foundation
import WorkoutCore

enum Format {
  /// The GPS's condition in a rider's words, with the service's reason.
  static func gps(_ condition: GPSCondition, detail: String?) -> String {
    let words =
      switch condition {
      case .none: "none reported"
      case .noGPSD: "NO GPSD"
      case .noReceiver: "NO RECEIVER (gpsd is up)"
      case .searching: "searching for a fix"
      case .rejecting: "FIXES REFUSED"
      case .fix: "fix"
      }
    guard let detail, condition != .fix, condition != .searching, condition != .none else { return words }
    return "\(words): \(detail)"
  }

  /// h:mm:ss; a time no `Int` holds (another build's status, a damaged record) as it is.
  static func duration(_ seconds: Double) -> String {
    guard convertsToInt(seconds) else { return "\(seconds) s" }
    let total = Int(seconds.rounded())
    return String(format: "%d:%02d:%02d", total / 3600, (total % 3600) / 60, total % 60)
  }

  static func distance(_ metres: Double) -> String { decimal(metres / 1000, places: 2) + " km" }
  static func speed(_ metresPerSecond: Double) -> String { decimal(metresPerSecond * 3.6, places: 1) + " km/h" }

  /// `value` with `places` decimals; one past 1e15 (a damaged record's) as Swift writes it,
  /// not as the 300 digits `%f` would print.
  static func decimal(_ value: Double, places: Int) -> String {
    convertsToInt(value) ? String(format: "%.\(places)f", value) : "\(value)"
  }

  static func pace(_ secondsPerKm: Double) -> String {
    guard convertsToInt(secondsPerKm) else { return "\(secondsPerKm) s/km" }
    let total = Int(secondsPerKm.rounded())
    return String(format: "%d:%02d /km", total / 60, total % 60)
  }

  static func date(_ wall: Double) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyy-MM-dd HH:mm:ss'Z'"
    return formatter.string(from: Date(timeIntervalSince1970: wall))
  }

  static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let padding = String(repeating: " ", count: max(0, width - text.count))
    return right ? padding + text : text + padding
  }
}
