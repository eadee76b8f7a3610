/// A ride put on a WebDAV share (Nextcloud and the like): one PUT of the FIT file to the
/// configured collection, basic auth. `If-None-Match: *` makes the PUT create the file only
/// (RFC 9110 §13.1.2): after a power cut mid-upload the second PUT of a file the server has is
/// answered 412 and is done, not written twice. A missing collection (409 Conflict, RFC 4918
/// §9.7.1) is made with MKCOL (§9.3) and the PUT sent again.
public struct WebDAVUpload: UploadConversation {
  public static let platform = "WebDAV"

  /// The collection's URL ("https://cloud.example/remote.php/dav/files/rider/Rides/").
  public let collectionURL: String
  public let user: String
  public let password: String

  enum Stage: Hashable {
    case idle
    case putting(afterMakingCollection: Bool)
    case makingCollection
    case finished(UploadOutcome)
  }
  private var stage = Stage.idle
  private var put: PlatformRequest?

  public init(collectionURL: String, user: String, password: String) {
    self.collectionURL = collectionURL
    self.user = user
    self.password = password
  }

  /// The collection's URL with its trailing slash (a collection's, RFC 4918 §5.2).
  var collection: String { collectionURL.hasSuffix("/") ? collectionURL : collectionURL + "/" }

  /// Where the file `fileName` goes.
  public func fileURL(_ fileName: String) -> String { collection + PercentEncoding.encoded(fileName) }

  public mutating func start(job: UploadJob, file: [UInt8], fileName: String) -> UploadStep {
    guard collectionURL.hasPrefix("https://") || collectionURL.hasPrefix("http://") else {
      return finish(.rejected(reason: "the WebDAV URL in the config is not an https:// URL: \(collectionURL)"))
    }
    guard !fileName.isEmpty, let authorization = BasicAuthorization.header(user: user, password: password) else {
      return finish(.rejected(reason: "the WebDAV user in the config cannot hold a colon"))
    }
    let request = PlatformRequest(
      method: "PUT", url: fileURL(fileName),
      headers: [
        authorization, HeaderField("Content-Type", "application/octet-stream"), HeaderField("If-None-Match", "*"),
      ],
      body: file)
    put = request
    stage = .putting(afterMakingCollection: false)
    return .send(request, after: 0)
  }

  public mutating func receive(_ reply: PlatformReply) -> UploadStep {
    if case .finished(let outcome) = stage { return .finished(outcome) }
    let unasked = UploadOutcome.rejected(reason: "WebDAV's upload got a reply before it sent anything")
    guard let put else { return finish(unasked) }
    switch stage {
    case .idle, .finished:
      return finish(unasked)
    case .putting(let afterMakingCollection):
      if case .answered(let status, _, _) = reply {
        if status == 412 { return finish(.done(platformID: put.url, duplicate: true)) }
        if status == 409 && !afterMakingCollection {
          stage = .makingCollection
          let authorization = put.headers.filter { $0.name == "Authorization" }
          return .send(PlatformRequest(method: "MKCOL", url: collection, headers: authorization), after: 0)
        }
        if status == 409 {
          return finish(
            .rejected(reason: "WebDAV refused the file in \(collection) (HTTP 409) after making the folder"))
        }
      }
      switch ReplyJudgement(reply, platform: Self.platform) {
      case .accepted: return finish(.done(platformID: put.url, duplicate: false))
      case .finished(let outcome): return finish(outcome)
      }
    case .makingCollection:
      if case .answered(let status, _, _) = reply {
        // 405: the collection is there already (RFC 4918 §9.3.1), made by someone else meanwhile.
        if status == 405 { return putAgain(put) }
        if status == 409 {
          return finish(.rejected(reason: "WebDAV cannot make the folder \(collection): its parent does not exist"))
        }
      }
      switch ReplyJudgement(reply, platform: Self.platform) {
      case .accepted: return putAgain(put)
      case .finished(let outcome): return finish(outcome)
      }
    }
  }

  public mutating func kept() -> UploadStep {
    // A PUT is one request: nothing is ever asked to be kept.
    if case .finished(let outcome) = stage { return .finished(outcome) }
    return finish(.rejected(reason: "WebDAV's upload was asked to go on after a record it never asked for"))
  }

  private mutating func putAgain(_ put: PlatformRequest) -> UploadStep {
    stage = .putting(afterMakingCollection: true)
    return .send(put, after: 0)
  }

  private mutating func finish(_ outcome: UploadOutcome) -> UploadStep {
    stage = .finished(outcome)
    return .finished(outcome)
  }
}
