import Foundation
import WorkoutCore

/// The real board's clock once GPS gives trustworthy time: a board without an RTC may boot in
/// 1970 or with a stale date, so until NTP or GPS sets it, its dates are wrong. This wraps the
/// board's clock with a `GPSClock` (pure: it decides when GPS time can be trusted); from then
/// on every moment's wall time is GPS time, whatever the system clock says.
final class GPSCorrectedClock: BoardClock, @unchecked Sendable {
  let base: any BoardClock
  private let lock = NSLock()
  private var gpsClock: GPSClock

  init(base: any BoardClock, settings: GPSClockSettings) {
    self.base = base
    gpsClock = GPSClock(settings: settings)
  }

  var epoch: String { base.epoch }

  func now() -> Moment {
    let moment = base.now()
    return Moment(monotonic: moment.monotonic, wall: lock.withLock { gpsClock.wallTime(at: moment) })
  }

  var wallTrusted: Bool { base.wallTrusted || lock.withLock { gpsClock.isTrusted } }

  func hostDeadline(forBoardTime monotonic: Double) -> Double {
    base.hostDeadline(forBoardTime: monotonic)
  }

  /// Takes in the time of an accepted fix that arrived at `moment` (stamped by this clock: the
  /// system's wall time before trust, GPS time after, so a later correction is relative to what
  /// is already recorded).
  func observe(_ fix: GPSFix, at moment: Moment) -> GPSClockObservation {
    let trusted = base.wallTrusted
    return lock.withLock { gpsClock.observe(fix, at: moment, systemClockTrusted: trusted) }
  }
}
