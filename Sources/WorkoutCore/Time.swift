/// One reading of the board's clocks, taken by the caller: the core never reads a clock.
///
/// `monotonic` orders events and measures durations; it never jumps but restarts at each boot
/// (or each simulated world), which `epoch` names. `wall` is seconds since 1970 as best known:
/// a Pi has no RTC, so until GPS or NTP sets it, it can be 1970 or stale (`wallTrusted` false).
public struct Moment: Sendable, Hashable, Codable {
  public var monotonic: Double
  public var wall: Double

  public init(monotonic: Double, wall: Double) {
    self.monotonic = monotonic
    self.wall = wall
  }

  /// The moment `seconds` later on both clocks.
  public func advanced(by seconds: Double) -> Moment {
    Moment(monotonic: monotonic + seconds, wall: wall + seconds)
  }
}

/// A clock reading that can be compared across process restarts.
public struct ClockStamp: Sendable, Hashable, Codable {
  /// Names the monotonic timeline: the kernel's boot id, or a simulated world's id.
  public var epoch: String
  public var moment: Moment
  /// Whether the wall clock was known to be right (synchronised, or set from GPS) at the time.
  public var wallTrusted: Bool

  public init(epoch: String, moment: Moment, wallTrusted: Bool) {
    self.epoch = epoch
    self.moment = moment
    self.wallTrusted = wallTrusted
  }
}

/// How long the service was away between the last state it committed and now.
public struct RecoveryGap: Sendable, Hashable, Codable {
  /// Seconds between the last committed second and now; nil when it cannot be known
  /// (a reboot with an untrusted wall clock).
  public var seconds: Double?
  /// How the gap was measured.
  public var basis: Basis

  public enum Basis: String, Sendable, Codable {
    /// Same boot (or simulated world): the monotonic clock is continuous.
    case monotonic
    /// Different boot, but the wall clock was trusted both before and now.
    case wallClock
    /// Different boot and no trustworthy wall clock on one side.
    case unknown
  }

  /// Measures the gap between the last committed stamp and now, trusting the monotonic
  /// clock within one epoch and the wall clock across epochs only when both ends trust it.
  /// A reading no clock gives (negative, or not finite: a damaged record's) measures nothing,
  /// rather than a gap of 1e300 s added to the ride's time.
  public static func between(_ last: ClockStamp, and now: ClockStamp) -> RecoveryGap {
    func reading(_ seconds: Double) -> Bool { seconds.isFinite && seconds >= 0 }
    if last.epoch == now.epoch {
      guard reading(last.moment.monotonic), reading(now.moment.monotonic) else {
        return RecoveryGap(seconds: nil, basis: .unknown)
      }
      return RecoveryGap(seconds: max(0, now.moment.monotonic - last.moment.monotonic), basis: .monotonic)
    }
    if last.wallTrusted && now.wallTrusted && reading(last.moment.wall) && reading(now.moment.wall)
      && now.moment.wall >= last.moment.wall
    {
      return RecoveryGap(seconds: now.moment.wall - last.moment.wall, basis: .wallClock)
    }
    return RecoveryGap(seconds: nil, basis: .unknown)
  }
}

/// Dates of the proleptic Gregorian calendar as days since 1970-01-01: what the parsers of UTC
/// times (gpsd's ISO 8601 times, a ride file's start) need, without Foundation's calendars
/// (which load ICU's data).
public enum CivilCalendar {
  /// Days from 1970-01-01 to `year`-`month`-`day` (H. Hinnant's `days_from_civil`: eras of
  /// 400 years, each year counted from March so that the leap day comes last).
  public static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
  }

  /// The number of days in `month` (1...12) of `year`.
  public static func daysIn(month: Int64, year: Int64) -> Int64 {
    switch month {
    case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }
}
