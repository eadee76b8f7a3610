import LinuxSupport
import WorkoutCore

/// The real board's clock: CLOCK_BOOTTIME for ordering and durations (it keeps counting
/// through suspend), CLOCK_REALTIME for dates, trusted once the kernel says it is synchronised.
/// A Pi has no RTC, so until then dates may be 1970 or stale.
public final class LinuxBoardClock: BoardClock {
  public let epoch: String

  public init() {
    epoch = SystemClocks.bootID()
  }

  public func now() -> Moment {
    Moment(monotonic: SystemClocks.boottime(), wall: SystemClocks.wall())
  }

  public var wallTrusted: Bool { SystemClocks.wallClockSynchronised() }

  public func hostDeadline(forBoardTime monotonic: Double) -> Double {
    SystemClocks.monotonic() + (monotonic - SystemClocks.boottime())
  }
}
