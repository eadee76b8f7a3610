/// How long a job waits before it is tried again when the platform gave no Retry-After: 30 s
/// after the first failed attempt, doubling to at most an hour (30 s, 1, 2, 4, 8, 16, 32 min,
/// then 1 h). 30 s lets a network just come up (DHCP, DNS) or a platform's passing 5xx clear
/// without a request wasted on it, and still sends a ride within a minute of a short outage;
/// the hour bounds a board left at home to 24 requests a day while a platform is down for
/// days. The network's return wakes the queue anyway (`WorkoutStore.makeUploadRetriesDue`),
/// so a long backoff never delays a ride once the board is back online.
public struct UploadBackoff: Sendable, Hashable {
  /// Seconds before the first retry.
  public var floor: Double
  /// The longest wait, for the backoff and for a platform's Retry-After alike: a Retry-After
  /// of a day (or a garbled one of years) must not park a ride beyond an hour.
  public var ceiling: Double

  public init(floor: Double = 30, ceiling: Double = 3600) {
    self.floor = floor
    self.ceiling = ceiling
  }

  /// Seconds to wait after `attempts` attempts that did not finish the job (1: the first).
  public func delay(afterAttempts attempts: Int) -> Double {
    // 2^20 × 30 s is far past any ceiling: the shift is bounded, never an overflow.
    let doublings = min(max(attempts - 1, 0), 20)
    return min(ceiling, floor * Double(1 << doublings))
  }

  /// The platform's Retry-After in seconds when it gave a usable one (RFC 9110 §10.2.3), at
  /// least a second and at most `ceiling`; else the backoff for `attempts`.
  public func delay(retryAfter: Double?, attempts: Int) -> Double {
    guard let retryAfter, retryAfter.isFinite else { return delay(afterAttempts: attempts) }
    return min(ceiling, max(1, retryAfter))
  }
}

// A job's transitions: what it becomes as an attempt starts, as the platform's conversation
// asks for something to be kept, and as the attempt ends. Pure: the wall time is given.
extension UploadJob {
  /// An attempt begins. A queued job is `sending`; a `waiting` one stays so, for its attempt
  /// asks after the upload the platform took and never sends the file again (a power cut while
  /// it asks must leave it waiting, not sending).
  public func starting(at wall: Double) -> UploadJob {
    var job = self
    if state != .waiting { job.state = .sending }
    job.retryAt = nil
    job.retryFromPlatform = false
    job.updatedAt = wall
    return job
  }

  /// The job cannot be tried until the rider acts (Strava before its login): it keeps its
  /// state and attempts, says why, and is due again after the backoff's ceiling
  /// (`workoutctl upload login strava` makes it due at once). Not an attempt.
  public func awaiting(_ reason: String, at wall: Double, backoff: UploadBackoff = UploadBackoff()) -> UploadJob {
    var job = self
    job.reason = reason
    job.retryAt = wall + backoff.ceiling
    job.retryFromPlatform = false
    job.updatedAt = wall
    return job
  }

  /// What is kept before the conversation goes on: the platform's upload id makes the job
  /// `waiting`. New credentials go to the target's file, not to the job: it is unchanged.
  public func keeping(_ keep: UploadKeep, at wall: Double) -> UploadJob {
    guard case .platformUploadID(let id) = keep else { return self }
    var job = self
    job.state = .waiting
    job.platformUploadID = id
    job.updatedAt = wall
    return job
  }

  /// How the attempt ended. Done (a duplicate too: the platform has the ride) keeps the
  /// platform's id; a retry counts the attempt and waits (the platform's Retry-After, else the
  /// backoff), `waiting` still if the platform holds an upload of it, so that no retry sends
  /// the file twice; a rejection fails the job with the platform's reason.
  public func ending(
    with outcome: UploadOutcome, at wall: Double, backoff: UploadBackoff = UploadBackoff()
  ) -> UploadJob {
    var job = self
    job.updatedAt = wall
    job.retryAt = nil
    job.retryFromPlatform = false
    switch outcome {
    case .done(let platformID, let duplicate):
      job.state = .done
      job.platformID = platformID
      job.reason = duplicate ? "the platform had it already" : nil
    case .retry(let after, let reason):
      job.state = platformUploadID == nil ? .queued : .waiting
      job.attempts = attempts + 1
      job.reason = reason
      job.retryAt = wall + backoff.delay(retryAfter: after, attempts: job.attempts)
      job.retryFromPlatform = after?.isFinite == true
    case .rejected(let reason):
      job.state = .failed
      job.reason = reason
    }
    return job
  }
}
