import LinuxSupport
import Synchronization
import WorkoutCore

/// The real board's clock: CLOCK_BOOTTIME for ordering and durations (it keeps counting
/// through suspend), CLOCK_REALTIME for dates, trusted once the kernel says it is synchronised.
/// A Pi has no RTC, so until then dates may be 1970 or stale.
public final class LinuxBoardClock: BoardClock {
  public let epoch: String
  /// The kernel's answer on synchronisation and when it was read (CLOCK_BOOTTIME).
  private let synchronised = Mutex<(answer: Bool, readAt: Double)?>(nil)

  /// How long the kernel's answer on synchronisation is kept: the engine asks at every tick,
  /// and a clock that NTP (or the GPS) brings into sync may be believed a few seconds late,
  /// where a system call a second is the recording path's cost.
  public static let synchronisationCheckInterval = 10.0

  public init() {
    epoch = SystemClocks.bootID()
  }

  public func now() -> Moment {
    Moment(monotonic: SystemClocks.boottime(), wall: SystemClocks.wall())
  }

  public var wallTrusted: Bool {
    let now = SystemClocks.boottime()
    return synchronised.withLock { kept in
      if let kept, now - kept.readAt < Self.synchronisationCheckInterval, now >= kept.readAt { return kept.answer }
      let answer = SystemClocks.wallClockSynchronised()
      kept = (answer, now)
      return answer
    }
  }

  public func hostDeadline(forBoardTime monotonic: Double) -> Double {
    SystemClocks.monotonic() + (monotonic - SystemClocks.boottime())
  }
}
