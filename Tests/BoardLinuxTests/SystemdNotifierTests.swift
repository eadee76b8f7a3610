import Foundation
import LinuxSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The engine thread sends WATCHDOG=1: a supervisor that stops reading must cost a failed
/// notification, never a thread blocked on a full socket queue.
struct SystemdNotifierTests {
  @Test func aFullQueueIsAnErrorNotAWait() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.appendingPathComponent("notify").path
    let listener = try UnixSocket.receivingDatagrams(at: path)
    defer { listener.close() }
    let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path])
    #expect(notifier.isActive)

    // A datagram socket's queue holds far fewer than 2,000 (net.unix.max_dgram_qlen, 512 by default).
    var firstFailure: SystemError?
    for _ in 0..<2000 {
      if let failure = notifier.notify("WATCHDOG=1") {
        firstFailure = failure
        break
      }
    }
    #expect(firstFailure?.errno == EAGAIN, "got \(String(describing: firstFailure))")

    while try listener.receiveDatagram(timeout: 0) != nil {}
    #expect(notifier.notify("WATCHDOG=1") == nil, "sends again once the supervisor reads")
  }
}
