/// The battery, as HealthKit's system-driven end of a workout: the gauge's readings go to the
/// `BatteryWatch`; its warnings become events, log lines, the buzzer and the LED; at the end of
/// its countdown the system stops the ride (cause `lowBattery`), which is then ended and
/// exported as any other, and the board is powered off once that is done.
extension SessionEngine {
  /// A reading of the battery's gauge.
  mutating func observeBattery(_ reading: BatteryReading, at now: Moment, into step: inout EngineStep) -> Bool {
    if let id = session?.id, let state = session?.state, state == .running || state == .paused,
      battery.sampleDue(for: id, at: now.monotonic)
    {
      step.commands.append(.recordBatterySample(sessionID: id, BatterySample(reading, at: now)))
    }
    return noteBattery(battery.observe(reading, at: now.monotonic), at: now, into: &step)
  }

  /// Carries out what the battery watch said; true if the session changed.
  mutating func noteBattery(_ events: [BatteryWatch.Event], at now: Moment, into step: inout EngineStep) -> Bool {
    var changed = false
    let level = battery.latest?.level
    for event in events {
      switch event {
      case .low(let level):
        let left = battery.timeLeft.map { ", about \(formatSeconds($0)) left" } ?? ""
        let text = "battery low: \(BatteryWatch.percent(level))\(left)"
        record(SessionEvent(kind: .batteryLow, moment: now, detail: text, value: level), into: &step)
        step.commands.append(.log(.warning, text))
        step.commands.append(.chirp(.lowBattery))
      case .critical(let detail, let deadline):
        let what = session?.state.isUnfinished == true ? "the ride is saved and ended" : "the board powers off"
        let text =
          "battery critical (\(detail)): \(what) in \(formatSeconds(deadline - now.monotonic)) unless a charger is plugged in"
        record(SessionEvent(kind: .batteryCritical, moment: now, detail: text, value: level), into: &step)
        step.commands.append(.log(.warning, text))
        step.commands.append(.chirp(.lowBattery))
      case .countdownCancelled(let detail):
        let text = "battery countdown cancelled: \(detail)"
        record(SessionEvent(kind: .batteryCountdownCancelled, moment: now, detail: detail, value: level), into: &step)
        step.commands.append(.log(.notice, text))
        step.commands.append(.chirp(.single))
      case .recovered(let level):
        let text = "battery back to \(BatteryWatch.percent(level)): no longer low"
        record(SessionEvent(kind: .batteryRecovered, moment: now, detail: text, value: level), into: &step)
        step.commands.append(.log(.notice, text))
      case .stopDue:
        changed = stopForLowBattery(at: now, into: &step) || changed
      }
    }
    return changed
  }

  /// The countdown ran out: a session under way is stopped by the system (cause `lowBattery`),
  /// then ended once its summary is written; the board is powered off after its exports (at
  /// once when there is none: a board left on at critical shuts down cleanly).
  private mutating func stopForLowBattery(at now: Moment, into step: inout EngineStep) -> Bool {
    var changed = false
    switch session?.state {
    case .prepared?, .running?, .paused?:
      step.commands.append(.log(.warning, "battery critical: the system stops session \(session?.id ?? 0)"))
      changed = apply(.lowBattery, at: now, into: &step)
    default:
      step.commands.append(.log(.warning, "battery critical: no ride under way"))
    }
    step.commands.append(.powerOff(afterSession: session?.id))
    return changed
  }

  /// The battery for status: nil when no gauge has reported ("no battery information").
  func batteryStatus(at now: Moment) -> EngineStatus.BatteryStatus? {
    guard let reading = battery.latest else { return nil }
    return EngineStatus.BatteryStatus(
      supply: reading.supply, level: reading.level, voltage: reading.voltage, current: reading.current,
      status: reading.status, onCharger: reading.onCharger, timeLeft: battery.timeLeft,
      drainPerHour: battery.drainPerHour, alert: battery.alert,
      countdownRemaining: battery.countdownRemaining(at: now.monotonic))
  }
}

extension EngineStatus {
  /// The board's battery as the engine last heard of it (`workoutctl status`, `--json`'s
  /// `battery`, the phone page).
  public struct BatteryStatus: Sendable, Hashable, Codable {
    /// The power_supply's name.
    public var supply: String
    /// %, volts, amperes (negative while discharging), as the gauge gives them.
    public var level: Double?
    public var voltage: Double?
    public var current: Double?
    public var status: BatteryReading.Status
    public var onCharger: Bool
    /// Seconds left: the gauge's estimate, or the level at this ride's drain.
    public var timeLeft: Double?
    /// This ride's drain, % per hour (over the last twenty minutes on battery).
    public var drainPerHour: Double?
    public var alert: BatteryWatch.Alert
    /// Seconds until the system stops the ride (and powers the board off), while critical.
    public var countdownRemaining: Double?
  }
}

/// The battery at one moment of a ride, as `battery_sample` keeps it.
public struct BatterySample: Sendable, Hashable, Codable {
  public var moment: Moment
  public var level: Double?
  public var voltage: Double?
  public var current: Double?
  public var status: BatteryReading.Status

  public init(_ reading: BatteryReading, at moment: Moment) {
    self.moment = moment
    level = reading.level
    voltage = reading.voltage
    current = reading.current
    status = reading.status
  }
}
