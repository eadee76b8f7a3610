/// A response as the server writes it: status, fields, body. Every response carries the fields
/// that keep a phone's browser from caching live figures or framing the page elsewhere.
public struct HTTPResponse: Sendable {
  public var status: Int
  public var headers: [(name: String, value: String)]
  public var body: [UInt8]

  public init(status: Int, contentType: String? = nil, body: [UInt8] = [], headers: [(String, String)] = []) {
    self.status = status
    self.body = body
    self.headers = headers.map { (name: $0.0, value: $0.1) }
    if let contentType { self.headers.insert((name: "Content-Type", value: contentType), at: 0) }
  }

  public static func text(_ status: Int, _ text: String) -> HTTPResponse {
    HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array((text + "\n").utf8))
  }

  public static func json(_ status: Int, _ json: String, headers: [(String, String)] = []) -> HTTPResponse {
    HTTPResponse(status: status, contentType: "application/json", body: Array(json.utf8), headers: headers)
  }

  /// {"error": text}, escaped.
  public static func error(_ status: Int, _ text: String, headers: [(String, String)] = []) -> HTTPResponse {
    json(status, "{\"error\":\(jsonString(text))}", headers: headers)
  }

  /// The status line's reason phrase (RFC 9110 §15).
  public static func reason(_ status: Int) -> String {
    switch status {
    case 200: "OK"
    case 204: "No Content"
    case 301: "Moved Permanently"
    case 303: "See Other"
    case 304: "Not Modified"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 409: "Conflict"
    case 410: "Gone"
    case 413: "Content Too Large"
    case 415: "Unsupported Media Type"
    case 421: "Misdirected Request"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 501: "Not Implemented"
    case 503: "Service Unavailable"
    case 505: "HTTP Version Not Supported"
    default: "Status"
    }
  }

  /// The fields every response has: no caching of live data, no framing, no sniffing, and a
  /// content security policy that lets the page run only its own scripts (no inline, no CDN).
  public static let standardHeaders: [(name: String, value: String)] = [
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    (
      "Content-Security-Policy",
      "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'"
    ),
  ]

  /// The status line, the fields (with Content-Length and Connection) and the body.
  /// `method`: the request's; a HEAD's answer is the GET's head, without its body (RFC 9110
  /// §9.3.2: the Content-Length is the body's a GET would get).
  public func serialized(keepAlive: Bool, method: String = "GET") -> [UInt8] {
    head(contentLength: body.count, keepAlive: keepAlive) + (method == "HEAD" ? [] : body)
  }

  /// The status line and the fields, for a body of `contentLength` bytes sent after it; nil:
  /// a body sent in chunks as it is made (`chunk(_:)`), its length unknown until its end.
  public func head(contentLength: Int?, keepAlive: Bool) -> [UInt8] {
    var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
    for field in headers { head += "\(field.name): \(field.value)\r\n" }
    for field in Self.standardHeaders where !headers.contains(where: { $0.name == field.name }) {
      head += "\(field.name): \(field.value)\r\n"
    }
    head += contentLength.map { "Content-Length: \($0)\r\n" } ?? "Transfer-Encoding: chunked\r\n"
    head += keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
    return Array(head.utf8)
  }

  /// One chunk of a body sent in chunks (RFC 9112 §7.1): its size in hex, CRLF, the bytes,
  /// CRLF. No bytes: the last chunk, and the empty trailer after it, which say the body is
  /// whole; a body that ends without them is one the client knows was cut short.
  public static func chunk(_ bytes: [UInt8]) -> [UInt8] {
    Array((String(bytes.count, radix: 16) + "\r\n").utf8) + bytes + [13, 10]
  }

  /// The head of a server-sent event stream (HTML Living Standard §9.2): no length, the
  /// connection closes when the stream ends.
  public static func eventStreamHead() -> [UInt8] {
    var head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    for field in standardHeaders { head += "\(field.name): \(field.value)\r\n" }
    head += "Connection: close\r\n\r\n"
    return Array(head.utf8)
  }

  /// One event: `event:` and `id:` lines if given, the data on `data:` lines (one per line of
  /// it, as the format requires), and the blank line that ends it.
  public static func event(_ data: String, name: String? = nil, id: String? = nil) -> [UInt8] {
    var text = ""
    if let name { text += "event: \(name)\n" }
    if let id { text += "id: \(id)\n" }
    for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
    return Array((text + "\n").utf8)
  }
}

/// A JSON string literal for `text` (RFC 8259 §7).
public func jsonString(_ text: String) -> String {
  var out = "\""
  for scalar in text.unicodeScalars {
    switch scalar {
    case "\"": out += "\\\""
    case "\\": out += "\\\\"
    case "\n": out += "\\n"
    case "\r": out += "\\r"
    case "\t": out += "\\t"
    case "<": out += "\\u003c"  // never "</script>" in a page
    default:
      if scalar.value < 0x20 {
        let hex = String(scalar.value, radix: 16)
        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      } else {
        out.unicodeScalars.append(scalar)
      }
    }
  }
  return out + "\""
}
