import LinuxSupport
import Synchronization
import WorkoutUpload

/// The installed service's transport: each request sent through the sender's socket
/// (`workoutd-upload.socket`, Accept=yes), where systemd starts a `workoutd-upload@.service`
/// for the connection: `workoutd --upload-request` with the connection as its standard input
/// and output, the frame `UploadRequestProcess` gives its child. The sender's unit may reach
/// the platforms on the internet; the service's own unit reaches only the board's network
/// (IPAddressDeny), and never loads libcurl. A stop closes the connection at once.
public struct UploadRequestSocket: PlatformTransport {
  public let path: String
  public let settings: PlatformHTTPClient.Settings
  public let stop: StopSignal?
  private let fault = SetUpFault()

  public init(path: String, settings: PlatformHTTPClient.Settings, stop: StopSignal?) {
    self.path = path
    self.settings = settings
    self.stop = stop
  }

  public var setUpFault: String? { fault.words.withLock { $0 } }

  public func perform(_ request: PlatformRequest) -> PlatformReply {
    let input: [UInt8]
    do {
      input = try UploadRequestFrame.request(request, settings: settings)
    } catch {
      return .unreachable("cannot write the request for the sender: \(error)")
    }
    let connection: UnixSocket
    do {
      connection = try UnixSocket.connect(path: path)
    } catch {
      let words = "cannot reach the upload sender at \(path) (is workoutd-upload.socket enabled and started?): \(error)"
      fault.words.withLock { $0 = words }
      return .unreachable(words)
    }
    fault.words.withLock { $0 = nil }
    defer { connection.close() }
    let output: [UInt8]
    do {
      // The reply's body and its head (a header block is at most 64 KiB) with room to spare.
      guard let reply = try connection.exchange(input, replyLimit: settings.replyLimit + (1 << 18), stop: stop)
      else { return .unreachable("stopped") }
      output = reply
    } catch {
      return .unreachable("the upload sender at \(path) failed: \(error)")
    }
    guard !output.isEmpty else {
      return .unreachable("the upload sender at \(path) closed without a reply (its journal says why)")
    }
    do {
      return try UploadRequestFrame.reply(output)
    } catch {
      return .unreachable("the upload sender answered what is not a reply: \(error)")
    }
  }
}

/// The words of the last connection's failure, shared by the transport's copies.
private final class SetUpFault: Sendable {
  let words = Mutex<String?>(nil)
}
