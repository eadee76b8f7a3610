import Testing

@testable import WorkoutUpload

/// The conversations as values: their requests, and what each answer makes of the job.
struct ConversationTests {
  let job = UploadJob(sessionID: 7, target: .intervalsICU, createdAt: 1_700_000_000)
  let file: [UInt8] = [0x0E, 0x10, 0x2D, 0x08, 1, 2, 3]

  func answered(_ status: Int, _ body: String = "", _ headers: [HeaderField] = []) -> PlatformReply {
    .answered(status: status, headers: headers, body: Array(body.utf8))
  }

  func intervals(_ reply: PlatformReply) -> UploadStep {
    var conversation = IntervalsICUUpload(athleteID: "i42", apiKey: "k3y")
    _ = conversation.start(job: job, file: file, fileName: "ride-7.fit")
    return conversation.receive(reply)
  }

  @Test func intervalsPostsTheFileAsTheFormsFileFieldWithTheKey() throws {
    var conversation = IntervalsICUUpload(athleteID: "i42", apiKey: "k3y", baseURL: "https://fake.test:8443/")
    guard case .send(let request, let after) = conversation.start(job: job, file: file, fileName: "ride-7.fit") else {
      Issue.record("no request")
      return
    }
    #expect(after == 0 && request.method == "POST")
    #expect(request.url == "https://fake.test:8443/api/v1/athlete/i42/activities")
    #expect(request.headers.first { $0.name == "Authorization" }?.value == "Basic QVBJX0tFWTprM3k=")  // API_KEY:k3y
    let contentType = try #require(request.headers.first { $0.name == "Content-Type" }?.value)
    let boundary = try #require(contentType.split(separator: "=").last.map(String.init))
    #expect(contentType.hasPrefix("multipart/form-data; boundary="))
    let form = MultipartFormData([
      .init(name: "file", fileName: "ride-7.fit", contentType: "application/octet-stream", content: file)
    ])
    #expect(form.boundary == boundary && request.body == form.body)
  }

  @Test func intervalsAnswersMakeTheJobsOutcome() {
    let created = #"{"icu_athlete_id":"i42","id":"i1000","activities":[{"icu_athlete_id":"i42","id":"i1000"}]}"#
    #expect(intervals(answered(201, created)) == .finished(.done(platformID: "i1000", duplicate: false)))
    #expect(
      intervals(answered(409, #"{"status":409,"error":"Duplicate of activity i1000"}"#))
        == .finished(.done(platformID: "i1000", duplicate: true)))
    #expect(
      intervals(answered(422, #"{"error":"Duplicate file"}"#)) == .finished(.done(platformID: nil, duplicate: true)))
    #expect(
      intervals(answered(429, "", [HeaderField("Retry-After", "30")]))
        == .finished(.retry(after: 30, reason: "intervals.icu is rate limiting (HTTP 429)")))
    #expect(intervals(answered(502)) == .finished(.retry(after: nil, reason: "intervals.icu answered HTTP 502")))
    #expect(
      intervals(.unreachable("Empty reply from server"))
        == .finished(.retry(after: nil, reason: "intervals.icu unreachable: Empty reply from server")))
    guard case .finished(.rejected(let reason)) = intervals(answered(401, #"{"error":"Unauthorized"}"#)) else {
      Issue.record("401 not rejected")
      return
    }
    #expect(reason.contains("refused the key") && !reason.contains("k3y"))
  }

  @Test func intervalsWithoutAKeyIsRejectedBeforeAnyRequest() {
    var conversation = IntervalsICUUpload(athleteID: "i42", apiKey: "")
    guard case .finished(.rejected(let reason)) = conversation.start(job: job, file: file, fileName: "r.fit") else {
      Issue.record("sent without a key")
      return
    }
    #expect(reason.contains("API key"))
  }

  @Test func intervalsAthleteIDCannotChangeThePath() {
    let conversation = IntervalsICUUpload(athleteID: "../admin?x=", apiKey: "k")
    #expect(conversation.endpoint == "https://intervals.icu/api/v1/athlete/..%2Fadmin%3Fx%3D/activities")
  }

  func webdav() -> (WebDAVUpload, PlatformRequest) {
    var conversation = WebDAVUpload(collectionURL: "https://cloud.test/dav/Rides", user: "rider", password: "pw")
    guard case .send(let put, _) = conversation.start(job: job, file: file, fileName: "2026-12-07 ride.fit") else {
      fatalError("no PUT")
    }
    return (conversation, put)
  }

  @Test func webdavPutsTheFileOnlyIfItIsNotThere() {
    let (_, put) = webdav()
    #expect(put.method == "PUT" && put.url == "https://cloud.test/dav/Rides/2026-12-07%20ride.fit" && put.body == file)
    #expect(put.headers.contains(HeaderField("If-None-Match", "*")))
    #expect(put.headers.contains(HeaderField("Authorization", "Basic cmlkZXI6cHc=")))  // rider:pw
  }

  @Test func webdavCreatedIsDoneAndPreconditionFailedIsADuplicate() {
    var (conversation, put) = webdav()
    #expect(conversation.receive(answered(201)) == .finished(.done(platformID: put.url, duplicate: false)))
    (conversation, put) = webdav()
    #expect(conversation.receive(answered(412)) == .finished(.done(platformID: put.url, duplicate: true)))
  }

  @Test func webdavMakesAMissingFolderThenPutsAgain() {
    var (conversation, put) = webdav()
    guard case .send(let mkcol, _) = conversation.receive(answered(409)) else {
      Issue.record("no MKCOL")
      return
    }
    #expect(mkcol.method == "MKCOL" && mkcol.url == "https://cloud.test/dav/Rides/" && mkcol.body.isEmpty)
    #expect(mkcol.headers.map(\.name) == ["Authorization"])
    #expect(conversation.receive(answered(201)) == .send(put, after: 0))
    guard case .finished(.rejected(let again)) = conversation.receive(answered(409)) else {
      Issue.record("a second 409 was not refused")
      return
    }
    #expect(again.contains("after making the folder"))
  }

  @Test func webdavFolderMadeMeanwhileOrWithoutAParent() {
    var (conversation, put) = webdav()
    _ = conversation.receive(answered(409))
    #expect(conversation.receive(answered(405)) == .send(put, after: 0))
    #expect(conversation.receive(answered(204)) == .finished(.done(platformID: put.url, duplicate: false)))
    (conversation, put) = webdav()
    _ = conversation.receive(answered(409))
    guard case .finished(.rejected(let reason)) = conversation.receive(answered(409)) else {
      Issue.record("MKCOL's 409 was not refused")
      return
    }
    #expect(reason.contains("parent does not exist"))
  }

  @Test func webdavSharedJudgementForTheRest() {
    var (conversation, _) = webdav()
    #expect(
      conversation.receive(answered(503, "", [HeaderField("Retry-After", "5")]))
        == .finished(.retry(after: 5, reason: "WebDAV answered HTTP 503")))
    (conversation, _) = webdav()
    guard case .finished(.rejected(let reason)) = conversation.receive(answered(401)) else {
      Issue.record("401 not rejected")
      return
    }
    #expect(reason.contains("refused the key") && !reason.contains("pw"))
  }

  @Test func webdavRefusesAURLThatIsNotHTTP() {
    var conversation = WebDAVUpload(collectionURL: "ftp://cloud.test/Rides", user: "rider", password: "pw")
    guard case .finished(.rejected(let reason)) = conversation.start(job: job, file: file, fileName: "r.fit") else {
      Issue.record("an ftp URL was sent")
      return
    }
    // Once refused, a stray reply changes nothing.
    #expect(conversation.receive(answered(201)) == .finished(.rejected(reason: reason)))
  }
}
