import Foundation
import Testing

@testable import WorkoutUpload

/// Mon, 07 Dec 2026 03:40:10 GMT: the attempts' wall clock.
let now: Double = 1_796_614_810
let app = StravaApp(clientID: "4711", clientSecret: "app-secret")
let freshTokens = StravaTokens(accessToken: "access-1", expiresAt: now + 6 * 3600, refreshToken: "refresh-1")
let ride: [UInt8] = Array("a FIT file's bytes".utf8) + [0, 0xFF, 0x0D, 0x0A]
let queuedJob = UploadJob(sessionID: 42, target: .strava, createdAt: now - 600)

func json(_ text: String) -> [UInt8] { Array(text.utf8) }

func answer(_ status: Int, _ body: String = "", headers: [HeaderField] = []) -> PlatformReply {
  .answered(status: status, headers: headers, body: json(body))
}

let processing =
  #"{"id":16486788,"id_str":"16486788","external_id":"x","error":null,"#
  + #""status":"Your activity is still being processed.","activity_id":null}"#
let ready =
  #"{"id":16486788,"id_str":"16486788","error":null,"status":"Your activity is ready.","#
  + #""activity_id":9876543210}"#
let refreshed =
  #"{"token_type":"Bearer","access_token":"access-2","expires_at":1796636410,"#
  + #""expires_in":21600,"refresh_token":"refresh-2"}"#

extension UploadStep {
  var request: PlatformRequest? {
    if case .send(let request, _) = self { return request }
    return nil
  }
  var after: Double? {
    if case .send(_, let after) = self { return after }
    return nil
  }
}

extension PlatformRequest {
  func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
  var text: String { String(decoding: body, as: UTF8.self) }
}

struct StravaUploadTests {
  @Test func aRideIsPostedThenPolledAtStravasPaceUntilItNamesTheActivity() throws {
    var strava = StravaUpload(app: app, tokens: freshTokens, now: now)
    let post = strava.start(job: queuedJob, file: ride, fileName: "ride-42.fit")
    let request = try #require(post.request)
    #expect(post.after == 0)
    #expect(request.method == "POST" && request.url == "https://www.strava.com/api/v3/uploads")
    #expect(request.header("Authorization") == "Bearer access-1")
    let contentType = try #require(request.header("Content-Type"))
    #expect(contentType.hasPrefix("multipart/form-data; boundary="))
    let boundary = String(contentType.dropFirst("multipart/form-data; boundary=".count))
    let expected =
      Array(
        ("--\(boundary)\r\nContent-Disposition: form-data; name=\"data_type\"\r\n\r\nfit\r\n"
          + "--\(boundary)\r\nContent-Disposition: form-data; name=\"external_id\"\r\n\r\n"
          + "workoutd-session-42-1796614210\r\n"
          + "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"ride-42.fit\"\r\n"
          + "Content-Type: application/octet-stream\r\n\r\n").utf8) + ride + Array("\r\n--\(boundary)--\r\n".utf8)
    #expect(request.body == expected)

    #expect(strava.receive(answer(201, processing)) == .keep(.platformUploadID("16486788")))
    let firstPoll = strava.kept()
    #expect(firstPoll.request?.method == "GET")
    #expect(firstPoll.request?.url == "https://www.strava.com/api/v3/uploads/16486788")
    #expect(firstPoll.request?.header("Authorization") == "Bearer access-1")
    #expect(firstPoll.after == 2)
    var afters: [Double] = []
    for _ in 0..<3 {
      let step = strava.receive(answer(200, processing))
      #expect(step.request?.url == "https://www.strava.com/api/v3/uploads/16486788")
      afters.append(try #require(step.after))
    }
    #expect(afters == [2, 4, 8])
    #expect(strava.receive(answer(200, ready)) == .finished(.done(platformID: "9876543210", duplicate: false)))
  }

  @Test func theExternalIDIsTheSameOnEveryAttemptInTheSharedMultipartForm() throws {
    var first = StravaUpload(app: app, tokens: freshTokens, now: now)
    var again = StravaUpload(app: app, tokens: freshTokens, now: now + 3600)
    var sending = queuedJob
    sending.state = .sending
    sending.attempts = 3
    let one = try #require(first.start(job: queuedJob, file: ride, fileName: "r.fit").request)
    let two = try #require(again.start(job: sending, file: ride, fileName: "r.fit").request)
    #expect(one.body == two.body && one.headers == two.headers)
    #expect(StravaUpload.externalID(for: sending) == "workoutd-session-42-1796614210")

    // The shared multipart form, whose boundary avoids the file (PureUploadPartsTests).
    let form = MultipartFormData([
      .init(name: "data_type", content: Array("fit".utf8)),
      .init(name: "external_id", content: Array("workoutd-session-42-1796614210".utf8)),
      .init(name: "file", fileName: "r.fit", contentType: "application/octet-stream", content: ride),
    ])
    #expect(one.header("Content-Type") == form.contentType && one.body == form.body)
  }

  @Test func anExpiringTokenIsRefreshedAndKeptBeforeItIsUsed() throws {
    // Within Strava's hour of expiring: refreshed first.
    let expiring = StravaTokens(accessToken: "access-1", expiresAt: now + 3599, refreshToken: "refresh-1")
    var strava = StravaUpload(app: app, tokens: expiring, now: now)
    let refresh = try #require(strava.start(job: queuedJob, file: ride, fileName: "r.fit").request)
    #expect(refresh.method == "POST" && refresh.url == "https://www.strava.com/oauth/token")
    #expect(refresh.header("Content-Type") == "application/x-www-form-urlencoded")
    #expect(refresh.text == "client_id=4711&client_secret=app-secret&grant_type=refresh_token&refresh_token=refresh-1")
    #expect(refresh.header("Authorization") == nil)

    let keep = strava.receive(answer(200, refreshed))
    guard case .keep(.credentials(let bytes)) = keep else {
      Issue.record("expected the new tokens kept, got \(keep)")
      return
    }
    let kept = try StravaTokens(fileContent: bytes)
    #expect(kept == StravaTokens(accessToken: "access-2", expiresAt: 1_796_636_410, refreshToken: "refresh-2"))
    #expect(strava.tokens == kept)
    let post = try #require(strava.kept().request)
    #expect(post.url.hasSuffix("/uploads") && post.header("Authorization") == "Bearer access-2")

    // An hour and a second ahead: used as it is.
    let good = StravaTokens(accessToken: "access-1", expiresAt: now + 3601, refreshToken: "refresh-1")
    var unrefreshed = StravaUpload(app: app, tokens: good, now: now)
    #expect(unrefreshed.start(job: queuedJob, file: ride, fileName: "r.fit").request?.url.hasSuffix("/uploads") == true)
  }

  @Test func aJobFoundWaitingPollsAtOnceWithoutSendingTheFile() throws {
    let waiting = UploadJob(
      sessionID: 42, target: .strava, state: .waiting, attempts: 1, platformUploadID: "555", createdAt: now - 600)
    var strava = StravaUpload(app: app, tokens: freshTokens, now: now)
    let step = strava.start(job: waiting, file: ride, fileName: "r.fit")
    #expect(step.request?.method == "GET" && step.request?.url == "https://www.strava.com/api/v3/uploads/555")
    #expect(step.after == 0 && step.request?.body == [])
    #expect(strava.receive(answer(200, ready)) == .finished(.done(platformID: "9876543210", duplicate: false)))

    // Waiting with an expired token: refreshed, kept, then polled at once.
    let stale = StravaTokens(accessToken: "access-1", expiresAt: now - 10, refreshToken: "refresh-1")
    var later = StravaUpload(app: app, tokens: stale, now: now)
    #expect(later.start(job: waiting, file: ride, fileName: "r.fit").request?.url.hasSuffix("/oauth/token") == true)
    guard case .keep(.credentials) = later.receive(answer(200, refreshed)) else {
      Issue.record("expected the tokens kept")
      return
    }
    let poll = later.kept()
    #expect(poll.request?.url.hasSuffix("/uploads/555") == true && poll.after == 0)
  }

  @Test func aDuplicateIsDoneWithTheActivityStravaAlreadyHas() throws {
    for error in [
      "ride-42.fit duplicate of activity 1234567890",
      "ride-42.fit duplicate of <a href='/activities/1234567890' target='_blank'>1234567890</a>",
    ] {
      var strava = StravaUpload(app: app, tokens: freshTokens, now: now)
      _ = strava.start(job: queuedJob, file: ride, fileName: "r.fit")
      _ = strava.receive(answer(201, processing))
      _ = strava.kept()
      let body = try String(
        decoding: JSONEncoder().encode(["error": error, "status": "There was an error"]), as: UTF8.self)
      #expect(strava.receive(answer(200, body)) == .finished(.done(platformID: "1234567890", duplicate: true)))
    }
    // Refused at once, with 400 and the upload's error.
    var strava = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = strava.start(job: queuedJob, file: ride, fileName: "r.fit")
    let refused =
      #"{"id":1,"error":"r.fit duplicate of activity 77","status":"There was an error processing your activity."}"#
    #expect(strava.receive(answer(400, refused)) == .finished(.done(platformID: "77", duplicate: true)))
  }

  @Test func anotherProcessingErrorIsRejectedInStravasWords() throws {
    var strava = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = strava.start(job: queuedJob, file: ride, fileName: "r.fit")
    _ = strava.receive(answer(201, processing))
    _ = strava.kept()
    let body = #"{"id":16486788,"error":"Time information is missing from <b>file</b>.","status":"There was an error"}"#
    #expect(
      strava.receive(answer(200, body))
        == .finished(.rejected(reason: "Strava could not take the ride: Time information is missing from file.")))
  }

  @Test func aRateLimitWaitsForTheWindowStravasHeadersName() throws {
    let date = HeaderField("Date", "Mon, 07 Dec 2026 03:40:10 GMT")
    let limit = HeaderField("X-RateLimit-Limit", "200,2000")
    let fault =
      #"{"message":"Rate Limit Exceeded","errors":[{"resource":"Application","field":"rate limit","code":"exceeded"}]}"#
    // The 15-minute window is spent: wait until 03:45:00.
    var strava = StravaUpload(app: app, tokens: freshTokens, now: now - 7)
    _ = strava.start(job: queuedJob, file: ride, fileName: "r.fit")
    let quarter = strava.receive(
      answer(429, fault, headers: [date, limit, HeaderField("X-RateLimit-Usage", "201,900")]))
    #expect(
      quarter
        == .finished(
          .retry(
            after: 290,
            reason: "Strava's rate limit: Rate Limit Exceeded (Application rate limit exceeded)")))
    // The day is spent: wait until midnight UTC.
    var daily = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = daily.start(job: queuedJob, file: ride, fileName: "r.fit")
    let day = daily.receive(answer(429, fault, headers: [date, limit, HeaderField("X-RateLimit-Usage", "12,2000")]))
    #expect(day.retryAfter == Double(20 * 3600 + 19 * 60 + 50))
    // Polls count against the read limit; no Date: the attempt's clock plus the waits so far.
    var polling = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = polling.start(job: queuedJob, file: ride, fileName: "r.fit")
    _ = polling.receive(answer(201, processing))
    _ = polling.kept()  // 2 s
    let read = polling.receive(
      answer(
        429, fault,
        headers: [
          limit, HeaderField("X-RateLimit-Usage", "20,300"), HeaderField("X-ReadRateLimit-Limit", "100,1000"),
          HeaderField("X-ReadRateLimit-Usage", "100,1000"),
        ]))
    #expect(read.retryAfter == Double(20 * 3600 + 19 * 60 + 48))
    // A Retry-After longer than the window is honoured.
    var patient = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = patient.start(job: queuedJob, file: ride, fileName: "r.fit")
    #expect(patient.receive(answer(429, "", headers: [date, HeaderField("Retry-After", "1200")])).retryAfter == 1200)
  }

  @Test func aServerErrorOrNoAnswerIsTriedAgainLater() throws {
    var strava = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = strava.start(job: queuedJob, file: ride, fileName: "r.fit")
    #expect(
      strava.receive(answer(503, "<html>down</html>")) == .finished(.retry(after: nil, reason: "Strava answered 503")))
    var withRetryAfter = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = withRetryAfter.start(job: queuedJob, file: ride, fileName: "r.fit")
    #expect(
      withRetryAfter.receive(answer(500, "", headers: [HeaderField("retry-after", "30")]))
        == .finished(.retry(after: 30, reason: "Strava answered 500")))
    var withRetryDate = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = withRetryDate.start(job: queuedJob, file: ride, fileName: "r.fit")
    let busy = answer(
      503, "",
      headers: [
        HeaderField("Date", "Mon, 07 Dec 2026 03:40:10 GMT"),
        HeaderField("Retry-After", "Mon, 07 Dec 2026 03:42:00 GMT"),
      ])
    #expect(withRetryDate.receive(busy) == .finished(.retry(after: 110, reason: "Strava answered 503")))
    // The connection dropped mid-body: the file may have arrived, so the next attempt sends the
    // same external_id and Strava's duplicate answer proves it.
    var dropped = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = dropped.start(job: queuedJob, file: ride, fileName: "r.fit")
    #expect(
      dropped.receive(.unreachable("connection closed mid-body"))
        == .finished(.retry(after: nil, reason: "Strava unreachable: connection closed mid-body")))
    // Polling: the upload id stays, the next attempt asks again.
    var polling = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = polling.start(job: queuedJob, file: ride, fileName: "r.fit")
    _ = polling.receive(answer(201, processing))
    _ = polling.kept()
    #expect(
      polling.receive(.unreachable("timeout")) == .finished(.retry(after: nil, reason: "Strava unreachable: timeout")))
  }

  @Test func aStaleTokenIsRefreshedOnceThenTheLoginIsRefused() throws {
    let staleFault =
      #"{"message":"Authorization Error","errors":[{"resource":"Athlete","field":"access_token","code":"invalid"}]}"#
    var strava = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = strava.start(job: queuedJob, file: ride, fileName: "r.fit")
    let refresh = try #require(strava.receive(answer(401, staleFault)).request)
    #expect(refresh.url == "https://www.strava.com/oauth/token" && refresh.text.contains("grant_type=refresh_token"))
    guard case .keep(.credentials) = strava.receive(answer(200, refreshed)) else {
      Issue.record("expected the new tokens kept before use")
      return
    }
    let again = try #require(strava.kept().request)
    #expect(again.url.hasSuffix("/uploads") && again.header("Authorization") == "Bearer access-2")
    #expect(
      strava.receive(answer(401, staleFault)) == loginRefused("Authorization Error (Athlete access_token invalid)"))

    // Refused while polling: refreshed, then the same upload polled again at once.
    var polling = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = polling.start(job: queuedJob, file: ride, fileName: "r.fit")
    _ = polling.receive(answer(201, processing))
    _ = polling.kept()
    #expect(polling.receive(answer(401, staleFault)).request?.url.hasSuffix("/oauth/token") == true)
    _ = polling.receive(answer(200, refreshed))
    let poll = polling.kept()
    #expect(poll.request?.url.hasSuffix("/uploads/16486788") == true && poll.after == 0)
  }

  @Test func aRefusedRefreshIsRejectedWithTheLoginAdvice() throws {
    let expired = StravaTokens(accessToken: "access-1", expiresAt: now - 1, refreshToken: "revoked")
    var strava = StravaUpload(app: app, tokens: expired, now: now)
    _ = strava.start(job: queuedJob, file: ride, fileName: "r.fit")
    let fault =
      #"{"message":"Bad Request","errors":[{"resource":"RefreshToken","field":"refresh_token","code":"invalid"}]}"#
    #expect(strava.receive(answer(400, fault)) == loginRefused("Bad Request (RefreshToken refresh_token invalid)"))
    // The token endpoint down is not the login's fault.
    var down = StravaUpload(app: app, tokens: expired, now: now)
    _ = down.start(job: queuedJob, file: ride, fileName: "r.fit")
    #expect(down.receive(answer(502, "")) == .finished(.retry(after: nil, reason: "Strava answered 502")))
  }

  @Test func anUploadStravaForgotIsSentOnceMoreAndALongProcessingIsLeftForLater() throws {
    var strava = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = strava.start(job: queuedJob, file: ride, fileName: "r.fit")
    _ = strava.receive(answer(201, processing))
    _ = strava.kept()
    let resend = try #require(strava.receive(answer(404, #"{"message":"Record Not Found"}"#)).request)
    #expect(resend.method == "POST" && resend.url.hasSuffix("/uploads"))
    #expect(strava.receive(answer(201, processing)) == .keep(.platformUploadID("16486788")))
    _ = strava.kept()
    #expect(
      strava.receive(answer(404, #"{"message":"Record Not Found"}"#))
        == .finished(.rejected(reason: "Strava refused the request: Record Not Found")))

    var slow = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = slow.start(job: queuedJob, file: ride, fileName: "r.fit")
    _ = slow.receive(answer(201, processing))
    var step = slow.kept()
    var afters: [Double] = []
    while let after = step.after {
      afters.append(after)
      step = slow.receive(answer(200, processing))
    }
    #expect(afters == StravaUpload.pollDelays)
    #expect(step == .finished(.retry(after: nil, reason: "Strava is still processing the upload")))
  }

  @Test func aDeletedActivityIsDoneAndNotSentAgain() {
    let deleted = StravaUploadStatus(id: 5, status: "The created activity has been deleted.")
    #expect(StravaUpload.outcome(of: deleted) == .done(platformID: nil, duplicate: false))
    #expect(
      StravaUpload.outcome(of: StravaUploadStatus(id: 5, status: "Your activity is still being processed.")) == nil)
  }

  @Test func aReplyOrKeptOutOfTurnIsRefused() {
    var strava = StravaUpload(app: app, tokens: freshTokens, now: now)
    _ = strava.start(job: queuedJob, file: ride, fileName: "r.fit")
    #expect(strava.kept() == .finished(.rejected(reason: "Strava upload: kept() came when nothing was to keep")))
  }

  @Test func aLocalServerTakesTheSamePaths() throws {
    let fake = StravaServer(tokenURL: "https://127.0.0.1:8443/oauth/token", apiURL: "https://127.0.0.1:8443/api/v3")
    var strava = StravaUpload(app: app, tokens: freshTokens, now: now, server: fake)
    #expect(
      strava.start(job: queuedJob, file: ride, fileName: "r.fit").request?.url
        == "https://127.0.0.1:8443/api/v3/uploads")
  }
}

/// The end of an attempt whose login Strava refused, with Strava's words.
func loginRefused(_ words: String) -> UploadStep {
  .finished(.rejected(reason: "Strava refused the login; run workoutctl upload login strava (\(words))"))
}

extension UploadStep {
  var retryAfter: Double? {
    if case .finished(.retry(let after, _)) = self { return after }
    return nil
  }
}
