import Foundation
import LinuxSupport
import Testing
import WorkoutTestSupport
import WorkoutUpload

@testable import UploadHTTP

/// The client against a fake platform over HTTPS: what it sends and gets back, and how an
/// attempt ends when the certificate, the connection or the server fails it.
@Suite(.serialized) final class PlatformHTTPClientTests {
  let directory: String
  let certificates: TestCertificates
  let server: FakePlatformServer

  init() throws {
    directory = try temporaryDirectory("client")
    certificates = try TestCertificates(in: directory + "/tls")
    server = try FakePlatformServer(
      script: "fake_intervals_icu.py", certificates: certificates, state: directory + "/state",
      arguments: ["--athlete", "i42", "--api-key", "k3y"])
  }

  deinit {
    server.stop()
    try? FileManager.default.removeItem(atPath: directory)
  }

  func upload(_ file: [UInt8], key: String = "k3y") -> PlatformRequest {
    let form = MultipartFormData([.init(name: "file", fileName: "ride.fit", content: file)])
    return PlatformRequest(
      method: "POST", url: server.origin + "/api/v1/athlete/i42/activities",
      headers: [
        BasicAuthorization.header(user: "API_KEY", password: key)!, HeaderField("Content-Type", form.contentType),
      ], body: form.body)
  }

  func client(_ settings: PlatformHTTPClient.Settings? = nil, stop: StopSignal? = nil) -> PlatformHTTPClient {
    PlatformHTTPClient(settings: settings ?? PlatformHTTPClient.Settings(caFile: certificates.caFile), stop: stop)
  }

  @Test func libcurlLoads() {
    guard case .success(let version) = PlatformHTTPClient.load() else {
      Issue.record("libcurl did not load")
      return
    }
    #expect(version.split(separator: ".").count == 3)
  }

  @Test func theReplysStatusHeadersAndBodyComeBack() throws {
    let file = rideFile()
    let reply = client().perform(upload(file))
    guard case .answered(let status, let headers, let body) = reply else {
      Issue.record("no answer: \(reply)")
      return
    }
    #expect(status == 201)
    #expect(reply.header("content-type") == "application/json")
    #expect(headers.contains { $0.name == "Content-Length" && $0.value == String(body.count) })
    #expect(String(decoding: body, as: UTF8.self).contains(#""id": "i1000""#))
    let received = try server.received()
    let digest = try sha256Hex(file, in: directory)
    #expect(received.count == 1 && received.first?["sha256"] as? String == digest)
  }

  @Test func aCertificateFromAnUnknownCAIsRefused() throws {
    let stranger = try TestCertificates(in: directory + "/other", name: "stranger")
    for settings in [PlatformHTTPClient.Settings(caFile: stranger.caFile), PlatformHTTPClient.Settings()] {
      guard case .unreachable(let words) = client(settings).perform(upload(rideFile())) else {
        Issue.record("a certificate of an unknown CA was trusted")
        continue
      }
      #expect(words.lowercased().contains("certificate"), "\(words)")
    }
    #expect(try server.received().isEmpty)
  }

  @Test func aConnectionDroppedMidBodyIsNoAnswer() throws {
    try server.queueFaults(["drop"])
    let reply = client().perform(upload(rideFile(size: 400_000)))
    guard case .unreachable = reply else {
      Issue.record("a dropped connection answered: \(reply)")
      return
    }
    #expect(try server.received().map { $0["complete"] as? Bool } == [false])
  }

  @Test func aSilentServerEndsTheAttemptByTheLowSpeedLimit() throws {
    try server.queueFaults(["silent"])
    let settings = PlatformHTTPClient.Settings(
      caFile: certificates.caFile, lowSpeedBytesPerSecond: 1000, lowSpeedSeconds: 1)
    let reply = client(settings).perform(upload(rideFile(size: 200)))
    guard case .unreachable(let words) = reply else {
      Issue.record("a silent server answered: \(reply)")
      return
    }
    #expect(words.contains("too slow") || words.lowercased().contains("timeout"), "\(words)")
  }

  @Test func theServicesStopAbortsARequestUnderWay() throws {
    try server.queueFaults(["silent"])
    let stop = StopSignal()
    // The stop comes once the server holds the request, so it cannot end the attempt first.
    let record = server.state + "/received.jsonl"
    let stopper = Thread {
      for _ in 0..<400 where !FileManager.default.fileExists(atPath: record) { usleep(25_000) }
      stop.stop()
    }
    stopper.start()
    let reply = client(PlatformHTTPClient.Settings(caFile: certificates.caFile, lowSpeedSeconds: 600), stop: stop)
      .perform(upload(rideFile()))
    #expect(reply == .unreachable("stopped"))
    #expect(try server.received().map { $0["fault"] as? String } == ["silent"])
  }

  @Test func aRedirectIsTheCallersToJudgeNotFollowed() throws {
    // Followed, it would take the Authorization header to that other place.
    try server.queueFaults(["redirect \(server.origin)/elsewhere"])
    let reply = client().perform(upload(rideFile()))
    #expect(reply.header("Location") == server.origin + "/elsewhere")
    guard case .answered(307, _, _) = reply else {
      Issue.record("the redirect was not the reply: \(reply)")
      return
    }
    #expect(try server.received().map { $0["path"] as? String } == ["/api/v1/athlete/i42/activities"])
  }

  @Test func plainHTTPOnlyWhenAllowed() {
    let request = PlatformRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/")
    guard case .unreachable(let words) = client().perform(request) else {
      Issue.record("http was used")
      return
    }
    #expect(words.contains("only https://"))
    // Allowed, it is sent (and the TLS server cannot make sense of it).
    var settings = PlatformHTTPClient.Settings(caFile: certificates.caFile, allowsHTTP: true)
    settings.lowSpeedSeconds = 5
    if case .unreachable(let sent) = client(settings).perform(request) { #expect(!sent.contains("only https://")) }
  }

  @Test func aHeaderWithALineBreakIsNotSent() throws {
    var request = upload(rideFile())
    request.headers.append(HeaderField("X-Note", "a\r\nAuthorization: Basic eHg6eHg="))
    guard case .unreachable(let words) = client().perform(request) else {
      Issue.record("a header with a line break was sent")
      return
    }
    #expect(words.contains("X-Note"))
    #expect(try server.received().isEmpty)
  }

  @Test func headerBlockParsing() {
    let fields = PlatformHTTPClient.headerFields(
      "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 30\r\nX-Long: a\r\n  b\r\nDate:Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n"
    )
    #expect(
      fields == [
        HeaderField("Retry-After", "30"), HeaderField("X-Long", "a b"),
        HeaderField("Date", "Sun, 06 Nov 1994 08:49:37 GMT"),
      ])
    #expect(PlatformHTTPClient.withoutCredentials("http://u:p@h:1/x@y") == "http://h:1/x@y")
  }
}
