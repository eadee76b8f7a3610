import Testing

@testable import WorkoutWeb

struct HTTPRequestParserTests {
  func parse(_ text: String, headerLimit: Int = 8192, bodyLimit: Int = 16384) throws(HTTPParseError) -> [HTTPRequest] {
    var parser = HTTPRequestParser(headerLimit: headerLimit, bodyLimit: bodyLimit)
    parser.append(Array(text.utf8))
    var requests: [HTTPRequest] = []
    while let request = try parser.next() { requests.append(request) }
    return requests
  }

  @Test func aGetWithItsFieldsAndQuery() throws {
    let requests = try parse("GET /api/live?x=1&name=a%20b+c HTTP/1.1\r\nHost: board:8080\r\nCookie:  a=1 \r\n\r\n")
    #expect(requests.count == 1)
    let request = try #require(requests.first)
    #expect(request.method == "GET")
    #expect(request.path == "/api/live")
    #expect(request.queryValue("x") == "1")
    #expect(request.queryValue("name") == "a b c")
    #expect(request.header("HOST") == "board:8080")
    #expect(request.header("cookie") == "a=1")
    #expect(request.keepsAlive)
  }

  @Test func aPostBodyAndPipelinedRequestsArriveByteByByte() throws {
    let text =
      "POST /api/control HTTP/1.1\r\nHost: b\r\nContent-Length: 19\r\n\r\n{\"command\":\"pause\"}"
      + "GET / HTTP/1.0\r\n\r\n"
    var parser = HTTPRequestParser()
    var requests: [HTTPRequest] = []
    for byte in text.utf8 {
      parser.append([byte])
      while let request = try parser.next() { requests.append(request) }
    }
    #expect(requests.count == 2)
    #expect(String(decoding: requests[0].body, as: UTF8.self) == "{\"command\":\"pause\"}")
    #expect(requests[1].version == "HTTP/1.0")
    #expect(!requests[1].keepsAlive, "HTTP/1.0 closes unless asked to keep alive")
    #expect(parser.pendingBytes == 0)
  }

  @Test func bareLineFeedsAndLeadingBlankLinesAreAccepted() throws {
    let requests = try parse("\r\n\nGET / HTTP/1.1\nHost: b\nConnection: close\n\n")
    #expect(requests.count == 1)
    #expect(requests.first?.keepsAlive == false)
  }

  @Test func connectionOptionsAreTokensOfAList() throws {
    func request(_ version: String, _ fields: String) throws -> HTTPRequest {
      try #require(try parse("GET / \(version)\r\nHost: b\r\n\(fields)\r\n").first)
    }
    #expect(try !request("HTTP/1.1", "Connection: Close\r\n").keepsAlive)
    #expect(try !request("HTTP/1.1", "Connection: Upgrade , close\r\n").keepsAlive)
    #expect(try !request("HTTP/1.1", "Connection: upgrade\r\nConnection: close\r\n").keepsAlive)
    #expect(try request("HTTP/1.1", "Connection: closed\r\n").keepsAlive, "an option, not a substring")
    #expect(try request("HTTP/1.0", "Connection: Keep-Alive\r\n").keepsAlive)
    #expect(try request("HTTP/1.0", "Connection: te,\tkeep-alive\r\n").keepsAlive)
    #expect(try !request("HTTP/1.0", "Connection: keep-alive-not\r\n").keepsAlive)
    #expect(
      try request("HTTP/1.1", "Connection: keep-alive, ,Upgrade\r\n").connectionOptions == ["keep-alive", "upgrade"])
  }

  @Test func blankLinesInAnyMixAreSkippedHoweverTheReadsSplitThem() throws {
    // Found by the fuzzer: "\n\r\n" before a request was read two ways, split or whole.
    let text = "\n\r\n\nGET / HTTP/1.1\r\nHost: b\r\n\r\n"
    #expect(try parse(text).map(\.path) == ["/"])
    for cut in 1..<text.utf8.count {
      var parser = HTTPRequestParser()
      parser.append(Array(text.utf8).prefix(cut))
      var requests = try parser.next().map { [$0] } ?? []
      parser.append(Array(text.utf8).dropFirst(cut))
      while let request = try parser.next() { requests.append(request) }
      #expect(requests.map(\.path) == ["/"], "cut at \(cut)")
    }
  }

  @Test(arguments: [
    ("GET /\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\n\r\n", 400),  // no Host
    ("get / HTTP/1.1\r\nHost: b\r\n\r\n", 400),
    ("GET http://elsewhere/ HTTP/1.1\r\nHost: b\r\n\r\n", 400),
    ("GET / HTTP/2.0\r\nHost: b\r\n\r\n", 505),
    ("GET / FTP/1.0\r\nHost: b\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost: b\r\n folded\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost b\r\n\r\n", 400),
    ("GET / HTTP/1.1\r\nHost : b\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: -1\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 1x\r\n\r\n", 400),
    ("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", 400),
    ("POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501),
    ("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 99999999\r\n\r\n", 413),
  ])
  func badRequestsAreRefusedWithTheirStatus(text: String, status: Int) {
    #expect(throws: HTTPParseError.self) { _ = try parse(text) }
    do {
      _ = try parse(text)
    } catch {
      #expect(error.status == status, "\(text.debugDescription): \(error)")
    }
  }

  @Test func aHeaderBeyondTheLimitIsRefusedWithoutWaitingForItsEnd() throws {
    var parser = HTTPRequestParser(headerLimit: 256)
    parser.append(Array("GET / HTTP/1.1\r\nHost: b\r\nX: ".utf8))
    #expect(try parser.next() == nil)
    parser.append([UInt8](repeating: UInt8(ascii: "a"), count: 300))
    #expect(throws: HTTPParseError.headerTooLarge(limit: 256)) { _ = try parser.next() }
  }

  @Test func anIncompleteBodyWaits() throws {
    var parser = HTTPRequestParser()
    parser.append(Array("POST /api/pair HTTP/1.1\r\nHost: b\r\nContent-Length: 10\r\n\r\n12345".utf8))
    #expect(try parser.next() == nil)
    parser.append(Array("67890".utf8))
    #expect(try parser.next()?.body.count == 10)
  }

  @Test func responsesCarryTheirLengthAndTheGuardingFields() {
    let response = HTTPResponse.error(403, "refused \"x\" <script>")
    let text = String(decoding: response.serialized(keepAlive: false), as: UTF8.self)
    #expect(text.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
    #expect(text.contains("Content-Length: \(response.body.count)\r\n"))
    #expect(text.contains("Connection: close\r\n\r\n"))
    #expect(text.contains("X-Frame-Options: DENY"))
    #expect(text.contains("Content-Security-Policy: default-src 'self'"))
    #expect(text.hasSuffix("{\"error\":\"refused \\\"x\\\" \\u003cscript>\"}"))
  }

  /// RFC 9110 §9.3.2: HEAD gets GET's fields, its Content-Length included, and no body.
  @Test func aHeadAnswerIsTheGetAnswersHeadWithoutItsBody() {
    let response = HTTPResponse.json(200, "{\"a\":1}")
    let get = response.serialized(keepAlive: true)
    let head = response.serialized(keepAlive: true, method: "HEAD")
    #expect(get == head + Array("{\"a\":1}".utf8))
    #expect(String(decoding: head, as: UTF8.self).contains("Content-Length: 7\r\n"))
  }

  @Test func anEventPutsEachLineOfItsDataOnADataLine() {
    let event = String(decoding: HTTPResponse.event("a\nb", name: "status", id: "7"), as: UTF8.self)
    #expect(event == "event: status\nid: 7\ndata: a\ndata: b\n\n")
  }
}
