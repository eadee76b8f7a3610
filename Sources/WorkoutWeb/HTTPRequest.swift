/// One HTTP/1.1 request as the board's web server takes it (RFC 9112): the request line, the
/// header fields (names lower-cased, in order) and a body of `Content-Length` bytes. No chunked
/// request bodies and no request over the limits: a phone's page sends small JSON.
public struct HTTPRequest: Sendable, Hashable {
  public var method: String
  /// The request target's path, as sent ("/api/live"); percent-escapes are not decoded (no
  /// route has any).
  public var path: String
  /// The query string after "?", if any.
  public var query: String?
  /// "HTTP/1.1" or "HTTP/1.0".
  public var version: String
  public var headers: [(name: String, value: String)]
  public var body: [UInt8]

  public init(
    method: String, path: String, query: String? = nil, version: String = "HTTP/1.1",
    headers: [(name: String, value: String)] = [], body: [UInt8] = []
  ) {
    self.method = method
    self.path = path
    self.query = query
    self.version = version
    self.headers = headers
    self.body = body
  }

  /// The first field named `name` (case-insensitive, RFC 9110 §5.1).
  public func header(_ name: String) -> String? {
    let wanted = name.lowercased()
    return headers.first { $0.name == wanted }?.value
  }

  /// The connection stays open after the response: HTTP/1.1 unless "Connection: close",
  /// HTTP/1.0 only with "Connection: keep-alive" (RFC 9112 §9.3).
  public var keepsAlive: Bool {
    let options = connectionOptions
    if version == "HTTP/1.0" { return options.contains("keep-alive") }
    return !options.contains("close")
  }

  /// The Connection fields' options, lower-cased: a comma-separated list of tokens, compared
  /// case-insensitively, which may be split over several fields (RFC 9110 §7.6.1, §5.3).
  /// "close" is an option, not a substring: "Connection: closed" closes nothing.
  var connectionOptions: [String] {
    var options: [String] = []
    for field in headers where field.name == "connection" {
      for item in field.value.lowercased().split(separator: ",") {
        let option = trimmingSpacesAndTabs(item)
        if !option.isEmpty { options.append(String(option)) }
      }
    }
    return options
  }

  /// A query parameter's value ("a=1&b=2"), with "+" and percent-escapes decoded.
  public func queryValue(_ name: String) -> String? {
    guard let query else { return nil }
    for pair in query.split(separator: "&") {
      let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      if parts.first.map(String.init) == name { return parts.count > 1 ? percentDecoded(String(parts[1])) : "" }
    }
    return nil
  }

  public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
    lhs.method == rhs.method && lhs.path == rhs.path && lhs.query == rhs.query && lhs.version == rhs.version
      && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
      && lhs.body == rhs.body
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(method)
    hasher.combine(path)
    hasher.combine(body)
  }
}

/// "a%20b+c" -> "a b c"; an escape that is not two hex digits is kept as it is.
public func percentDecoded(_ text: String) -> String {
  var bytes: [UInt8] = []
  var iterator = Array(text.utf8)[...]
  while let byte = iterator.popFirst() {
    if byte == UInt8(ascii: "+") {
      bytes.append(UInt8(ascii: " "))
    } else if byte == UInt8(ascii: "%"), iterator.count >= 2,
      let high = hexValue(iterator[iterator.startIndex]),
      let low = hexValue(iterator[iterator.startIndex + 1])
    {
      bytes.append(high << 4 | low)
      iterator = iterator.dropFirst(2)
    } else {
      bytes.append(byte)
    }
  }
  return String(decoding: bytes, as: UTF8.self)
}

/// `text` without the spaces and tabs around it (RFC 9110 §5.6.3, OWS).
func trimmingSpacesAndTabs(_ text: Substring) -> Substring {
  var rest = text
  while let first = rest.first, first == " " || first == "\t" { rest = rest.dropFirst() }
  while let last = rest.last, last == " " || last == "\t" { rest = rest.dropLast() }
  return rest
}

private func hexValue(_ byte: UInt8) -> UInt8? {
  switch byte {
  case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
  case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
  case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
  default: nil
  }
}

/// Why bytes are not a request this server takes; each names the status it is answered with.
public enum HTTPParseError: Error, Sendable, Hashable, CustomStringConvertible {
  /// Not HTTP: a bad request line, a field without a colon, a bad Content-Length (400).
  case malformed(String)
  /// The request line and fields together beyond the limit (431, RFC 6585 §5).
  case headerTooLarge(limit: Int)
  /// A body longer than the limit (413).
  case bodyTooLarge(limit: Int)
  /// Transfer-Encoding on a request (501: this server reads Content-Length bodies only).
  case transferEncoding
  /// Not HTTP/1.0 or HTTP/1.1 (505).
  case version(String)

  public var status: Int {
    switch self {
    case .malformed: 400
    case .headerTooLarge: 431
    case .bodyTooLarge: 413
    case .transferEncoding: 501
    case .version: 505
    }
  }

  public var description: String {
    switch self {
    case .malformed(let what): "malformed request: \(what)"
    case .headerTooLarge(let limit): "request header over \(limit) bytes"
    case .bodyTooLarge(let limit): "request body over \(limit) bytes"
    case .transferEncoding: "Transfer-Encoding is not accepted on requests; send Content-Length"
    case .version(let version): "HTTP version \"\(version.prefix(20))\" is not supported"
    }
  }
}

/// Takes a connection's bytes as they arrive and hands out whole requests: parsing apart from
/// the socket (as gpsd's `gps_unpack` is apart from its reads), so it is tested, and fuzzed,
/// on bytes alone. After an error the connection is answered and closed: the parser is not
/// used again.
public struct HTTPRequestParser: Sendable {
  public let headerLimit: Int
  public let bodyLimit: Int
  private var buffer: [UInt8] = []

  public init(headerLimit: Int = 8192, bodyLimit: Int = 16384) {
    self.headerLimit = headerLimit
    self.bodyLimit = bodyLimit
  }

  /// Bytes received and not yet part of a request handed out.
  public var pendingBytes: Int { buffer.count }

  public mutating func append(_ bytes: some Sequence<UInt8>) {
    buffer.append(contentsOf: bytes)
  }

  /// The next whole request, or nil until more bytes arrive.
  public mutating func next() throws(HTTPParseError) -> HTTPRequest? {
    // RFC 9112 §2.2: empty lines (CRLF or a bare LF, in any mix) before a request line are
    // ignored, however the reads split them (the fuzzer found "\n\r\n" handled two ways).
    while true {
      if buffer.starts(with: [13, 10]) {
        buffer.removeFirst(2)
      } else if buffer.first == 10 {
        buffer.removeFirst()
      } else {
        break
      }
    }
    guard let end = headerEnd() else {
      if buffer.count > headerLimit { throw .headerTooLarge(limit: headerLimit) }
      return nil
    }
    guard end.fieldsEnd <= headerLimit else { throw .headerTooLarge(limit: headerLimit) }
    var request = try Self.parseHead(Array(buffer[0..<end.fieldsEnd]))
    if request.header("transfer-encoding") != nil { throw .transferEncoding }
    var length = 0
    let lengths = request.headers.filter { $0.name == "content-length" }.map(\.value)
    if let first = lengths.first {
      // RFC 9112 §6.3: differing lengths (request smuggling) are an error.
      guard lengths.allSatisfy({ $0 == first }), first.utf8.count <= 9, let value = Int(first), value >= 0,
        first.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 })
      else { throw .malformed("Content-Length \"\(first.prefix(20))\"") }
      length = value
    }
    guard length <= bodyLimit else { throw .bodyTooLarge(limit: bodyLimit) }
    guard buffer.count >= end.bodyStart + length else { return nil }
    request.body = Array(buffer[end.bodyStart..<end.bodyStart + length])
    buffer.removeFirst(end.bodyStart + length)
    return request
  }

  /// Where the fields end (before the blank line) and the body starts. Lines end in CRLF, or a
  /// bare LF (RFC 9112 §2.2 lets a recipient accept it).
  private func headerEnd() -> (fieldsEnd: Int, bodyStart: Int)? {
    var index = 0
    while index < buffer.count {
      if buffer[index] == 10 {
        if index + 1 < buffer.count, buffer[index + 1] == 10 { return (index, index + 2) }
        if index + 2 < buffer.count, buffer[index + 1] == 13, buffer[index + 2] == 10 { return (index, index + 3) }
      }
      index += 1
      if index > headerLimit + 4 { return nil }
    }
    return nil
  }

  private static func parseHead(_ bytes: [UInt8]) throws(HTTPParseError) -> HTTPRequest {
    var lines = bytes.split(separator: 10, omittingEmptySubsequences: false).map { line in
      line.last == 13 ? line.dropLast() : line
    }
    guard !lines.isEmpty else { throw .malformed("no request line") }
    let requestLine = lines.removeFirst()
    let parts = requestLine.split(separator: 32, omittingEmptySubsequences: false)
    guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
      throw .malformed("request line \"\(String(decoding: requestLine.prefix(60), as: UTF8.self))\"")
    }
    let method = String(decoding: parts[0], as: UTF8.self)
    guard method.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }) else { throw .malformed("method \"\(method.prefix(20))\"") }
    let version = String(decoding: parts[2], as: UTF8.self)
    guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
      if version.hasPrefix("HTTP/") { throw .version(version) }
      throw .malformed("version \"\(version.prefix(20))\"")
    }
    let target = parts[1]
    guard target.first == UInt8(ascii: "/"), target.allSatisfy({ $0 > 32 && $0 < 127 }) else {
      throw .malformed("request target (origin-form \"/...\" only)")
    }
    var path = String(decoding: target, as: UTF8.self)
    var query: String?
    if let mark = path.firstIndex(of: "?") {
      query = String(path[path.index(after: mark)...])
      path = String(path[..<mark])
    }
    var headers: [(name: String, value: String)] = []
    for line in lines {
      // RFC 9112 §5.2: obsolete line folding is rejected.
      if line.first == 32 || line.first == 9 { throw .malformed("folded header line") }
      guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else {
        throw .malformed("header line without a name and a colon")
      }
      let name = line[line.startIndex..<colon]
      // A token (RFC 9110 §5.6.2): no whitespace before the colon.
      guard name.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: ":") }) else {
        throw .malformed("header name")
      }
      var value = line[(colon + 1)...]
      while value.first == 32 || value.first == 9 { value = value.dropFirst() }
      while value.last == 32 || value.last == 9 { value = value.dropLast() }
      guard !value.contains(0), !value.contains(13) else { throw .malformed("control character in a header value") }
      headers.append((String(decoding: name, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self)))
    }
    if version == "HTTP/1.1" && !headers.contains(where: { $0.name == "host" }) {
      // RFC 9112 §3.2: a 1.1 request without Host is answered 400.
      throw .malformed("HTTP/1.1 request without Host")
    }
    return HTTPRequest(method: method, path: path, query: query, version: version, headers: headers)
  }
}
