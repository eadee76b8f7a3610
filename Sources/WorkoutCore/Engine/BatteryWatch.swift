/// What the engine makes of the battery gauge: this ride's drain, the time left, and the
/// warnings a bike computer gives, low then critical, with a countdown to the system's stop that
/// a charger cancels. A pure value: the caller passes the readings and the time (monotonic
/// seconds) and turns the events it returns into the session's events, the LED and the stop.
///
/// ```swift
/// events += watch.observe(reading, at: now.monotonic)
/// events += watch.advance(to: now.monotonic)     // on every tick and wakeup
/// let wake = watch.deadline                       // the countdown's end
/// ```
///
/// A level wobbling around a threshold warns once: the warning re-arms only after the level has
/// risen `hysteresis` points above it (for the time left, the time those points last at this
/// ride's drain).
public struct BatteryWatch: Sendable, Hashable {
  /// How urgent the battery is.
  public enum Alert: String, Sendable, Hashable, Codable, CaseIterable {
    case normal, low, critical
  }

  /// Something to record and tell the rider.
  public enum Event: Sendable, Hashable {
    /// The level fell to `lowPercent` or below.
    case low(level: Double)
    /// Critical (`detail` says why): the countdown to the system's stop runs until `deadline`.
    case critical(detail: String, deadline: Double)
    /// The countdown stopped: a charger was plugged in, or the level came back (`detail`).
    case countdownCancelled(detail: String)
    /// The level rose `hysteresis` points above the low threshold: the warnings are over.
    case recovered(level: Double)
    /// The countdown ran out: stop and end the ride, and power the board off.
    case stopDue
  }

  /// One level the drain is reckoned from.
  struct Sample: Sendable, Hashable {
    var time: Double
    var level: Double
  }

  /// The readings of the last this many seconds make the drain estimate. A gauge counts whole
  /// percents: over ten minutes a slow drain (6 %/h) is one step, and where the window cuts it
  /// the estimate was off by up to 90 %; over twenty, by at most a quarter at any drain.
  public static let drainWindow: Double = 1_200
  /// The drain is estimated once the readings span this many seconds: a gauge counts whole
  /// percents, and over a shorter time one step would read as a steep drain.
  public static let drainMinimumSpan: Double = 300
  /// At most one sample is kept per this many seconds (a gauge read every second adds nothing).
  static let sampleSpacing: Double = 10
  /// How far above the time-left limit a time left must rise to clear critical when the drain is
  /// unknown (the gauge's own estimate), seconds.
  static let timeLeftMargin: Double = 300

  public var settings: BatterySettings
  /// The latest reading, and when it came.
  public private(set) var latest: BatteryReading?
  public private(set) var latestAt: Double?
  public private(set) var alert = Alert.normal
  /// The end of the countdown to the system's stop, while it runs.
  public private(set) var countdownDeadline: Double?
  /// Whether the countdown ran out (once: the stop is asked for once).
  public private(set) var stopRequested = false
  private var samples: [Sample] = []
  /// The session the last stored sample was of, and when it was taken.
  private var sampledSession: Int64?
  private var sampledAt = -Double.infinity

  public init(settings: BatterySettings = BatterySettings()) {
    self.settings = settings
  }

  /// When `advance` has news if nothing else comes: the countdown's end.
  public var deadline: Double? { countdownDeadline }

  /// This ride's drain, % per hour, by least squares over the last `drainWindow` seconds of
  /// discharging (nil until the readings span `drainMinimumSpan`; 0 when the level holds).
  public var drainPerHour: Double? {
    guard let first = samples.first, let last = samples.last, last.time - first.time >= Self.drainMinimumSpan
    else { return nil }
    let n = Double(samples.count)
    let meanT = samples.reduce(0) { $0 + ($1.time - first.time) } / n
    let meanL = samples.reduce(0) { $0 + $1.level } / n
    var covariance = 0.0
    var variance = 0.0
    for sample in samples {
      let dt = sample.time - first.time - meanT
      covariance += dt * (sample.level - meanL)
      variance += dt * dt
    }
    guard variance > 0 else { return nil }
    return max(0, -covariance / variance * 3600)
  }

  /// Seconds left: the gauge's own estimate if it gives one, else the level at this ride's drain.
  public var timeLeft: Double? {
    guard let latest, !latest.onCharger else { return nil }
    if let gauge = latest.timeToEmpty { return gauge }
    guard let level = latest.level, let drain = drainPerHour, drain > 0 else { return nil }
    return level / drain * 3600
  }

  /// Seconds until the system's stop, while the countdown runs.
  public func countdownRemaining(at now: Double) -> Double? {
    countdownDeadline.map { max(0, $0 - now) }
  }

  /// Takes a reading of the gauge at `now`.
  public mutating func observe(_ reading: BatteryReading, at now: Double) -> [Event] {
    latest = reading
    latestAt = now
    if reading.onCharger {
      // Charging is not this ride's drain: the estimate starts again once it discharges.
      samples.removeAll()
    } else if let level = reading.level {
      samples.removeAll { $0.time < now - Self.drainWindow }
      if let last = samples.last, now - last.time < Self.sampleSpacing {
        samples[samples.count - 1].level = level
      } else {
        samples.append(Sample(time: now, level: level))
      }
    }
    return judge(reading, at: now)
  }

  /// Whether a reading at `now` is to be stored with session `id`: its first, then one every
  /// `sampleInterval` seconds (marked as taken when true).
  public mutating func sampleDue(for id: Int64, at now: Double) -> Bool {
    if sampledSession == id, now - sampledAt < settings.sampleInterval { return false }
    sampledSession = id
    sampledAt = now
    return true
  }

  /// Lets time pass to `now`: the countdown's end asks for the stop, once.
  public mutating func advance(to now: Double) -> [Event] {
    guard let deadline = countdownDeadline, now >= deadline else { return [] }
    countdownDeadline = nil
    stopRequested = true
    return [.stopDue]
  }

  private mutating func judge(_ reading: BatteryReading, at now: Double) -> [Event] {
    var events: [Event] = []
    let level = reading.level
    let timeLeft = timeLeft
    let limit = settings.criticalMinutesLeft.map { $0 * 60 }
    let criticalByLevel = level.map { $0 <= settings.criticalPercent } ?? false
    let criticalByTime = timeLeft.flatMap { left in limit.map { left < $0 } } ?? false
    // Above a threshold by the hysteresis: a warning of it can come again.
    let clearOfCritical: Bool = {
      if let level, level < settings.criticalPercent + settings.hysteresis { return false }
      guard let limit, let timeLeft else { return level != nil }
      let margin = drainPerHour.flatMap { $0 > 0 ? settings.hysteresis / $0 * 3600 : nil } ?? Self.timeLeftMargin
      return timeLeft >= limit + margin
    }()
    let clearOfLow = level.map { $0 >= settings.lowPercent + settings.hysteresis } ?? false

    switch alert {
    case .critical where clearOfCritical:
      alert = clearOfLow ? .normal : .low
      if let level, countdownDeadline != nil {
        countdownDeadline = nil
        events.append(.countdownCancelled(detail: "the level is back to \(percentText(level))"))
      }
      if alert == .normal, let level { events.append(.recovered(level: level)) }
    case .low where clearOfLow:
      alert = .normal
      if let level { events.append(.recovered(level: level)) }
    case .normal, .low:
      // Warnings begin only on battery: a board on its charger is not running out.
      guard !reading.onCharger else { break }
      if criticalByLevel || criticalByTime {
        alert = .critical
      } else if alert == .normal, let level, level <= settings.lowPercent {
        alert = .low
        events.append(.low(level: level))
      }
    case .critical:
      break
    }

    // The countdown runs while critical on battery; a charger stops it, and unplugged while
    // still critical it starts again.
    if alert == .critical, !stopRequested {
      if reading.onCharger, countdownDeadline != nil {
        countdownDeadline = nil
        events.append(.countdownCancelled(detail: "a charger is plugged in"))
      } else if !reading.onCharger, countdownDeadline == nil {
        let deadline = now + settings.countdown
        countdownDeadline = deadline
        let why =
          if criticalByTime, !criticalByLevel, let timeLeft {
            "\(formatSeconds(timeLeft)) left"
          } else {
            "level \(level.map(percentText) ?? "unknown")"
          }
        events.append(.critical(detail: why, deadline: deadline))
      }
    }
    return events
  }

  private func percentText(_ level: Double) -> String { BatteryWatch.percent(level) }

  /// "14 %", "7.5 %".
  public static func percent(_ level: Double) -> String {
    guard level.isFinite else { return "\(level) %" }
    return level == level.rounded() ? "\(Int(level)) %" : "\((level * 10).rounded() / 10) %"
  }
}
