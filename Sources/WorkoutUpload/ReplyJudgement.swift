/// What every platform's answer means before the platform's own reading of it: a 2xx is the
/// conversation's to read; the rest ends the attempt the same way for every platform (RFC 9110
/// §15): the network or a busy platform is tried again, a refusal is not.
public enum ReplyJudgement: Sendable, Hashable {
  /// A 2xx: the conversation reads the body (an id, a status).
  case accepted(status: Int, headers: [HeaderField], body: [UInt8])
  /// Anything else, as the attempt's outcome.
  case finished(UploadOutcome)

  /// The platform's words kept in a reason, at most (a job's reason is shown by `workoutctl
  /// uploads` and the phone page, one line).
  static let wordsLimit = 200

  /// Judges `reply` from `platform` (its name, as the reasons say it).
  public init(_ reply: PlatformReply, platform: String) {
    let status: Int
    let headers: [HeaderField]
    let body: [UInt8]
    switch reply {
    case .unreachable(let words):
      self = .finished(.retry(after: nil, reason: "\(platform) unreachable: \(words)"))
      return
    case .answered(let answeredStatus, let answeredHeaders, let answeredBody):
      (status, headers, body) = (answeredStatus, answeredHeaders, answeredBody)
    }
    let words = Self.platformWords(body)
    let said = words.isEmpty ? "" : ": \(words)"
    switch status {
    case 200...299:
      self = .accepted(status: status, headers: headers, body: body)
    case 401, 403:
      self = .finished(
        .rejected(reason: "\(platform) refused the key (HTTP \(status)): check the credentials in the config\(said)"))
    case 429:
      // Too Many Requests (RFC 6585 §4): asked again after the platform's Retry-After.
      self = .finished(
        .retry(after: Self.retryAfter(reply), reason: "\(platform) is rate limiting (HTTP 429)\(said)"))
    case 408, 500...599:
      // A request timeout (RFC 9110 §15.5.9) and a server's error are worth another try; a 503's
      // Retry-After says when (§10.2.3).
      self = .finished(.retry(after: Self.retryAfter(reply), reason: "\(platform) answered HTTP \(status)\(said)"))
    case 300...399:
      // Redirects are not followed (another host would be sent the Authorization header): the
      // configured URL is not the platform's endpoint.
      let location = reply.header("Location").map { " to \($0)" } ?? ""
      self = .finished(
        .rejected(reason: "\(platform) redirected the upload\(location) (HTTP \(status)): check the URL in the config"))
    default:
      self = .finished(.rejected(reason: "\(platform) refused the upload (HTTP \(status))\(said)"))
    }
  }

  /// The reply's Retry-After in seconds from now (RFC 9110 §10.2.3): delay-seconds, or an
  /// HTTP-date counted from the reply's own Date (the board's clock may be wrong: a Pi has no
  /// RTC). Nil when absent, malformed, or a date without a Date to count from.
  public static func retryAfter(_ reply: PlatformReply) -> Double? {
    guard let value = reply.header("Retry-After")?.trimmed else { return nil }
    if !value.isEmpty, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
      return Double(value)
    }
    guard let until = HTTPDate.seconds(value), let date = reply.header("Date").flatMap({ HTTPDate.seconds($0.trimmed) })
    else { return nil }
    return Double(max(0, until - date))
  }

  /// A body as one line of text for a reason: its printable ASCII and UTF-8, whitespace runs as
  /// one space, cut at `wordsLimit` characters.
  public static func platformWords(_ body: [UInt8]) -> String {
    let text = String(decoding: body.prefix(4 * wordsLimit), as: UTF8.self)
    var line = ""
    var lastWasSpace = true
    for character in text {
      if character.isWhitespace || character.asciiValue.map({ $0 < 0x20 || $0 == 0x7F }) == true {
        if !lastWasSpace { line.append(" ") }
        lastWasSpace = true
      } else {
        line.append(character)
        lastWasSpace = false
      }
      if line.count >= wordsLimit { break }
    }
    return line.trimmed
  }
}

extension String {
  /// Without leading and trailing spaces and tabs (a header's optional whitespace, RFC 9110 §5.6.3).
  var trimmed: String {
    var characters = Substring(self)
    while let first = characters.first, first.isWhitespace { characters.removeFirst() }
    while let last = characters.last, last.isWhitespace { characters.removeLast() }
    return String(characters)
  }
}
