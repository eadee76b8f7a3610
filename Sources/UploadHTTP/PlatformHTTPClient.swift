import CCurl
import LinuxSupport
import WorkoutUpload

#if canImport(Glibc)
  import Glibc
#endif

/// The uploader's HTTP client: a conversation's request sent through the system's libcurl on
/// the caller's thread, and what came back. TLS is verified against the system's CA store (or
/// the configured CA file); redirects are not followed; https only unless http is allowed. It
/// never logs: a request's Authorization header and body are the rider's secrets and ride.
public struct PlatformHTTPClient: Sendable {
  public struct Settings: Sendable, Hashable {
    /// A PEM file of the CAs to trust instead of the system's (a self-hosted Nextcloud's own CA).
    public var caFile: String?
    /// Whether http:// URLs may be used (a server on the rider's LAN without TLS).
    public var allowsHTTP: Bool
    public var connectTimeoutSeconds: Int
    /// An attempt that moves fewer bytes a second than this for `lowSpeedSeconds` ends.
    public var lowSpeedBytesPerSecond: Int
    public var lowSpeedSeconds: Int
    /// The longest reply body kept (platforms answer a few kilobytes of JSON).
    public var replyLimit: Int

    public init(
      caFile: String? = nil, allowsHTTP: Bool = false, connectTimeoutSeconds: Int = 30,
      lowSpeedBytesPerSecond: Int = 64, lowSpeedSeconds: Int = 60, replyLimit: Int = 1 << 20
    ) {
      self.caFile = caFile
      self.allowsHTTP = allowsHTTP
      self.connectTimeoutSeconds = connectTimeoutSeconds
      self.lowSpeedBytesPerSecond = lowSpeedBytesPerSecond
      self.lowSpeedSeconds = lowSpeedSeconds
      self.replyLimit = replyLimit
    }
  }

  public let settings: Settings
  /// The service's stop: a request under way ends within about a second of it.
  public let stop: StopSignal?

  public init(settings: Settings = Settings(), stop: StopSignal? = nil) {
    self.settings = settings
    self.stop = stop
  }

  /// Loads libcurl (done by the first request too): its version, or the reason it cannot be.
  public static func load() -> Result<String, LoadFailure> {
    var error = [CChar](repeating: 0, count: 256)
    guard ccurl_load(&error, error.count) == 0, let version = ccurl_version() else {
      return .failure(LoadFailure(reason: Self.text(error)))
    }
    return .success(Self.text(Array(UnsafeBufferPointer(start: version, count: strlen(version)))))
  }

  public struct LoadFailure: Error, Sendable, Hashable {
    public var reason: String
  }

  /// Sends `request` and waits for its reply; `.unreachable("stopped")` when the stop came first.
  public func perform(_ request: PlatformRequest) -> PlatformReply {
    if stop?.isStopRequested == true { return .unreachable("stopped") }
    let lowercasedURL = request.url.lowercased()
    guard lowercasedURL.hasPrefix("https://") || (settings.allowsHTTP && lowercasedURL.hasPrefix("http://")) else {
      return .unreachable("only https:// URLs are used: \(Self.withoutCredentials(request.url))")
    }
    // A line break in a header would start another header (or the body) of the conversation's
    // own making: refused rather than sent.
    for header in request.headers
    where header.name.contains(where: \.isNewline) || header.value.contains(where: \.isNewline)
      || header.name.isEmpty || header.name.contains(":")
    {
      return .unreachable("the request's header \(header.name.debugDescription) cannot be sent")
    }
    let lines = request.headers.map { strdup("\($0.name): \($0.value)") }
    defer { lines.forEach { free($0) } }
    guard lines.allSatisfy({ $0 != nil }) else { return .unreachable("out of memory for the request's headers") }
    var reply = ccurl_reply()
    var error = [CChar](repeating: 0, count: 512)
    let result: ccurl_result = request.method.withCString { method in
      request.url.withCString { url in
        withOptionalCString(settings.caFile) { caFile in
          lines.map { UnsafePointer($0) }.withUnsafeBufferPointer { headers in
            request.body.withUnsafeBufferPointer { body in
              var plan = ccurl_request()
              plan.method = method
              plan.url = url
              plan.headers = headers.baseAddress
              plan.header_count = Int32(headers.count)
              plan.body = body.baseAddress
              plan.body_length = body.count
              plan.ca_file = caFile
              plan.allow_http = settings.allowsHTTP ? 1 : 0
              plan.connect_timeout_seconds = settings.connectTimeoutSeconds
              plan.low_speed_bytes_per_second = settings.lowSpeedBytesPerSecond
              plan.low_speed_seconds = settings.lowSpeedSeconds
              plan.reply_limit = settings.replyLimit
              if let stop {
                plan.should_stop = { context in
                  Unmanaged<StopSignal>.fromOpaque(context!).takeUnretainedValue().isStopRequested ? 1 : 0
                }
                plan.stop_context = Unmanaged.passUnretained(stop).toOpaque()
              }
              return withExtendedLifetime(stop) { ccurl_perform(&plan, &reply, &error, error.count) }
            }
          }
        }
      }
    }
    defer { ccurl_reply_free(&reply) }
    let words = Self.text(error)
    switch result {
    case CCURL_ANSWERED:
      let head = reply.head.map {
        String(decoding: UnsafeRawBufferPointer(start: $0, count: reply.head_length), as: UTF8.self)
      }
      let body = reply.body.map { Array(UnsafeBufferPointer(start: $0, count: reply.body_length)) } ?? []
      return .answered(status: Int(reply.status), headers: Self.headerFields(head ?? ""), body: body)
    case CCURL_STOPPED:
      return .unreachable("stopped")
    default:
      return .unreachable(words.isEmpty ? "no answer" : words)
    }
  }

  /// A response's header block ("HTTP/1.1 200 OK", then "Name: value" lines) as fields; a line
  /// folded onto the next (obs-fold, RFC 9112 §5.2) is one value.
  static func headerFields(_ head: String) -> [HeaderField] {
    var fields: [HeaderField] = []
    for line in head.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\r\n" || $0 == "\n" }).dropFirst()
    {
      if let first = line.first, first == " " || first == "\t", !fields.isEmpty {
        fields[fields.count - 1].value += " " + line.trimmingSpaces
        continue
      }
      guard let colon = line.firstIndex(of: ":") else { continue }
      fields.append(HeaderField(String(line[..<colon]), line[line.index(after: colon)...].trimmingSpaces))
    }
    return fields
  }

  /// A C string's text, to its first NUL.
  static func text(_ characters: [CChar]) -> String {
    String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// A URL for a message, without any "user:password@" in it.
  static func withoutCredentials(_ url: String) -> String {
    guard let scheme = url.range(of: "://") else { return url }
    let rest = url[scheme.upperBound...]
    let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
    guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return url }
    return String(url[..<scheme.upperBound]) + String(rest[rest.index(after: at)...])
  }
}

private func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
  guard let text else { return body(nil) }
  return text.withCString { body($0) }
}

extension Substring {
  fileprivate var trimmingSpaces: String {
    String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
  }
}
