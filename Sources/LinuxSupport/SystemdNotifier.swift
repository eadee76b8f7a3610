#if canImport(Glibc)
  import Glibc
#endif

/// The systemd notify protocol (`sd_notify(3)`), spoken directly: a datagram of `KEY=value`
/// lines to $NOTIFY_SOCKET. Without systemd (no $NOTIFY_SOCKET) every call does nothing.
public final class SystemdNotifier: Sendable {
  private let socketPath: String?
  private let socket: UnixSocket?
  /// How often to send `WATCHDOG=1`: half of $WATCHDOG_USEC, as sd_watchdog_enabled(3) advises;
  /// nil when systemd runs no watchdog for this process.
  public let watchdogInterval: Double?

  public init(environment: [String: String]) {
    let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    socketPath = path
    socket = path == nil ? nil : try? UnixSocket.make(type: Int32(SOCK_DGRAM.rawValue))
    var interval: Double?
    if let usec = environment["WATCHDOG_USEC"].flatMap(Double.init), usec > 0 {
      // WATCHDOG_PID, when set, names the process the watchdog is meant for.
      let pid = environment["WATCHDOG_PID"].flatMap(Int32.init)
      if pid == nil || pid == getpid() { interval = usec / 2e6 }
    }
    watchdogInterval = interval
  }

  public var isActive: Bool { socket != nil }

  /// Sends `state` (e.g. "READY=1\nSTATUS=recording"). Failures are returned, not thrown: a
  /// service must not die because its supervisor's socket is gone. The send never blocks: the
  /// engine thread sends WATCHDOG=1, and a stalled systemd must cost a missed ping, not the ride.
  @discardableResult
  public func notify(_ state: String) -> SystemError? {
    guard let socket, let socketPath else { return nil }
    do {
      try socket.send(state, to: socketPath)
      return nil
    } catch {
      return error
    }
  }
}
