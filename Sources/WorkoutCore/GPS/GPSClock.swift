/// When a GPS time is believed (config keys under `[gps.clock]`).
public struct GPSClockSettings: Sendable, Hashable, Codable {
  /// No GPS time before this is believed, seconds since 1970. Set it to the firmware's build
  /// date: a receiver claiming an earlier date is wrong (a GPS week rollover bug, a 2-digit year
  /// resolved into the wrong century), whatever the board's own clock says.
  public var earliestPlausible: Double
  /// Nor a time at or after `earliestPlausible + plausibleSpan`. 1024 weeks by default: the
  /// span a 10-bit GPS week number can tell apart, so a date that far ahead can only be a week
  /// rollover resolved the wrong way.
  public var plausibleSpan: Double
  /// Readings in a row whose offsets agree (within `agreementTolerance`) before the offset is
  /// trusted: one reading could be a stale or mis-stamped epoch.
  public var requiredAgreeing: Int
  /// Seconds two offsets may differ and still agree: covers the time between the receiver's
  /// epoch and the reading's arrival (gpsd's cycle and the posting, well under a second).
  public var agreementTolerance: Double
  /// When the system clock is already trusted (NTP), a GPS time further than this from it is
  /// the receiver's error and is not believed. 60 s also tolerates a receiver that reports GPS
  /// time without the leap seconds (18 s in 2017–).
  public var maxDisagreementWithTrustedClock: Double

  /// 2025-01-01T00:00:00Z: a floor for builds that do not set their own.
  public static let defaultEarliestPlausible: Double = 1_735_689_600
  /// 1024 weeks, in seconds.
  public static let gpsWeekRolloverPeriod: Double = 1024 * 7 * 86_400

  public init(
    earliestPlausible: Double = GPSClockSettings.defaultEarliestPlausible,
    plausibleSpan: Double = GPSClockSettings.gpsWeekRolloverPeriod, requiredAgreeing: Int = 3,
    agreementTolerance: Double = 2, maxDisagreementWithTrustedClock: Double = 60
  ) {
    self.earliestPlausible = earliestPlausible
    self.plausibleSpan = plausibleSpan
    self.requiredAgreeing = requiredAgreeing
    self.agreementTolerance = agreementTolerance
    self.maxDisagreementWithTrustedClock = maxDisagreementWithTrustedClock
  }

  /// The first time that is too late to believe.
  public var latestPlausible: Double { earliestPlausible + plausibleSpan }
}

/// Why a fix's time was not believed.
public enum GPSTimeRejection: Sendable, Hashable, Codable {
  /// The fix carried no time (or a non-finite one).
  case noTime
  /// Before `earliestPlausible` (e.g. 1999-08-22 from a receiver hit by the April 2019 week
  /// rollover).
  case beforeEarliestPlausible(time: Double, earliest: Double)
  /// At or after `latestPlausible` (e.g. a 2038 date from a rollover resolved forwards).
  case afterLatestPlausible(time: Double, latest: Double)
  /// The system clock is trusted and the GPS time is this many seconds away from it.
  case contradictsTrustedSystemClock(offset: Double)
}

/// The relation between GPS time and the board's clocks, once trusted.
public struct GPSClockCorrection: Sendable, Hashable, Codable {
  /// GPS time minus the system wall clock, seconds: what the system clock is off by (add it to
  /// set the clock right), and what the session records as the correction.
  public var systemOffset: Double
  /// GPS time minus the monotonic clock, seconds: the wall time of any monotonic instant of
  /// this boot is `monotonic + monotonicOffset`, whatever happens to the system clock.
  public var monotonicOffset: Double
  /// The GPS time of the reading that set this correction.
  public var gpsTime: Double
  /// When (board clocks) that reading arrived.
  public var at: Moment
}

/// What one fix's time did to the clock.
public enum GPSClockObservation: Sendable, Hashable {
  case rejected(GPSTimeRejection)
  /// Believable, but not yet enough agreeing readings in a row.
  case pending(agreeing: Int, required: Int)
  /// The correction is trusted from now on: record it (and set the system clock if the
  /// configuration allows).
  case established(GPSClockCorrection)
  /// Agrees with the correction in force.
  case confirmed
  /// `requiredAgreeing` readings in a row disagreed with the correction in force and agreed
  /// with each other: the correction moves (the receiver corrected its own time).
  case corrected(from: GPSClockCorrection, to: GPSClockCorrection)
}

/// GPS time as the board's clock: the board has no RTC, so its wall clock may be 1970 or stale
/// until GPS gives a time that can be trusted.
///
/// Trust needs a fix (a `GPSFix` is always a 2D/3D fix: receivers make up times before they
/// have one, and decoders drop those), a time inside the plausible window (gpsd has already
/// resolved the GPS week rollover; the window refuses what it resolved wrongly), agreement
/// with a trusted system clock if there is one, and `requiredAgreeing` readings in a row whose
/// offsets agree. Pure: the caller passes the board's clocks as the reading's `Moment`.
///
/// ```swift
/// switch gpsClock.observe(fix, at: now, systemClockTrusted: stamp.wallTrusted) {
/// case .established(let c): record(c.systemOffset); if setClockOptIn { systemClock.step(by: c.systemOffset) }
/// default: break
/// }
/// let wall = gpsClock.wallTime(at: now)   // corrected wall time for points and events
/// ```
public struct GPSClock: Sendable, Hashable, Codable {
  public var settings: GPSClockSettings
  /// The correction in force; nil until trusted.
  public private(set) var correction: GPSClockCorrection?
  /// The current run of readings that agree with each other (before trust, or against it).
  private var run: [GPSClockCorrection] = []

  public init(settings: GPSClockSettings = GPSClockSettings()) {
    self.settings = settings
  }

  /// Whether GPS time is trusted.
  public var isTrusted: Bool { correction != nil }

  /// Whether `time` (seconds since 1970) is believable at all; nil if it is.
  public static func rejection(of time: Double?, settings: GPSClockSettings) -> GPSTimeRejection? {
    guard let time, time.isFinite else { return .noTime }
    if time < settings.earliestPlausible {
      return .beforeEarliestPlausible(time: time, earliest: settings.earliestPlausible)
    }
    if time >= settings.latestPlausible {
      return .afterLatestPlausible(time: time, latest: settings.latestPlausible)
    }
    return nil
  }

  /// Takes in the time of an accepted fix that arrived at `moment`.
  public mutating func observe(
    _ fix: GPSFix, at moment: Moment, systemClockTrusted: Bool = false
  ) -> GPSClockObservation {
    if let why = Self.rejection(of: fix.time, settings: settings) {
      run.removeAll()
      return .rejected(why)
    }
    guard let time = fix.time, moment.monotonic.isFinite, moment.wall.isFinite else {
      run.removeAll()
      return .rejected(.noTime)
    }
    let reading = GPSClockCorrection(
      systemOffset: time - moment.wall, monotonicOffset: time - moment.monotonic, gpsTime: time,
      at: moment)
    if systemClockTrusted, !(abs(reading.systemOffset) <= settings.maxDisagreementWithTrustedClock) {
      run.removeAll()
      return .rejected(.contradictsTrustedSystemClock(offset: reading.systemOffset))
    }
    if let current = correction, agree(current, reading) {
      run.removeAll()
      return .confirmed
    }
    if let last = run.last, !agree(last, reading) { run.removeAll() }
    run.append(reading)
    let required = max(1, settings.requiredAgreeing)
    guard run.count >= required else { return .pending(agreeing: run.count, required: required) }
    run.removeAll()
    if let previous = correction {
      correction = reading
      return .corrected(from: previous, to: reading)
    }
    correction = reading
    return .established(reading)
  }

  /// The wall time of `moment`: corrected by GPS once trusted, else the system's own.
  public func wallTime(at moment: Moment) -> Double {
    correction.map { moment.monotonic + $0.monotonicOffset } ?? moment.wall
  }

  /// The corrected wall time of a monotonic instant of this boot; nil until trusted.
  public func wallTime(atMonotonic monotonic: Double) -> Double? {
    correction.map { monotonic + $0.monotonicOffset }
  }

  /// Forgets the correction (a new boot: monotonic offsets do not carry over).
  public mutating func reset() {
    correction = nil
    run.removeAll()
  }

  private func agree(_ a: GPSClockCorrection, _ b: GPSClockCorrection) -> Bool {
    abs(a.monotonicOffset - b.monotonicOffset) <= settings.agreementTolerance
  }
}
