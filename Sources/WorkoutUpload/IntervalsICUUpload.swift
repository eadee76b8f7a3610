import Foundation

/// intervals.icu's activity upload, as its API cookbook documents it (forum.intervals.icu,
/// "Intervals.icu API Integration Cookbook"): POST /api/v1/athlete/{id}/activities with the
/// file as the multipart/form-data field `file`, basic auth with the user `API_KEY` and the
/// athlete's key as the password. The answer names the activity (`id`). The platform keeps a
/// hash of every file and makes no second activity of the same bytes (its developer, in the
/// forum's "API access to Intervals.icu"): a resend after a power cut is answered as a
/// duplicate, taken here as a 409 Conflict or a refusal whose words say "duplicate".
public struct IntervalsICUUpload: UploadConversation {
  public static let platform = "intervals.icu"
  public static let officialBaseURL = "https://intervals.icu"

  /// The athlete's id ("i12345", or "0": the key's own athlete).
  public let athleteID: String
  public let apiKey: String
  /// The site (tests point it at their own server).
  public let baseURL: String
  private var finished: UploadOutcome?

  public init(athleteID: String, apiKey: String, baseURL: String = Self.officialBaseURL) {
    self.athleteID = athleteID
    self.apiKey = apiKey
    self.baseURL = baseURL
  }

  /// The upload's URL for this athlete.
  public var endpoint: String {
    let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
    return "\(base)/api/v1/athlete/\(PercentEncoding.encoded(athleteID))/activities"
  }

  public mutating func start(job: UploadJob, file: [UInt8], fileName: String) -> UploadStep {
    guard !athleteID.isEmpty, !apiKey.isEmpty else {
      return finish(.rejected(reason: "intervals.icu needs the athlete id and the API key in the config"))
    }
    guard let authorization = BasicAuthorization.header(user: "API_KEY", password: apiKey) else {
      return finish(.rejected(reason: "intervals.icu's API key cannot be sent"))
    }
    let form = MultipartFormData([
      .init(name: "file", fileName: fileName, contentType: "application/octet-stream", content: file)
    ])
    let request = PlatformRequest(
      method: "POST", url: endpoint,
      headers: [
        authorization, HeaderField("Content-Type", form.contentType), HeaderField("Accept", "application/json"),
      ],
      body: form.body)
    return .send(request, after: 0)
  }

  public mutating func receive(_ reply: PlatformReply) -> UploadStep {
    if let finished { return .finished(finished) }
    if case .answered(let status, _, let body) = reply, Self.isDuplicate(status: status, body: body) {
      return finish(.done(platformID: Self.activityID(in: body), duplicate: true))
    }
    switch ReplyJudgement(reply, platform: Self.platform) {
    case .accepted(_, _, let body):
      return finish(.done(platformID: Self.activityID(in: body), duplicate: false))
    case .finished(let outcome):
      return finish(outcome)
    }
  }

  public mutating func kept() -> UploadStep {
    // The upload is one request: nothing is ever asked to be kept.
    finish(finished ?? .rejected(reason: "intervals.icu's upload was asked to go on after a record it never asked for"))
  }

  private mutating func finish(_ outcome: UploadOutcome) -> UploadStep {
    finished = outcome
    return .finished(outcome)
  }

  /// A repeated file's answer: 409 Conflict (RFC 9110 §15.5.10), or a 4xx whose words name a
  /// duplicate.
  static func isDuplicate(status: Int, body: [UInt8]) -> Bool {
    if status == 409 { return true }
    guard (400...499).contains(status), ![401, 403, 429].contains(status) else { return false }
    return ReplyJudgement.platformWords(body).lowercased().contains("duplicate")
  }

  /// The activity's id in the answer: `id` at the top (its upload response), else the first of
  /// `activities`, else an "i" and digits in the words (a duplicate's message naming the one
  /// it already has).
  static func activityID(in body: [UInt8]) -> String? {
    if let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] {
      if let id = object["id"] as? String, !id.isEmpty { return id }
      if let id = object["id"] as? Int { return String(id) }
      if let first = (object["activities"] as? [[String: Any]])?.first, let id = first["id"] as? String { return id }
    }
    let words = ReplyJudgement.platformWords(body)
    var characters = Substring(words)
    while let start = characters.firstIndex(of: "i") {
      let digits = characters[characters.index(after: start)...].prefix { $0.isASCII && $0.isNumber }
      let before = start == words.startIndex ? nil : words[words.index(before: start)]
      if !digits.isEmpty, before.map({ !$0.isLetter && !$0.isNumber }) ?? true { return "i" + digits }
      characters = characters[characters.index(after: start)...]
    }
    return nil
  }
}
