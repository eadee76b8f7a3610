import Foundation
import WorkoutCore

/// The incident alarm (a fall while riding) in words: `workoutctl status`'s line while it is on,
/// and `workoutctl show`'s lines for its events.
public enum IncidentText {
  /// How the alarm stops, as the buttons and the control command do (`SessionEngine.riderIsFine`).
  public static let howToStop = "workoutctl fine or any button stops it"

  /// "INCIDENT: a fall suspected, impact 4.2 g, the board turned 82°; confirmed in 23 s
  /// unless answered (workoutctl fine or any button stops it)".
  public static func line(_ incident: IncidentStatus) -> String {
    var text = "INCIDENT: a fall \(incident.phase.rawValue), impact \(decimal(incident.impact)) g"
    if let tilt = incident.tilt { text += ", the board turned \(Int(tilt.rounded()))°" }
    if incident.phase == .suspected, let remaining = incident.remaining {
      text += "; confirmed in \(Int(max(0, remaining).rounded(.up))) s unless answered"
    } else if incident.phase == .confirmed {
      text += "; the alarm goes on"
    }
    return text + " (\(howToStop))"
  }

  /// `status --brief`'s field: "INCIDENT 23 s", "INCIDENT CONFIRMED".
  public static func brief(_ incident: IncidentStatus) -> String {
    if incident.phase == .suspected, let remaining = incident.remaining {
      return "INCIDENT \(Int(max(0, remaining).rounded(.up))) s"
    }
    return "INCIDENT \(incident.phase.rawValue.uppercased())"
  }

  /// What `show` prints after an incident event's kind, or nil for another kind. The stored
  /// detail was said while the alarm ran ("…; the alarm sounds, press any button …"): its first
  /// clause is what happened, the rest an instruction that was for then.
  public static func event(kind: String, cause: String?, detail: String?, value: Double?) -> String? {
    guard let kind = SessionEvent.Kind(rawValue: kind),
      [.incidentSuspected, .incidentCancelled, .incidentConfirmed].contains(kind)
    else { return nil }
    let happened = detail.flatMap { $0.split(separator: ";", maxSplits: 1).first }.map {
      String($0).trimmingCharacters(in: .whitespaces)
    }
    var text: String
    switch kind {
    case .incidentSuspected:
      text = happened ?? "a fall while riding" + (value.map { ": an impact of \(decimal($0)) g" } ?? "")
    case .incidentCancelled:
      text = happened ?? "the rider is fine: the incident alarm is off"
      if let cause { text += " (\(answeredBy(cause)))" }
    default:
      text = happened ?? "no answer to the incident alarm: the incident is confirmed"
    }
    return text
  }

  /// Who answered, from the event's cause (`RequestSource`).
  static func answeredBy(_ cause: String) -> String {
    switch RequestSource(rawValue: cause) {
    case .gpio, .inputEvent: "a button"
    case .control: "workoutctl fine or the phone page"
    case .simulation: "the simulated rider"
    case nil: cause
    }
  }

  static func decimal(_ value: Double) -> String { String(format: "%.1f", value) }
}
