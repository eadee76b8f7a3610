import Foundation
import LinuxSupport
import Testing
import WorkoutTestSupport

/// The systemd notify protocol as workoutd speaks it, heard on a real datagram socket standing
/// in for systemd's (the board-VM suite checks the same against systemd itself).
@Suite(.serialized)
struct SystemdNotifyTests {
  @Test func readyThenWatchdogPingsFromTheEngineLoopThenStopping() throws {
    let dir = ServiceDirectory()
    let listener = try NotifySocketListener(path: dir.path + "/notify")
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
    let listener = try NotifySocketListener(path: dir.path + "/notify")
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
