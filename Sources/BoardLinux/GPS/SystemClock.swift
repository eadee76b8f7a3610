import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// A failed `clock_gettime`/`clock_settime`.
public struct SystemClockError: Error, Sendable, Hashable, CustomStringConvertible {
  public var call: String
  public var errno: Int32

  public var description: String {
    let text = strerror(errno).map { String(cString: $0) } ?? "errno \(errno)"
    if errno == EPERM {
      return "\(call): \(text) (setting the clock needs CAP_SYS_TIME: AmbientCapabilities=CAP_SYS_TIME in the unit)"
    }
    return "\(call): \(text)"
  }
}

/// Setting the system clock from GPS: opt-in (config key `gps.set_system_clock`, off by
/// default), because it changes the whole machine's time and needs `CAP_SYS_TIME`.
///
/// The engine decides *what* (a trusted `GPSClockCorrection`); this does the syscall:
///
/// ```swift
/// if config.gps.setSystemClock, case .established(let c) = observation {
///   let setter = SystemClockSetter()
///   switch setter.apply(offset: c.systemOffset) { ... log the outcome ... }
/// }
/// ```
///
/// The clock is stepped by the offset relative to its current reading (`clock_gettime` then
/// `clock_settime(CLOCK_REALTIME)`), so the time spent between measuring the offset and
/// applying it does not matter. Monotonic time is not affected, so durations stay right.
public struct SystemClockSetter: Sendable {
  /// Offsets smaller than this (seconds) are left alone: not worth a step, and within what
  /// the GPS offset itself is known to (the reading's arrival latency).
  public var minimumStep: Double

  /// What `apply` did.
  public enum Outcome: Sendable, Hashable {
    case stepped(by: Double)
    case skipped(offset: Double)
    case failed(SystemClockError)
  }

  public init(minimumStep: Double = 1) {
    self.minimumStep = minimumStep
  }

  /// Steps `CLOCK_REALTIME` by `offset` seconds if it is at least `minimumStep`.
  public func apply(offset: Double) -> Outcome {
    guard offset.isFinite, abs(offset) >= minimumStep else { return .skipped(offset: offset) }
    do {
      try SystemClock.step(by: offset)
      return .stepped(by: offset)
    } catch {
      return .failed(error)
    }
  }
}

/// The system's wall clock (`CLOCK_REALTIME`).
public enum SystemClock {
  /// Seconds since 1970 now.
  public static func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
  }

  /// Steps the clock by `offset` seconds (`clock_settime(CLOCK_REALTIME, now + offset)`).
  /// Needs `CAP_SYS_TIME`; throws `EPERM` without it.
  public static func step(by offset: Double) throws(SystemClockError) {
    var now = timespec()
    guard clock_gettime(CLOCK_REALTIME, &now) == 0 else {
      throw SystemClockError(call: "clock_gettime", errno: errno)
    }
    var target = adding(offset, to: now)
    try set(&target)
  }

  /// `clock_settime(CLOCK_REALTIME, value)`; the kernel checks the value (EINVAL for a
  /// nanosecond field outside 0..<1e9) before the capability (EPERM).
  public static func set(_ value: inout timespec) throws(SystemClockError) {
    guard clock_settime(CLOCK_REALTIME, &value) == 0 else {
      throw SystemClockError(call: "clock_settime", errno: errno)
    }
  }

  /// `time + offset` as a normalised `timespec` (0 ≤ tv_nsec < 1e9), exact to the nanosecond
  /// for offsets below 2^53 ns (104 days).
  public static func adding(_ offset: Double, to time: timespec) -> timespec {
    let whole = offset.rounded(.down)
    var seconds = Int64(time.tv_sec) + Int64(whole)
    var nanoseconds = Int64(time.tv_nsec) + Int64(((offset - whole) * 1e9).rounded())
    if nanoseconds >= 1_000_000_000 {
      seconds += nanoseconds / 1_000_000_000
      nanoseconds %= 1_000_000_000
    } else if nanoseconds < 0 {
      let borrow = (-nanoseconds + 999_999_999) / 1_000_000_000
      seconds -= borrow
      nanoseconds += borrow * 1_000_000_000
    }
    return timespec(tv_sec: Int(seconds), tv_nsec: Int(nanoseconds))
  }
}
