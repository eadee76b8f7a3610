import Foundation

/// An upload's state as Strava reports it, from POST /uploads and GET /uploads/{id}
/// (developers.strava.com/docs/uploads: `id`, `id_str`, `external_id`, `error`, `status`,
/// `activity_id`).
struct StravaUploadStatus: Decodable, Hashable {
  var id: Int64?
  var id_str: String?
  var error: String?
  var status: String?
  var activity_id: Int64?

  init(id: Int64? = nil, error: String? = nil, status: String? = nil, activityID: Int64? = nil) {
    self.id = id
    self.error = error
    self.status = status
    self.activity_id = activityID
  }

  init?(body: [UInt8]) {
    guard let status = try? JSONDecoder().decode(StravaUploadStatus.self, from: Data(body)) else { return nil }
    self = status
  }

  /// The upload's id, as Strava writes it in `id_str` (or `id`).
  var uploadID: String? {
    if let id_str, !id_str.isEmpty { return id_str }
    return id.map { String($0) }
  }

  /// Strava's status once the rider deleted the activity the upload made ("The created activity
  /// has been deleted."): the ride reached Strava, and sending it again would undo the rider.
  var activityWasDeleted: Bool { status?.lowercased().contains("deleted") == true }

  /// The activity this upload duplicates, from Strava's error ("… duplicate of activity 123",
  /// which may come as HTML: "duplicate of <a href='/activities/123'>123</a>").
  var duplicateOf: String? {
    guard let error else { return nil }
    let text = StravaWords.withoutMarkup(error).lowercased()
    guard let mark = text.range(of: "duplicate of") else { return nil }
    let digits = text[mark.upperBound...].drop { !$0.isASCII || !$0.isNumber }.prefix { $0.isASCII && $0.isNumber }
    return digits.isEmpty ? nil : String(digits)
  }
}

/// What Strava said, in words fit for a job's reason: never a token (Strava's answers carry none
/// but the token endpoint's, which are not put in words).
enum StravaWords {
  /// Strava's fault ("message" and "errors": resource, field, code, as its API reference
  /// describes), else the start of the body's text, else the status.
  static func of(status: Int, body: [UInt8]) -> String {
    struct Fault: Decodable {
      struct Item: Decodable {
        var resource: String?
        var field: String?
        var code: String?
      }
      var message: String?
      var errors: [Item]?
    }
    if let fault = try? JSONDecoder().decode(Fault.self, from: Data(body)), let message = fault.message {
      let items = (fault.errors ?? []).map {
        [$0.resource, $0.field, $0.code].compactMap { $0 }.joined(separator: " ")
      }
      .filter { !$0.isEmpty }
      return items.isEmpty ? message : "\(message) (\(items.joined(separator: "; ")))"
    }
    let text = withoutMarkup(String(decoding: body.prefix(400), as: UTF8.self))
      .split(whereSeparator: \.isWhitespace).joined(separator: " ")
    return text.isEmpty ? "HTTP \(status)" : "HTTP \(status): \(text.prefix(200))"
  }

  /// `text` without its HTML tags (Strava's upload errors may hold links).
  static func withoutMarkup(_ text: String) -> String {
    var out = ""
    var inTag = false
    for character in text {
      if character == "<" {
        inTag = true
      } else if character == ">" && inTag {
        inTag = false
      } else if !inTag {
        out.append(character)
      }
    }
    return out
  }
}

/// Strava's rate limits (developers.strava.com/docs/rate-limits): a 15-minute window reset at
/// 0, 15, 30 and 45 minutes past the hour and a daily one reset at midnight UTC, reported with
/// every answer as `X-RateLimit-Limit` and `X-RateLimit-Usage` ("15-minute, daily"), and for
/// the non-upload endpoints (polling is one) as `X-ReadRateLimit-Limit` and `-Usage`.
enum StravaRateLimit {
  static let window: Double = 15 * 60
  static let day: Double = 24 * 60 * 60

  /// Seconds to wait after a 429 answered at `now` (Unix seconds): until the daily window turns
  /// if a daily usage reached its limit, else until the 15-minute window turns. A Retry-After
  /// (RFC 9110 §10.2.3), which Strava does not document, is honoured if it is later.
  static func wait(after reply: PlatformReply, now: Double) -> Double {
    let pairs = [
      (reply.header("X-RateLimit-Limit"), reply.header("X-RateLimit-Usage")),
      (reply.header("X-ReadRateLimit-Limit"), reply.header("X-ReadRateLimit-Usage")),
    ]
    let dayIsSpent = pairs.contains { limit, usage in
      guard let limit = numbers(limit), let usage = numbers(usage) else { return false }
      return usage.daily >= limit.daily
    }
    let windowTurns = dayIsSpent ? secondsToNext(day, from: now) : secondsToNext(window, from: now)
    return max(windowTurns, ReplyJudgement.retryAfter(reply) ?? 0)
  }

  /// Seconds from `now` to the next multiple of `period` since the epoch (Unix time has no leap
  /// seconds, so UTC midnights and quarter hours are exact multiples).
  static func secondsToNext(_ period: Double, from now: Double) -> Double {
    let next = (now / period).rounded(.down) * period + period
    return next - now
  }

  /// "a,b" as the 15-minute and daily figures.
  static func numbers(_ header: String?) -> (window: Int, daily: Int)? {
    guard let parts = header?.split(separator: ",").map({ Int($0.trimmingCharacters(in: .whitespaces)) }),
      parts.count == 2, let window = parts[0], let daily = parts[1]
    else { return nil }
    return (window, daily)
  }
}
