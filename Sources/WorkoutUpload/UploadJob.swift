/// A platform a finished ride is sent to, by the name config, the queue and `workoutctl` use.
public enum UploadTarget: String, Sendable, Hashable, CaseIterable, Codable {
  /// intervals.icu's activity upload (a FIT file, basic auth with the athlete's API key).
  case intervalsICU = "intervals.icu"
  /// Strava's uploads API (OAuth 2, an `external_id`, the upload's status polled).
  case strava
  /// A WebDAV share (Nextcloud and the like): one PUT with basic auth.
  case webdav
}

/// Where an upload job stands. A job is one session sent to one target; it is made when the
/// session ends and lives in the database, so a kill or a power cut never loses it.
public enum UploadJobState: String, Sendable, Hashable, CaseIterable, Codable {
  /// Waiting for its turn: now, at `retryAt`, or when the network comes up.
  case queued
  /// A request was under way. Found so at start (a kill or power cut mid-upload), it is sent
  /// again: the platform's duplicate answer, or the file's external id, proves it was not sent
  /// twice.
  case sending
  /// The platform took the file and is processing it (Strava): `platformUploadID` is asked
  /// again until it names the activity.
  case waiting
  /// The platform has the ride (`platformID`, where it says); a duplicate is done too.
  case done
  /// Given up: `reason` says why (a wrong key, a file refused). Not tried again unless asked.
  case failed
}

/// One session to one target, as the queue holds it.
public struct UploadJob: Sendable, Hashable, Codable {
  public var sessionID: Int64
  public var target: UploadTarget
  public var state: UploadJobState
  /// Requests made that did not finish the job (network down, 429, 5xx).
  public var attempts: Int
  /// Wall-clock seconds before which a queued job is not tried again; nil: at once.
  public var retryAt: Double?
  /// `retryAt` is the platform's own Retry-After (a 429 or 503 that said when): the network's
  /// coming back does not bring it forward.
  public var retryFromPlatform: Bool
  /// The platform's id of the upload while it processes it (Strava's upload id).
  public var platformUploadID: String?
  /// The platform's id of the activity, once done.
  public var platformID: String?
  /// Why the last attempt did not finish the job (queued: it is tried again), or why it
  /// failed (failed: it is not).
  public var reason: String?
  public var createdAt: Double
  public var updatedAt: Double

  public init(
    sessionID: Int64, target: UploadTarget, state: UploadJobState = .queued, attempts: Int = 0,
    retryAt: Double? = nil, retryFromPlatform: Bool = false, platformUploadID: String? = nil,
    platformID: String? = nil, reason: String? = nil, createdAt: Double, updatedAt: Double? = nil
  ) {
    self.sessionID = sessionID
    self.target = target
    self.state = state
    self.attempts = attempts
    self.retryAt = retryAt
    self.retryFromPlatform = retryFromPlatform
    self.platformUploadID = platformUploadID
    self.platformID = platformID
    self.reason = reason
    self.createdAt = createdAt
    self.updatedAt = updatedAt ?? createdAt
  }

  /// Whether the uploader still has work in it.
  public var isPending: Bool { state == .queued || state == .sending || state == .waiting }
}
