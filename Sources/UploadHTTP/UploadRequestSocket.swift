import LinuxSupport
import Synchronization
import WorkoutUpload

/// The installed service's transport: each request sent through the sender's socket
/// (`workoutd-upload.socket`, Accept=yes), where systemd starts a `workoutd-upload@.service`
/// for the connection: `workoutd --upload-request` with the connection as its standard input
/// and output, the frame `UploadRequestProcess` gives its child. The sender's unit may reach
/// the platforms on the internet; the service's own unit reaches only the board's network
/// (IPAddressDeny), and never loads libcurl. A stop closes the connection at once.
public struct UploadRequestSocket: FramedSender {
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

  let senderName = "the upload sender"

  func exchange(_ input: [UInt8]) -> Result<[UInt8]?, FramedSenderFailure> {
    let connection: UnixSocket
    do {
      connection = try UnixSocket.connect(path: path)
    } catch {
      let words = "cannot reach the upload sender at \(path) (is workoutd-upload.socket enabled and started?): \(error)"
      fault.words.withLock { $0 = words }
      return .failure(FramedSenderFailure(words))
    }
    fault.words.withLock { $0 = nil }
    defer { connection.close() }
    let output: [UInt8]
    do {
      guard let reply = try connection.exchange(input, replyLimit: UploadRequestFrame.replyLimit(settings), stop: stop)
      else { return .success(nil) }
      output = reply
    } catch {
      return .failure(FramedSenderFailure("the upload sender at \(path) failed: \(error)"))
    }
    guard !output.isEmpty else {
      return .failure(FramedSenderFailure("the upload sender at \(path) closed without a reply (its journal says why)"))
    }
    return .success(output)
  }
}

/// The words of the last connection's failure, shared by the transport's copies.
private final class SetUpFault: Sendable {
  let words = Mutex<String?>(nil)
}
