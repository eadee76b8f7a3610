/// What the status LED shows. The rider has no screen: each state has its own rhythm, and the
/// LED is dark when there is nothing to say, to save the battery.
public enum IndicatorPattern: String, Sendable, Hashable, Codable, CaseIterable {
  /// Idle with a fix (or no GPS at all): dark.
  case off
  /// Idle or counting down, and the GPS has no fix yet: a short blink every second.
  case waitingForFix
  /// The countdown after start: fast blinking (4 Hz).
  case countdown
  /// Recording: a brief flash every three seconds.
  case running
  /// Recording, and the rider is outside the workout's target zone: two long flashes every
  /// two seconds, until they are back in it.
  case offTarget
  /// Paused (by the rider or auto-pause): slow even blinking (1 Hz).
  case paused
  /// Stopped, the ride being saved: steady on.
  case saving
  /// Idle, and the exports are being copied onto a USB stick: two quick flashes a second; it
  /// must not be pulled until this ends (a long chirp says when).
  case copying
  /// Idle, and the last ride waiting to be uploaded has reached its platforms: slow long
  /// flashes for `SessionEngine.sentIndication` seconds, then dark (`[upload] led_when_sent`).
  case sent
  /// Something needs the rider: the disk refuses writes, or a device is absent, lost or
  /// failing; or, for a minute after a restart, part of the ride's record was found damaged
  /// (`SessionEngine.damagedRecordIndication`). Three quick flashes, then a pause.
  case fault
  /// The battery is low or critical, and the board is not saving a ride: a long flash and a
  /// short one every two seconds, whatever the state, until a charger (or a fuller battery)
  /// ends the warning.
  case lowBattery
  /// A fall while riding: the incident alarm is on, until the rider says all is well (any
  /// button, or "I'm fine" on the phone). Bright fast flashes, above everything else.
  case incident

  /// One period as alternating durations in seconds, starting with the LED on; empty is always
  /// off, a single element is always on.
  public var timing: [Double] {
    switch self {
    case .off: []
    case .waitingForFix: [0.1, 0.9]
    case .countdown: [0.125, 0.125]
    case .running: [0.05, 2.95]
    case .offTarget: [0.3, 0.2, 0.3, 1.2]
    case .paused: [0.5, 0.5]
    case .saving: [1]
    case .copying: [0.1, 0.15, 0.1, 0.65]
    case .sent: [1.5, 0.5]
    case .fault: [0.1, 0.1, 0.1, 0.1, 0.1, 1.5]
    case .lowBattery: [0.6, 0.2, 0.1, 1.1]
    case .incident: [0.15, 0.1]
    }
  }

  /// Whether the LED is lit `elapsed` seconds into the pattern.
  public func isLit(after elapsed: Double) -> Bool {
    let timing = timing
    guard !timing.isEmpty else { return false }
    guard timing.count > 1 else { return true }
    let period = timing.reduce(0, +)
    var t = elapsed.truncatingRemainder(dividingBy: period)
    if t < 0 { t += period }
    for (index, duration) in timing.enumerated() {
      if t < duration { return index % 2 == 0 }
      t -= duration
    }
    return false
  }

  /// Seconds from `elapsed` until the LED next changes; nil for a steady pattern.
  public func untilNextChange(after elapsed: Double) -> Double? {
    let timing = timing
    guard timing.count > 1 else { return nil }
    let period = timing.reduce(0, +)
    var t = elapsed.truncatingRemainder(dividingBy: period)
    if t < 0 { t += period }
    for duration in timing {
      if t < duration { return duration - t }
      t -= duration
    }
    return timing[0]
  }

  /// The pattern for a session state and the board's condition, most urgent first. A copy onto
  /// a USB stick, and rides sent, show only between rides: during one, the ride's own rhythm
  /// matters more. A
  /// low battery shows in every state but saving: the rider must know before it runs out.
  public static func choose(
    state: SessionState, gps: GPSCondition, fault: Bool, copying: Bool = false, offTarget: Bool = false,
    lowBattery: Bool = false, sent: Bool = false, incident: Bool = false
  ) -> IndicatorPattern {
    if incident { return .incident }
    if fault { return .fault }
    if state == .stopped { return .saving }
    if lowBattery { return .lowBattery }
    switch state {
    case .stopped: return .saving
    case .prepared: return gps.isWaiting ? .waitingForFix : .countdown
    case .running: return offTarget ? .offTarget : .running
    case .paused: return .paused
    case .notStarted, .ended:
      if copying { return .copying }
      if sent { return .sent }
      return gps.isWaiting ? .waitingForFix : .off
    }
  }
}

/// What the engine knows of the GPS, for the LED and status.
public enum GPSCondition: String, Sendable, Hashable, Codable {
  /// No GPS has reported: there may be none (an indoor trainer).
  case none
  /// gpsd cannot be reached, does not answer, or is not gpsd.
  case noGPSD
  /// gpsd answers but has no receiver open.
  case noReceiver
  /// A GPS is there and has no fix.
  case searching
  /// The receiver reports fixes, and they are refused (too large an error, 0°/0°).
  case rejecting
  case fix

  /// Whether the LED waits for a fix: there is a GPS of some kind, and no fix.
  public var isWaiting: Bool { self != .none && self != .fix }
}

/// What the optional buzzer sounds: a short chirp for each thing the rider did or the system did
/// to the session, so a press is confirmed without looking.
public enum ChirpPattern: String, Sendable, Hashable, Codable, CaseIterable {
  /// One short beep: started (countdown), resumed, a lap.
  case single
  /// Two short beeps: paused.
  case double
  /// One long beep: recording begins (end of the countdown), or the ride is saved.
  case long
  /// Three quick beeps: a fault began (disk full, a device lost).
  case alarm
  /// Two long beeps: the rider left the workout's target zone.
  case offTarget
  /// A long beep, then two short ones: the battery is low, or critical (the ride is about to be
  /// saved and ended).
  case lowBattery
  /// Four long beeps: the incident alarm (a fall while riding), again every few seconds until
  /// the rider answers.
  case incident

  /// Alternating durations in seconds, beep first; played once.
  public var timing: [Double] {
    switch self {
    case .single: [0.08]
    case .double: [0.08, 0.12, 0.08]
    case .long: [0.6]
    case .alarm: [0.06, 0.06, 0.06, 0.06, 0.06]
    case .offTarget: [0.3, 0.15, 0.3]
    case .lowBattery: [0.5, 0.15, 0.08, 0.12, 0.08]
    case .incident: [0.4, 0.1, 0.4, 0.1, 0.4, 0.1, 0.4]
    }
  }

  /// The chirp for a transition, if any.
  public static func forTransition(from: SessionState, to: SessionState) -> ChirpPattern? {
    switch (from, to) {
    case (_, .prepared): .single
    case (.prepared, .running): .long
    case (.running, .paused): .double
    case (.paused, .running): .single
    case (_, .stopped): .long
    default: nil
    }
  }
}
