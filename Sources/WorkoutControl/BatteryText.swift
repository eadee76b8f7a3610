import WorkoutCore

/// The battery in words, for `workoutctl status`: "battery 62 % discharging, 3 h 10 min left
/// (drain 12 %/h)", "no battery information" on a board without a gauge.
public enum BatteryText {
  public static func line(_ battery: EngineStatus.BatteryStatus?) -> String {
    guard let battery else { return "no battery information" }
    var text = "battery"
    if let level = battery.level { text += " " + BatteryWatch.percent(level) }
    text += " " + words(battery.status)
    if battery.onCharger, battery.status != .charging, battery.status != .full { text += ", on a charger" }
    if let voltage = battery.voltage, battery.level == nil { text += ", " + decimal(voltage, 2) + " V" }
    if let left = battery.timeLeft { text += ", \(formatSeconds(left)) left" }
    if let drain = battery.drainPerHour, !battery.onCharger { text += " (drain \(decimal(drain, 1)) %/h)" }
    switch battery.alert {
    case .normal: break
    case .low: text += "; LOW"
    case .critical:
      if let remaining = battery.countdownRemaining {
        text +=
          "; CRITICAL: the ride is saved and ended, and the board powered off, in \(formatSeconds(remaining.rounded(.up))) unless a charger is plugged in"
      } else {
        text += "; CRITICAL"
      }
    }
    return text
  }

  static func words(_ status: BatteryReading.Status) -> String {
    switch status {
    case .charging: "charging"
    case .discharging: "discharging"
    case .notCharging: "not charging"
    case .full: "full"
    case .unknown: "(status unknown)"
    }
  }

  /// `value` with `places` decimals, without Foundation.
  static func decimal(_ value: Double, _ places: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<places { scale *= 10 }
    let scaled = (value * scale).rounded()
    guard abs(scaled) < 1e15 else { return "\(value)" }
    let whole = Int(scaled)
    let sign = whole < 0 ? "-" : ""
    let digits = String(abs(whole))
    guard places > 0 else { return sign + digits }
    let padded = String(repeating: "0", count: max(0, places + 1 - digits.count)) + digits
    return sign + padded.dropLast(places) + "." + padded.suffix(places)
  }
}
