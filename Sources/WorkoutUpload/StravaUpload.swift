/// One attempt at sending a ride to Strava (developers.strava.com/docs/uploads): the access
/// token refreshed first if it is about to expire, the FIT file posted to /uploads with an
/// `external_id`, then the upload's status polled until it names the activity or an error.
///
/// What a restart must know is handed out before it is needed: rotated tokens before they are
/// used (Strava may invalidate the old refresh token), the upload's id before polling (so a
/// restart polls instead of sending the file again).
public struct StravaUpload: UploadConversation {
  public let app: StravaApp
  /// The rider's tokens: the credentials file's, then any refreshed ones.
  public private(set) var tokens: StravaTokens
  public let server: StravaServer
  /// Wall-clock Unix seconds when the attempt began: the token's expiry is judged by it, and a
  /// 429's window by it plus the waits so far where Strava's answer has no `Date`.
  let startedAt: Double

  enum Want: Hashable {
    case upload
    case poll
  }

  enum Phase: Hashable {
    case notStarted
    case refreshing(then: Want)
    case keepingTokens(then: Want)
    case uploading
    case keepingUploadID
    case polling
    case finished
  }

  private(set) var phase: Phase = .notStarted
  private var file: [UInt8] = []
  private var fileName = ""
  private(set) var externalID = ""
  private(set) var uploadID: String?
  /// One refresh an attempt: a token refused right after a refresh is the rider's login gone.
  private var refreshed = false
  /// Whether an unknown upload id (404 when polling) already sent the file again.
  private var resent = false
  private var polls = 0
  /// Seconds of `after` asked for so far.
  private var waited: Double = 0

  /// Strava recommends "a one-second or longer polling interval" and gives the mean processing
  /// time as under two seconds: the first poll comes after 2 s and the pace then halves each
  /// time, to at most a minute apart, since polls count against the rate limit.
  static let pollDelays: [Double] = [2, 2, 4, 8, 16, 32, 60, 60, 60, 60, 60, 60]

  /// The words a job fails with when the rider must log in again.
  public static let loginRefused = "Strava refused the login; run workoutctl upload login strava"

  public init(app: StravaApp, tokens: StravaTokens, now: Double, server: StravaServer = .strava) {
    self.app = app
    self.tokens = tokens
    self.startedAt = now
    self.server = server
  }

  /// The `external_id` for a job: the session and the moment its job was made, the same on every
  /// attempt, so Strava knows a ride it already has; the moment keeps a reinstalled board, whose
  /// session numbers start again, from being taken for an old ride.
  public static func externalID(for job: UploadJob) -> String {
    "workoutd-session-\(job.sessionID)-\(Int64(job.createdAt.rounded(.down)))"
  }

  public mutating func start(job: UploadJob, file: [UInt8], fileName: String) -> UploadStep {
    self.file = file
    self.fileName = fileName
    externalID = Self.externalID(for: job)
    uploadID = job.platformUploadID
    // A known upload id (a job found `waiting`) is asked after at once.
    let want: Want = uploadID == nil ? .upload : .poll
    if tokens.needsRefresh(at: startedAt) { return refresh(then: want) }
    return perform(want, after: 0)
  }

  public mutating func receive(_ reply: PlatformReply) -> UploadStep {
    switch phase {
    case .refreshing(let want): return receivedTokens(reply, then: want)
    case .uploading: return receivedUpload(reply)
    case .polling: return receivedStatus(reply)
    case .notStarted, .keepingTokens, .keepingUploadID, .finished:
      return finish(.rejected(reason: "Strava upload: a reply came when none was asked for"))
    }
  }

  public mutating func kept() -> UploadStep {
    switch phase {
    case .keepingTokens(let want): return perform(want, after: 0)
    case .keepingUploadID: return poll()
    case .notStarted, .refreshing, .uploading, .polling, .finished:
      return finish(.rejected(reason: "Strava upload: kept() came when nothing was to keep"))
    }
  }

  // MARK: The requests

  private mutating func refresh(then want: Want) -> UploadStep {
    refreshed = true
    phase = .refreshing(then: want)
    return .send(StravaTokenEndpoint.refresh(tokens, app: app, server: server), after: 0)
  }

  private mutating func perform(_ want: Want, after delay: Double) -> UploadStep {
    switch want {
    case .upload: return upload()
    case .poll: return poll(after: delay)
    }
  }

  /// POST /uploads: multipart with the file, `data_type=fit` and the `external_id`.
  private mutating func upload() -> UploadStep {
    phase = .uploading
    let form = MultipartFormData([
      .init(name: "data_type", content: Array("fit".utf8)),
      .init(name: "external_id", content: Array(externalID.utf8)),
      .init(name: "file", fileName: fileName, contentType: "application/octet-stream", content: file),
    ])
    let request = PlatformRequest(
      method: "POST", url: server.apiURL + "/uploads",
      headers: authorization + [HeaderField("Content-Type", form.contentType)], body: form.body)
    return .send(request, after: 0)
  }

  /// GET /uploads/{id}, `after` seconds from now (the next of `pollDelays` if not given).
  private mutating func poll(after delay: Double? = nil) -> UploadStep {
    guard let uploadID else { return upload() }
    let delay = delay ?? Self.pollDelays[min(polls, Self.pollDelays.count - 1)]
    polls += 1
    waited += delay
    phase = .polling
    let request = PlatformRequest(
      method: "GET", url: server.apiURL + "/uploads/" + PercentEncoding.encoded(uploadID),
      headers: authorization)
    return .send(request, after: delay)
  }

  private var authorization: [HeaderField] {
    [HeaderField("Authorization", "Bearer " + tokens.accessToken), HeaderField("Accept", "application/json")]
  }

  // MARK: The replies

  private mutating func receivedTokens(_ reply: PlatformReply, then want: Want) -> UploadStep {
    guard case .answered(let status, _, let body) = reply else { return common(reply, retrying: want) }
    switch status {
    case 200..<300:
      guard let fresh = StravaTokenEndpoint.tokens(fromAnswer: body, keeping: tokens) else {
        return finish(.retry(after: nil, reason: "Strava's token answer could not be read"))
      }
      tokens = fresh
      phase = .keepingTokens(then: want)
      return .keep(.credentials(fresh.fileContent()))
    case 400, 401, 403:
      // A refresh token revoked by the rider or replaced: Strava answers 400 "Bad Request"
      // (RefreshToken refresh_token invalid) or 401.
      return finish(.rejected(reason: "\(Self.loginRefused) (\(StravaWords.of(status: status, body: body)))"))
    default:
      return common(reply, retrying: want)
    }
  }

  private mutating func receivedUpload(_ reply: PlatformReply) -> UploadStep {
    guard case .answered(let status, _, let body) = reply else { return common(reply, retrying: .upload) }
    switch status {
    case 200..<300:
      guard let upload = StravaUploadStatus(body: body) else {
        return finish(.retry(after: nil, reason: "Strava's upload answer could not be read"))
      }
      if let outcome = Self.outcome(of: upload) { return finish(outcome) }
      guard let id = upload.uploadID else {
        return finish(.retry(after: nil, reason: "Strava's upload answer named no upload"))
      }
      uploadID = id
      phase = .keepingUploadID
      return .keep(.platformUploadID(id))
    case 400:
      // A file Strava refuses at once comes back as an upload whose `error` says why, with 400.
      if let upload = StravaUploadStatus(body: body), upload.error != nil, let outcome = Self.outcome(of: upload) {
        return finish(outcome)
      }
      return finish(.rejected(reason: "Strava refused the upload: \(StravaWords.of(status: status, body: body))"))
    default:
      return common(reply, retrying: .upload)
    }
  }

  private mutating func receivedStatus(_ reply: PlatformReply) -> UploadStep {
    guard case .answered(let status, _, let body) = reply else { return common(reply, retrying: .poll) }
    switch status {
    case 200..<300:
      guard let upload = StravaUploadStatus(body: body) else {
        return finish(.retry(after: nil, reason: "Strava's upload status could not be read"))
      }
      if let outcome = Self.outcome(of: upload) { return finish(outcome) }
      if polls >= Self.pollDelays.count {
        // The upload id is kept: the next attempt asks again rather than sending the file.
        return finish(.retry(after: nil, reason: "Strava is still processing the upload"))
      }
      return poll()
    case 404 where !resent:
      // Strava no longer knows the upload: the file goes again, and the `external_id` (or the
      // file itself) makes Strava call it a duplicate if it has the ride.
      resent = true
      uploadID = nil
      return upload()
    default:
      return common(reply, retrying: .poll)
    }
  }

  /// What a processed upload means: done with its activity, a duplicate (done too), a refusal,
  /// or nil while Strava is still processing it.
  static func outcome(of upload: StravaUploadStatus) -> UploadOutcome? {
    if let error = upload.error, !error.isEmpty {
      if let original = upload.duplicateOf { return .done(platformID: original, duplicate: true) }
      let words = StravaWords.withoutMarkup(error).split(whereSeparator: \.isWhitespace).joined(separator: " ")
      return .rejected(reason: "Strava could not take the ride: \(words)")
    }
    if let activity = upload.activity_id { return .done(platformID: String(activity), duplicate: false) }
    if upload.activityWasDeleted { return .done(platformID: nil, duplicate: false) }
    return nil
  }

  /// The answers every request shares: no answer, 401, 429, 5xx, and any other refusal.
  private mutating func common(_ reply: PlatformReply, retrying want: Want) -> UploadStep {
    switch reply {
    case .unreachable(let words):
      return finish(.retry(after: nil, reason: "Strava unreachable: \(words)"))
    case .answered(let status, _, let body):
      switch status {
      case 401 where !refreshed:
        // The access token was refused (revoked, or expired early): one refresh, then again.
        return refresh(then: want)
      case 401:
        return finish(.rejected(reason: "\(Self.loginRefused) (\(StravaWords.of(status: status, body: body)))"))
      case 429:
        let wait = StravaRateLimit.wait(after: reply, now: serverNow(reply))
        return finish(.retry(after: wait, reason: "Strava's rate limit: \(StravaWords.of(status: status, body: body))"))
      case 500..<600, 408:
        return finish(.retry(after: ReplyJudgement.retryAfter(reply), reason: "Strava answered \(status)"))
      default:
        return finish(.rejected(reason: "Strava refused the request: \(StravaWords.of(status: status, body: body))"))
      }
    }
  }

  /// Strava's clock when it answered: its `Date`, else the attempt's start plus the waits.
  private func serverNow(_ reply: PlatformReply) -> Double {
    reply.header("Date").flatMap { HTTPDate.seconds($0.trimmed) }.map(Double.init) ?? startedAt + waited
  }

  private mutating func finish(_ outcome: UploadOutcome) -> UploadStep {
    phase = .finished
    return .finished(outcome)
  }
}
