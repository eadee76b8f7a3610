import WorkoutCore

extension EngineHarness {
  /// The engine's commands of a 12-hour ride: riding at 8 m/s with heart rate and power
  /// (43,200 points), standing 20 s after every 10 minutes (auto-pauses), a lap every
  /// kilometre, and 500 notes of 280 characters (the most a session takes). The downloads'
  /// test and bench (`ride-bench`) store it as the service's store would.
  public static func twelveHourRide() -> [EngineCommand] {
    var settings = EngineSettings(countdown: 0)
    settings.autoLap = .distance(metres: 1000)
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 45.5, longitude: 7.25)
    var notes = 0
    let text = String(repeating: "🚴 <flat> \"tyre\" ", count: 18).prefix(280)
    while h.points.count < 43_200 {
      h.ride(seconds: 600, speed: 8, heartRate: 140, from: &position) { second, fix in
        fix.speed = 8 + Double(second % 7) / 10
      }
      h.ride(seconds: 20, speed: 0, heartRate: 100, from: &position)
      for _ in 0..<6 where notes < 500 {
        notes += 1
        h.commands.append(
          .recordEvent(
            sessionID: 1,
            SessionEvent(
              kind: .annotation, moment: h.now, cause: "note", detail: String("\(notes) \(text)".prefix(280)),
              value: nil)))
      }
    }
    _ = h.press(.stop)
    return h.commands
  }
}
