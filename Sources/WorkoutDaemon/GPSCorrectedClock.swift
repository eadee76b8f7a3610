import Synchronization
import WorkoutCore

/// The real board's clock once GPS gives trustworthy time: a board without an RTC may boot in
/// 1970 or with a stale date, so until NTP or GPS sets it, its dates are wrong. The engine's
/// `GPSClock` decides when GPS time can be trusted (`correctBoardClock`); from then on every
/// moment this clock stamps has GPS time as its wall time, whatever the system clock says.
final class GPSCorrectedClock: BoardClock {
  let base: any BoardClock
  /// Read by every thread that stamps an input, set by the engine thread.
  private let correction = Mutex<GPSClockCorrection?>(nil)

  init(base: any BoardClock) {
    self.base = base
  }

  var epoch: String { base.epoch }

  func now() -> Moment {
    let moment = base.now()
    guard let offset = correction.withLock({ $0?.monotonicOffset }) else { return moment }
    return Moment(monotonic: moment.monotonic, wall: moment.monotonic + offset)
  }

  /// Whether the board's own clock is synchronised (NTP), GPS aside.
  var baseWallTrusted: Bool { base.wallTrusted }

  var wallTrusted: Bool { base.wallTrusted || correction.withLock { $0 != nil } }

  func hostDeadline(forBoardTime monotonic: Double) -> Double {
    base.hostDeadline(forBoardTime: monotonic)
  }

  /// GPS time is trusted (or moved): stamp with it from now on.
  func apply(_ correction: GPSClockCorrection) {
    self.correction.withLock { $0 = correction }
  }
}
