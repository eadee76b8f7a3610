import WorkoutCore

/// gpsd reports an NMEA receiver's epoch in several TPVs as its sentences arrive (RMC: position,
/// speed, course; GGA: altitude; GSA/GST: errors), each with what it knows so far, in whatever
/// order the receiver sends them. Taking only the first TPV of an epoch loses what comes later
/// (a receiver that sends RMC before GGA would never give an altitude). The assembler merges
/// the TPVs of one epoch (same time) into one fix and hands it on once the epoch is over: a TPV
/// of another time, the end of usable reports, or `settle` seconds of quiet (an epoch's
/// sentences come in one burst).
///
/// Pure: the caller passes monotonic seconds.
public struct GPSEpochAssembler: Sendable, Hashable {
  /// Seconds without a TPV after which the epoch counts as complete.
  public var settle: Double
  private var pending: GPSFix?
  /// When the last TPV of the fix being assembled was added (monotonic seconds).
  public private(set) var lastAddedAt = 0.0

  public init(settle: Double = 0.3) {
    self.settle = settle
  }

  /// The fix being assembled, if any.
  public var inProgress: GPSFix? { pending }

  /// When the fix being assembled will be complete if no TPV comes (`finish(at:)` returns it
  /// from then on); nil when none is. A reader sleeps until this, not on a periodic timer.
  public var settleDeadline: Double? { pending == nil ? nil : lastAddedAt + settle }

  /// Starts a new epoch with an accepted fix; returns the previous epoch's fix if one was still
  /// being assembled.
  public mutating func begin(_ fix: GPSFix, at now: Double) -> GPSFix? {
    let finished = pending
    pending = fix
    lastAddedAt = now
    return finished
  }

  /// Adds a later TPV of the epoch being assembled (same receiver time): fills what the epoch
  /// did not know yet, never overwriting what it did. Returns false if it is not that epoch.
  @discardableResult
  public mutating func merge(_ fix: GPSFix, at now: Double) -> Bool {
    guard var current = pending, let time = fix.time, current.time == time else { return false }
    if fix.dimension == .threeD, current.dimension == .twoD {
      current.dimension = .threeD
    }
    if current.dimension == .threeD, current.altitude == nil { current.altitude = fix.altitude }
    if current.speed == nil { current.speed = fix.speed }
    if current.track == nil { current.track = fix.track }
    if current.horizontalError == nil { current.horizontalError = fix.horizontalError }
    if current.verticalError == nil { current.verticalError = fix.verticalError }
    pending = current
    lastAddedAt = now
    return true
  }

  /// The assembled fix once `settle` seconds have passed without a TPV (or at once with
  /// `force`, when the reports end or the connection does).
  public mutating func finish(at now: Double, force: Bool = false) -> GPSFix? {
    // Against the deadline as `settleDeadline` gives it: `now - lastAddedAt` rounds below
    // `settle` at that very time (101.3 - 101 is 0.29999…), and a reader woken then found nothing.
    guard let fix = pending, force || now >= lastAddedAt + settle else { return nil }
    pending = nil
    return fix
  }
}
