import Foundation
import LinuxSupport
import WorkoutUpload

/// What sends a platform's request and returns its reply.
public protocol PlatformTransport: Sendable {
  func perform(_ request: PlatformRequest) -> PlatformReply
  /// What of the board's own set-up stopped the last request before it left the board (the
  /// sender's socket not there): a fault no waiting mends, where an unreachable platform is a
  /// wait. Nil once a request gets through.
  var setUpFault: String? { get }
}

extension PlatformTransport {
  public var setUpFault: String? { nil }
}

extension PlatformHTTPClient: PlatformTransport {}

/// The service's transport: each request sent by a child process of its own (the service's
/// binary again, `arguments` telling it so), which loads libcurl, sends the one request, writes
/// the reply and exits. libcurl and the 30 libraries it brings are mapped, relocated and
/// initialised in the child, so the service's resident memory never carries them (8.4 MiB, in
/// the service's process for ever once loaded); a child costs a few milliseconds a request, and
/// a ride is a handful of requests. A stop kills the child at once.
public struct UploadRequestProcess: FramedSender {
  public let executable: String
  public let arguments: [String]
  public let settings: PlatformHTTPClient.Settings
  public let stop: StopSignal?

  public init(executable: String, arguments: [String], settings: PlatformHTTPClient.Settings, stop: StopSignal?) {
    self.executable = executable
    self.arguments = arguments
    self.settings = settings
    self.stop = stop
  }

  let senderName = "the request's process"

  func exchange(_ input: [UInt8]) -> Result<[UInt8]?, FramedSenderFailure> {
    let finished: ChildProcess.Finished
    do {
      guard
        let done = try ChildProcess.run(
          executable, arguments, input: input, stop: stop, outputLimit: UploadRequestFrame.replyLimit(settings))
      else { return .success(nil) }
      finished = done
    } catch {
      return .failure(FramedSenderFailure("cannot run the request's process \(executable): \(error)"))
    }
    guard finished.status == 0 else {
      return .failure(FramedSenderFailure("the request's process \(executable) ended with status \(finished.status)"))
    }
    return .success(finished.output)
  }
}

/// A transport that hands the framed request (`UploadRequestFrame`) to a sender of its own and
/// reads back the framed reply: a child process, or the sender's socket.
protocol FramedSender: PlatformTransport {
  var settings: PlatformHTTPClient.Settings { get }
  /// What the words of a failure call the sender.
  var senderName: String { get }
  /// The framed reply to `input`; nil when stopped.
  func exchange(_ input: [UInt8]) -> Result<[UInt8]?, FramedSenderFailure>
}

struct FramedSenderFailure: Error {
  var words: String
  init(_ words: String) { self.words = words }
}

extension FramedSender {
  public func perform(_ request: PlatformRequest) -> PlatformReply {
    let input: [UInt8]
    do {
      input = try UploadRequestFrame.request(request, settings: settings)
    } catch {
      return .unreachable("cannot write the request for \(senderName): \(error)")
    }
    switch exchange(input) {
    case .failure(let failure): return .unreachable(failure.words)
    case .success(nil): return .unreachable("stopped")
    case .success(let output?):
      do {
        return try UploadRequestFrame.reply(output)
      } catch {
        return .unreachable("\(senderName) answered what is not a reply: \(error)")
      }
    }
  }
}

/// The child's side of `UploadRequestProcess`: reads one request from standard input, sends
/// it with `PlatformHTTPClient`, writes its reply (a platform that did not answer is a reply
/// too) to standard output. Returns the exit status: 0 once a reply is written.
public enum UploadRequestChild {
  /// The argument that makes the service's binary this process.
  public static let argument = "--upload-request"

  public static func main() -> Int32 {
    let input = FileDescriptor(owning: 0)
    let output = FileDescriptor(owning: 1)
    let reply: PlatformReply
    do {
      let (request, settings) = try UploadRequestFrame.request(try input.readToEnd())
      reply = PlatformHTTPClient(settings: settings).perform(request)
    } catch {
      reply = .unreachable("the request's process could not read its request: \(error)")
    }
    do {
      let bytes = try UploadRequestFrame.reply(reply)
      try bytes.withUnsafeBytes { try output.writeAll($0) }
      return 0
    } catch {
      FileHandle.standardError.write(Data("workoutd: cannot write the upload's reply: \(error)\n".utf8))
      return 1
    }
  }
}

/// A request or a reply between the service and its request's process: a line of JSON (the
/// head), then the body's bytes as they are.
enum UploadRequestFrame {
  struct Problem: Error, CustomStringConvertible {
    var description: String
  }

  private struct RequestHead: Codable {
    var method: String
    var url: String
    var headers: [[String]]
    var bodyLength: Int
    var caFile: String?
    var allowsHTTP: Bool
    var connectTimeoutSeconds: Int
    var lowSpeedBytesPerSecond: Int
    var lowSpeedSeconds: Int
    var replyLimit: Int
  }

  private struct ReplyHead: Codable {
    var status: Int?
    var headers: [[String]]?
    var unreachable: String?
    var bodyLength: Int
  }

  /// The most a framed reply may be: the body's limit and its head (a header block is at most
  /// 64 KiB) with room to spare.
  static func replyLimit(_ settings: PlatformHTTPClient.Settings) -> Int { settings.replyLimit + (1 << 18) }

  static func request(_ request: PlatformRequest, settings: PlatformHTTPClient.Settings) throws -> [UInt8] {
    let head = RequestHead(
      method: request.method, url: request.url, headers: request.headers.map { [$0.name, $0.value] },
      bodyLength: request.body.count, caFile: settings.caFile, allowsHTTP: settings.allowsHTTP,
      connectTimeoutSeconds: settings.connectTimeoutSeconds, lowSpeedBytesPerSecond: settings.lowSpeedBytesPerSecond,
      lowSpeedSeconds: settings.lowSpeedSeconds, replyLimit: settings.replyLimit)
    return Array(try JSONEncoder().encode(head)) + [0x0A] + request.body
  }

  static func request(_ bytes: [UInt8]) throws -> (PlatformRequest, PlatformHTTPClient.Settings) {
    let (head, body) = try split(bytes, as: RequestHead.self)
    guard body.count == head.bodyLength else { throw Problem(description: "a request body cut short") }
    let headers = try fields(head.headers)
    let settings = PlatformHTTPClient.Settings(
      caFile: head.caFile, allowsHTTP: head.allowsHTTP, connectTimeoutSeconds: head.connectTimeoutSeconds,
      lowSpeedBytesPerSecond: head.lowSpeedBytesPerSecond, lowSpeedSeconds: head.lowSpeedSeconds,
      replyLimit: head.replyLimit)
    return (PlatformRequest(method: head.method, url: head.url, headers: headers, body: body), settings)
  }

  static func reply(_ reply: PlatformReply) throws -> [UInt8] {
    let head: ReplyHead
    var body: [UInt8] = []
    switch reply {
    case .answered(let status, let headers, let replyBody):
      head = ReplyHead(status: status, headers: headers.map { [$0.name, $0.value] }, bodyLength: replyBody.count)
      body = replyBody
    case .unreachable(let words):
      head = ReplyHead(unreachable: words, bodyLength: 0)
    }
    return Array(try JSONEncoder().encode(head)) + [0x0A] + body
  }

  static func reply(_ bytes: [UInt8]) throws -> PlatformReply {
    let (head, body) = try split(bytes, as: ReplyHead.self)
    guard body.count == head.bodyLength else { throw Problem(description: "a reply body cut short") }
    if let words = head.unreachable { return .unreachable(words) }
    guard let status = head.status else { throw Problem(description: "a reply with no status") }
    return .answered(status: status, headers: try fields(head.headers ?? []), body: body)
  }

  private static func split<Head: Decodable>(_ bytes: [UInt8], as: Head.Type) throws -> (Head, [UInt8]) {
    guard let newline = bytes.firstIndex(of: 0x0A) else { throw Problem(description: "no head line") }
    let head = try JSONDecoder().decode(Head.self, from: Data(bytes[..<newline]))
    return (head, Array(bytes[(newline + 1)...]))
  }

  private static func fields(_ pairs: [[String]]) throws -> [HeaderField] {
    try pairs.map { pair in
      guard pair.count == 2 else { throw Problem(description: "a header that is not a name and a value") }
      return HeaderField(pair[0], pair[1])
    }
  }
}
