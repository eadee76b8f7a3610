import LinuxSupport

/// A bound AF_UNIX datagram socket standing in for systemd's notify socket: what the service
/// sends there, in order (`sd_notify(3)`: one datagram per call).
public final class NotifySocketListener {
  public let path: String
  private let socket: UnixSocket

  public init(path: String) throws {
    self.path = path
    socket = try UnixSocket.receivingDatagrams(at: path)
  }

  /// The datagrams waiting now (a sender's are queued before its call returns).
  public func received() -> [String] {
    var messages: [String] = []
    while let message = try? socket.receiveDatagram(timeout: 0) { messages.append(message) }
    return messages
  }

  /// The datagrams that come within `seconds`.
  public func receive(for seconds: Double) -> [String] {
    var messages: [String] = []
    let deadline = SystemClocks.monotonic() + seconds
    while case let left = deadline - SystemClocks.monotonic(), left > 0 {
      if let message = try? socket.receiveDatagram(timeout: left) { messages.append(message) }
    }
    return messages
  }

  /// The datagrams until one holds `READY=1`, that one included, within `limit` seconds (a slow
  /// machine or an emulated CPU starts the service later).
  public func receiveUntilReady(limit: Double = 60) -> [String] {
    var messages: [String] = []
    let deadline = SystemClocks.monotonic() + limit
    while !messages.contains(where: { $0.split(separator: "\n").contains("READY=1") }),
      case let left = deadline - SystemClocks.monotonic(), left > 0
    {
      if let message = try? socket.receiveDatagram(timeout: min(left, 0.2)) { messages.append(message) }
    }
    return messages
  }
}
