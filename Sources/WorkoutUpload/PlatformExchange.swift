/// One header of a request or a reply, as sent or received (names compared case-insensitively,
/// RFC 9110 §5.1).
public struct HeaderField: Sendable, Hashable {
  public var name: String
  public var value: String

  public init(_ name: String, _ value: String) {
    self.name = name
    self.value = value
  }
}

/// A request to a platform, made by a conversation and sent by the uploader's HTTP client.
public struct PlatformRequest: Sendable, Hashable {
  public var method: String
  /// An absolute https:// (or, for a local test server, http://) URL.
  public var url: String
  public var headers: [HeaderField]
  public var body: [UInt8]

  public init(method: String, url: String, headers: [HeaderField] = [], body: [UInt8] = []) {
    self.method = method
    self.url = url
    self.headers = headers
    self.body = body
  }
}

/// What came back for a request.
public enum PlatformReply: Sendable, Hashable {
  /// The platform answered (any status: the conversation judges it).
  case answered(status: Int, headers: [HeaderField], body: [UInt8])
  /// No answer: no network, no DNS, a refused or dropped connection, a TLS failure, a timeout.
  /// The words say which; a conversation retries on it.
  case unreachable(String)
}

extension PlatformReply {
  /// The value of the reply's header `name` (the first, compared case-insensitively).
  public func header(_ name: String) -> String? {
    guard case .answered(_, let headers, _) = self else { return nil }
    return headers.first { $0.name.lowercased() == name.lowercased() }?.value
  }
}

/// What a conversation wants done next.
public enum UploadStep: Sendable, Hashable {
  /// Send this request, `after` seconds from now (0: at once; Strava's status is polled at its
  /// documented pace), and hand the reply to `receive`.
  case send(PlatformRequest, after: Double)
  /// Record this durably before going on, then call `kept()`: what a restart must know so as
  /// not to send the file twice or lose the rider's login.
  case keep(UploadKeep)
  /// The job is over for now.
  case finished(UploadOutcome)
}

/// What a conversation asks the uploader to record before its next request.
public enum UploadKeep: Sendable, Hashable {
  /// The platform took the file under this id and is processing it (the job goes `waiting`).
  case platformUploadID(String)
  /// The platform gave new credentials (Strava rotates its refresh token): the platform's own
  /// bytes, written to the target's credentials file (mode 0600) before they are used.
  case credentials([UInt8])
}

/// How an attempt ended.
public enum UploadOutcome: Sendable, Hashable {
  /// The platform has the ride: its activity id where it says, and whether it already had it.
  case done(platformID: String?, duplicate: Bool)
  /// Not this time: the network, a 429 or a 5xx. `after` is the platform's Retry-After in
  /// seconds, if it gave one (else the uploader's backoff decides).
  case retry(after: Double?, reason: String)
  /// The platform refused it and asking again will not help (a wrong key, a file it cannot
  /// read): the job fails with these words.
  case rejected(reason: String)
}

/// One platform's protocol as a value: it takes replies and returns what to do, and does no
/// I/O of its own (the uploader sends, waits, records). Made afresh for each attempt.
public protocol UploadConversation {
  /// The first step for `job` with the ride's `file` (a FIT file named `fileName`); a job
  /// found `waiting` asks after its `platformUploadID` instead of sending the file again.
  mutating func start(job: UploadJob, file: [UInt8], fileName: String) -> UploadStep
  /// The next step, given the reply to the last `send`.
  mutating func receive(_ reply: PlatformReply) -> UploadStep
  /// The next step once the last `keep` is recorded.
  mutating func kept() -> UploadStep
}
