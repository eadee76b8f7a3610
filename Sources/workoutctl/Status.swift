import ArgumentParser
import Foundation
import WorkoutControl
import WorkoutCore
import WorkoutUpload

struct Status: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Show the live session: state, timer, distance, heart rate.")
  @OptionGroup var locations: Locations
  @Flag(help: "Print JSON.") var json = false
  @Flag(help: "Print one line (for progress displays).") var brief = false

  func run() throws {
    let reply = try send(.status, to: locations)
    guard let status = reply.status else { throw fail("the service sent no status: \(reply.message ?? "")") }
    if json {
      print(try ControlJSON.encode(status))
      return
    }
    if brief {
      var fields = [status.sessionID.map { "session \($0)" } ?? "no session", status.state.rawValue]
      if status.sessionID != nil {
        fields += [Format.duration(status.timer), Format.distance(status.distance)]
        if let speed = status.speed { fields.append(Format.speed(speed)) }
        if let hr = status.heartRate { fields.append("\(hr) bpm") }
        fields.append("\(status.points) points")
      }
      if let battery = status.battery, let level = battery.level {
        fields.append(
          "battery \(BatteryWatch.percent(level))\(battery.alert == .normal ? "" : " " + battery.alert.rawValue.uppercased())"
        )
      }
      if let incident = status.incident { fields.append(IncidentText.brief(incident)) }
      if status.storage.failing { fields.append("STORAGE FAILING") }
      if let unreadable = status.unreadable, !unreadable.isEmpty { fields.append("DAMAGED RECORD") }
      if let uploads = status.uploads, uploads.failed > 0 { fields.append("UPLOAD FAILED") }
      print(fields.joined(separator: "  "))
      return
    }
    var lines: [String] = []
    // The alarm first: whoever reads this may be the one to answer it.
    if let incident = status.incident { lines.append(IncidentText.line(incident)) }
    if let id = status.sessionID {
      var head = "session \(id) \(status.state.rawValue)"
      if status.pausedBySystem { head += " (auto-paused)" }
      if let activity = status.activity { head += ", \(activity.rawValue)" }
      if let number = status.activityNumber { head += " (activity \(number))" }
      if let lap = status.lap { head += ", lap \(lap)" }
      if let remaining = status.countdownRemaining {
        head += ", starting in \(wholeNumberText(remaining.rounded(.up))) s"
      }
      lines.append(head)
      lines.append("timer \(Format.duration(status.timer)), elapsed \(Format.duration(status.elapsed))")
      if let timer = status.activityTimer, let distance = status.activityDistance {
        lines.append("this activity: timer \(Format.duration(timer)), distance \(Format.distance(distance))")
      }
      var movement = "distance \(Format.distance(status.distance))"
      if let pace = status.pace {
        movement += ", pace \(Format.pace(pace))"
      } else if let speed = status.speed {
        movement += ", speed \(Format.speed(speed))"
      }
      if let average = status.averageSpeed {
        movement += " (avg \(Format.speed(average))" + (status.maxSpeed.map { ", max \(Format.speed($0)))" } ?? ")")
      }
      lines.append(movement)
      if status.ascent > 0 || status.descent > 0 || status.altitude != nil {
        lines.append(
          "ascent \(wholeNumberText(status.ascent)) m, descent \(wholeNumberText(status.descent)) m"
            + (status.altitude.map { ", altitude \(wholeNumberText($0)) m" } ?? ""))
      }
      if let pressure = status.pressure {
        lines.append(
          "barometer \(String(format: "%.1f", pressure / 100)) hPa"
            + (status.humidity.map { ", humidity \(wholeNumberText($0)) %" } ?? ""))
      }
      if status.heartRate != nil || status.averageHeartRate != nil {
        lines.append(
          "heart rate \(status.heartRate.map { "\($0) bpm" } ?? "--")"
            + (status.averageHeartRate.map {
              " (avg \(wholeNumberText($0)), max \(wholeNumberText(status.maxHeartRate ?? $0)))"
            } ?? ""))
      }
      // A quantity with no reading yet (power zones configured, no power meter) has no line.
      for zone in status.zones ?? [] where zone.zone != nil || zone.seconds.contains(where: { $0 > 0 }) {
        let name = zone.quantity == .heartRate ? "heart-rate" : "power"
        let times = zone.seconds.enumerated().map { "Z\($0.offset + 1) \(Format.duration($0.element))" }
        lines.append(
          "\(name) zone \(zone.zone.map(String.init) ?? "--") of \(zone.zoneCount): " + times.joined(separator: ", "))
      }
      for target in status.targetZones ?? [] {
        let name = target.quantity == .heartRate ? "heart-rate" : "power"
        let where_ = target.outside.map { $0 ? "OUTSIDE" : "inside" } ?? "not known yet"
        lines.append("target: \(name) zones \(target.text) (\(where_))")
      }
      if let average = status.averagePower {
        lines.append(
          "power avg \(wholeNumberText(average)) W"
            + (status.normalizedPower.map { ", NP \(wholeNumberText($0)) W" } ?? "")
            + (status.intensityFactor.map { String(format: ", IF %.2f", $0) } ?? ""))
      } else if let np = status.normalizedPower {
        lines.append(
          "NP \(wholeNumberText(np)) W" + (status.intensityFactor.map { String(format: ", IF %.2f", $0) } ?? ""))
      }
      lines.append("points \(status.points)" + (status.lastPointTime.map { ", last at \(Format.date($0))" } ?? ""))
      if let unreadable = status.unreadable, !unreadable.isEmpty {
        lines.append("DAMAGED RECORD: \(unreadable.description) unreadable at resume, left out of the ride")
      }
    } else {
      lines.append("no session yet (\(status.state.rawValue))")
    }
    lines.append("GPS: \(Format.gps(status.gps, detail: status.gpsDetail)); LED \(status.indicator.rawValue)")
    lines.append(BatteryText.line(status.battery))
    lines.append(
      "board \(status.board)"
        + (status.devices.isEmpty
          ? ""
          : "; "
            + status.devices.sorted { $0.key < $1.key }.map { "\($0.key) \(TerminalText.escaped($0.value))" }.joined(
              separator: "; ")))
    lines.append(
      "storage \(status.storage.failing ? "FAILING (\(status.storage.lastError ?? "?"), \(status.storage.pendingWrites) writes held in memory)" : "ok"): \(status.storage.database)"
    )
    if let uploads = status.uploads, !uploads.isEmpty { lines.append(Self.uploadsLine(uploads)) }
    print(lines.joined(separator: "\n"))
  }

  /// "uploads: 2 pending, 1 FAILED (session 12 to strava: 401 …)": the failed job changed last.
  static func uploadsLine(_ uploads: UploadCounts) -> String {
    var parts: [String] = []
    if uploads.pending > 0 { parts.append("\(uploads.pending) pending") }
    if uploads.failed > 0 {
      let last = uploads.lastFailure.map {
        " (session \($0.sessionID) to \($0.target.rawValue): \(TerminalText.escaped(($0.reason ?? "no reason kept").prefix(120))))"
      }
      parts.append("\(uploads.failed) FAILED\(last ?? "")")
    }
    return "uploads: " + parts.joined(separator: ", ")
  }
}
