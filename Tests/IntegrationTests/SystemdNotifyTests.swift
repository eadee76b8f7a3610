import Foundation
import LinuxSupport
import Testing

/// The systemd notify protocol as workoutd speaks it, heard on a real datagram socket standing
/// in for systemd's (the board-VM suite checks the same against systemd itself).
@Suite(.serialized)
struct SystemdNotifyTests {
  /// A bound AF_UNIX datagram socket that collects what the service sends.
  final class NotifyListener {
    let path: String
    let fd: Int32

    init(path: String) throws {
      self.path = path
      fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
      var address = sockaddr_un()
      address.sun_family = sa_family_t(AF_UNIX)
      withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
      }
      let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
      }
      guard bound == 0 else { throw TestFailure("cannot bind \(path)") }
    }

    deinit { close(fd) }

    /// Datagrams received within `seconds`.
    func receive(for seconds: Double) -> [String] {
      var messages: [String] = []
      let deadline = Date().addingTimeInterval(seconds)
      var buffer = [UInt8](repeating: 0, count: 4096)
      while Date() < deadline {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 100) > 0 else { continue }
        let count = recv(fd, &buffer, buffer.count, 0)
        if count > 0 { messages.append(String(decoding: buffer[0..<count], as: UTF8.self)) }
      }
      return messages
    }

    /// Datagrams received until one holds `READY=1` (within `limit` seconds: a slow machine or
    /// an emulated CPU starts the service later), that one included.
    func receiveUntilReady(limit: Double = 60) -> [String] {
      var messages: [String] = []
      let deadline = Date().addingTimeInterval(limit)
      while Date() < deadline, !messages.contains(where: { $0.split(separator: "\n").contains("READY=1") }) {
        messages += receive(for: 0.2)
      }
      return messages
    }
  }

  @Test func readyThenWatchdogPingsFromTheEngineLoopThenStopping() throws {
    let dir = ServiceDirectory()
    let listener = try NotifyListener(path: dir.path + "/notify")
    let service = try ServiceProcess(
      dir, arguments: ["--speed", "5"],
      environment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "1000000"])
    let started = listener.receiveUntilReady()
    #expect(started.contains { $0.split(separator: "\n").contains("READY=1") }, "\(started)")
    var messages = started + listener.receive(for: 4)
    // WATCHDOG_USEC=1 s: a ping every half second of engine progress.
    let pings = messages.filter { $0 == "WATCHDOG=1" }.count
    #expect(pings >= 4, "expected about 7 watchdog pings in 4 s, got \(pings)")
    #expect(messages.contains { $0.hasPrefix("STATUS=") })

    // A stopped engine loop stops pinging: that is what lets systemd restart a hung service.
    service.signal(SIGSTOP)
    _ = listener.receive(for: 0.3)
    messages = listener.receive(for: 2)
    #expect(!messages.contains("WATCHDOG=1"), "a stopped process must not ping: \(messages)")
    service.signal(SIGCONT)
    messages = listener.receive(for: 2)
    #expect(messages.contains("WATCHDOG=1"))

    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
    messages = listener.receive(for: 0.5)
    #expect(messages.contains { $0.hasPrefix("STOPPING=1") }, "\(messages)")
  }

  @Test func aWatchdogMeantForAnotherProcessIsIgnored() throws {
    let dir = ServiceDirectory()
    let listener = try NotifyListener(path: dir.path + "/notify")
    let service = try ServiceProcess(
      dir, arguments: ["--speed", "5"],
      environment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"])
    let messages = listener.receiveUntilReady() + listener.receive(for: 3)
    #expect(messages.contains { $0.contains("READY=1") })
    #expect(!messages.contains("WATCHDOG=1"))
    service.signal(SIGTERM)
    try service.waitForExit()
  }
}
