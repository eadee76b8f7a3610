/// A multipart/form-data body (RFC 7578), as platforms take an uploaded file: each part a
/// named field, a file's part with its file name and media type.
public struct MultipartFormData: Sendable, Hashable {
  public struct Part: Sendable, Hashable {
    public var name: String
    public var fileName: String?
    public var contentType: String?
    public var content: [UInt8]

    public init(name: String, fileName: String? = nil, contentType: String? = nil, content: [UInt8]) {
      self.name = name
      self.fileName = fileName
      self.contentType = contentType
      self.content = content
    }
  }

  public let parts: [Part]
  /// A delimiter found in no part (RFC 2046 §5.1.1: 1 to 70 characters, here letters, digits
  /// and "-"), made from the parts themselves: the same parts give the same body.
  public let boundary: String

  public init(_ parts: [Part]) {
    self.parts = parts
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a over the contents: a delimiter unlikely in them
    for part in parts {
      for byte in part.content.prefix(65_536) { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    }
    var attempt = 0
    var candidate = ""
    repeat {
      candidate = "workoutd-" + String(hash &+ UInt64(attempt), radix: 16) + "-" + String(attempt)
      attempt += 1
    } while parts.contains { Self.occurs(Array(("--" + candidate).utf8), in: $0.content) }
    boundary = candidate
  }

  /// The request's Content-Type.
  public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

  /// The body: each part after "--boundary", its headers, a blank line and its content; then
  /// "--boundary--" (RFC 7578 §4.1, RFC 2046 §5.1.1; lines end in CRLF).
  public var body: [UInt8] {
    var body: [UInt8] = []
    body.reserveCapacity(parts.reduce(0) { $0 + $1.content.count + 256 })
    for part in parts {
      var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(part.name))\""
      if let fileName = part.fileName { head += "; filename=\"\(Self.quoted(fileName))\"" }
      head += "\r\n"
      if let contentType = part.contentType { head += "Content-Type: \(contentType)\r\n" }
      head += "\r\n"
      body += Array(head.utf8)
      body += part.content
      body += Array("\r\n".utf8)
    }
    body += Array("--\(boundary)--\r\n".utf8)
    return body
  }

  /// A name inside a quoted-string, with `"`, CR and LF percent-encoded as browsers send them
  /// (RFC 7578 §2, by reference to HTML's form submission).
  static func quoted(_ name: String) -> String {
    var out = ""
    for scalar in name.unicodeScalars {
      switch scalar {
      case "\"": out += "%22"
      case "\r": out += "%0D"
      case "\n": out += "%0A"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out
  }

  static func occurs(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
    guard let first = needle.first, haystack.count >= needle.count else { return false }
    var index = 0
    let last = haystack.count - needle.count
    while index <= last {
      if haystack[index] == first && haystack[index..<index + needle.count].elementsEqual(needle) { return true }
      index += 1
    }
    return false
  }
}
