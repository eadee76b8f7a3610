import Foundation
import Synchronization
import WorkoutCore

/// The real board's clock once GPS gives trustworthy time: a board without an RTC may boot in
/// 1970 or with a stale date, so until NTP or GPS sets it, its dates are wrong. This wraps the
/// board's clock with a `GPSClock` (pure: it decides when GPS time can be trusted); from then
/// on every moment's wall time is GPS time, whatever the system clock says.
final class GPSCorrectedClock: BoardClock {
  let base: any BoardClock
  /// Read by every thread that stamps an input, changed by the engine thread.
  private let gpsClock: Mutex<GPSClock>

  init(base: any BoardClock, settings: GPSClockSettings) {
    self.base = base
    gpsClock = Mutex(GPSClock(settings: settings))
  }

  var epoch: String { base.epoch }

  func now() -> Moment {
    let moment = base.now()
    return Moment(monotonic: moment.monotonic, wall: gpsClock.withLock { $0.wallTime(at: moment) })
  }

  var wallTrusted: Bool { base.wallTrusted || gpsClock.withLock { $0.isTrusted } }

  func hostDeadline(forBoardTime monotonic: Double) -> Double {
    base.hostDeadline(forBoardTime: monotonic)
  }

  /// Takes in the time of an accepted fix that arrived at `moment` (stamped by this clock: the
  /// system's wall time before trust, GPS time after, so a later correction is relative to what
  /// is already recorded).
  func observe(_ fix: GPSFix, at moment: Moment) -> GPSClockObservation {
    let trusted = base.wallTrusted
    return gpsClock.withLock { $0.observe(fix, at: moment, systemClockTrusted: trusted) }
  }
}
