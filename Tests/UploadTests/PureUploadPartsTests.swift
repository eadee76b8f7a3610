import Testing

@testable import UploadHTTP
@testable import WorkoutUpload

struct PureUploadPartsTests {
  @Test func basicAuthorizationIsBase64OfUserColonPassword() {
    // RFC 7617 §2's example.
    #expect(
      BasicAuthorization.header(user: "Aladdin", password: "open sesame")?.value == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
    )
    #expect(BasicAuthorization.header(user: "a:b", password: "x") == nil)
    // RFC 4648 §10's vectors.
    let vectors = [
      "": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=", "foobar": "Zm9vYmFy",
    ]
    for (text, encoded) in vectors { #expect(BasicAuthorization.base64(Array(text.utf8)) == encoded) }
  }

  @Test func aPathSegmentKeepsOnlyUnreservedCharacters() {
    #expect(PercentEncoding.encoded("2026-12-07 ride #1/ü.fit") == "2026-12-07%20ride%20%231%2F%C3%BC.fit")
    #expect(PercentEncoding.encoded("i12345") == "i12345")
  }

  @Test func theThreeHTTPDateFormsAreTheSameInstant() {
    // RFC 9110 §5.6.7's example, 1994-11-06T08:49:37Z.
    #expect(HTTPDate.seconds("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
    #expect(HTTPDate.seconds("Sunday, 06-Nov-94 08:49:37 GMT") == 784_111_777)
    #expect(HTTPDate.seconds("Sun Nov  6 08:49:37 1994") == 784_111_777)
    #expect(HTTPDate.seconds("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
    #expect(HTTPDate.seconds("Tue, 29 Feb 2028 23:59:59 GMT") == 1_835_481_599)
    for bad in [
      "", "120", "Sun, 06 Nov 1994 08:49:37 CET", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:00:00 GMT",
    ] {
      #expect(HTTPDate.seconds(bad) == nil, "\(bad)")
    }
  }

  @Test func aFormHasEachPartBetweenBoundariesAndEndsWithTheClosingOne() {
    let form = MultipartFormData([
      .init(name: "name", content: Array("Morning ride".utf8)),
      .init(
        name: "file", fileName: "ride \"7\".fit", contentType: "application/octet-stream", content: [0, 1, 2, 13, 10]),
    ])
    let b = form.boundary
    let expected =
      Array(
        "--\(b)\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nMorning ride\r\n--\(b)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"ride %227%22.fit\"\r\nContent-Type: application/octet-stream\r\n\r\n"
          .utf8) + [0, 1, 2, 13, 10] + Array("\r\n--\(b)--\r\n".utf8)
    #expect(form.body == expected)
    #expect(form.contentType == "multipart/form-data; boundary=\(b)")
    #expect(b.count <= 70 && b.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" })
  }

  @Test func theBoundaryIsNeverInAPart() {
    // The first candidate depends on the first 64 KiB only: a part that holds it after them
    // makes the form take the next.
    let head = [UInt8](repeating: 0x55, count: 65_536)
    let first = MultipartFormData([.init(name: "file", content: head)]).boundary
    let holding = head + Array("--\(first)".utf8)
    let form = MultipartFormData([.init(name: "file", content: holding)])
    #expect(form.boundary != first)
    #expect(!MultipartFormData.occurs(Array("--\(form.boundary)".utf8), in: holding))
    #expect(MultipartFormData.occurs(Array("--\(first)".utf8), in: holding))
  }

  @Test func theJudgementOfEveryKindOfAnswer() {
    func judged(_ status: Int, _ headers: [HeaderField] = [], _ body: String = "") -> ReplyJudgement {
      ReplyJudgement(.answered(status: status, headers: headers, body: Array(body.utf8)), platform: "P")
    }
    #expect(judged(201, [], "{}") == .accepted(status: 201, headers: [], body: Array("{}".utf8)))
    #expect(
      judged(401, [], "bad key")
        == .finished(.rejected(reason: "P refused the key (HTTP 401): check the credentials in the config: bad key")))
    guard case .finished(.rejected(let forbidden)) = judged(403) else { Issue.record("403"); return }
    #expect(forbidden.contains("refused the key"))
    #expect(
      judged(429, [HeaderField("retry-after", " 120 ")])
        == .finished(.retry(after: 120, reason: "P is rate limiting (HTTP 429)")))
    let dated = [
      HeaderField("Retry-After", "Sun, 06 Nov 1994 08:50:37 GMT"), HeaderField("Date", "Sun, 06 Nov 1994 08:49:37 GMT"),
    ]
    #expect(judged(503, dated) == .finished(.retry(after: 60, reason: "P answered HTTP 503")))
    // A date and no Date to count from: the uploader's own backoff.
    #expect(judged(429, [dated[0]]) == .finished(.retry(after: nil, reason: "P is rate limiting (HTTP 429)")))
    #expect(
      judged(500, [], "  oops\n\n now ") == .finished(.retry(after: nil, reason: "P answered HTTP 500: oops now")))
    #expect(
      judged(422, [], #"{"error":"Name is too long"}"#)
        == .finished(.rejected(reason: #"P refused the upload (HTTP 422): {"error":"Name is too long"}"#)))
    guard case .finished(.rejected(let redirect)) = judged(308, [HeaderField("Location", "https://x/y")]) else {
      Issue.record("308")
      return
    }
    #expect(redirect.contains("to https://x/y"))
    #expect(
      ReplyJudgement(.unreachable("Connection refused"), platform: "P")
        == .finished(.retry(after: nil, reason: "P unreachable: Connection refused")))
    #expect(ReplyJudgement.platformWords(Array(repeating: UInt8(ascii: "x"), count: 5000)).count == 200)
  }
}

/// The frame between the uploader and its request's process: what goes in comes out.
struct UploadRequestFrameTests {
  @Test func aRequestAndItsRepliesCrossWhole() throws {
    let request = PlatformRequest(
      method: "POST", url: "https://intervals.icu/api/v1/athlete/0/activities",
      headers: [HeaderField("Authorization", "Basic QVBJX0tFWTprM3k="), HeaderField("X-Empty", "")],
      body: [0, 10, 13, 255] + Array("{\n}".utf8))
    let settings = PlatformHTTPClient.Settings(caFile: "/etc/ca.pem", lowSpeedSeconds: 7, replyLimit: 1000)
    let (read, readSettings) = try UploadRequestFrame.request(
      try UploadRequestFrame.request(request, settings: settings))
    #expect(read == request)
    #expect(readSettings == settings)
    for reply in [
      PlatformReply.answered(status: 201, headers: [HeaderField("Content-Type", "a/b")], body: [10, 0, 10]),
      .unreachable("Couldn't connect to server"),
    ] {
      #expect(try UploadRequestFrame.reply(try UploadRequestFrame.reply(reply)) == reply)
    }
    var cut = try UploadRequestFrame.reply(PlatformReply.answered(status: 200, headers: [], body: [1, 2, 3]))
    cut.removeLast()
    #expect(throws: UploadRequestFrame.Problem.self) { try UploadRequestFrame.reply(cut) }
  }
}
