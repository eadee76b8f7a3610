import Foundation
import LinuxSupport
import Testing
import WorkoutTestSupport

/// `UnixSocket.exchange` against socket-activated programs, as systemd runs the uploads'
/// sender (`systemd-socket-activate --accept --inetd`): the request read to its end, the reply
/// taken to the peer's, a limit on it, and a stop.
struct UnixSocketExchangeTests {
  @Test func theRequestGoesWholeTheReplyComesWholeAndAStopEndsTheWait() throws {
    let directory = NSTemporaryDirectory() + "exchange-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let cat = try SocketActivation(path: directory + "/cat.sock", program: ["/bin/cat"], log: directory + "/cat")
    let input = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let echoing = try UnixSocket.connect(path: cat.path)
    let echoed = try echoing.exchange(input, replyLimit: 1 << 20, stop: StopSignal())
    echoing.close()
    #expect(echoed == input, "more than a socket's buffer, both ways: cat ends once it has read the end")
    let capped = try UnixSocket.connect(path: cat.path)
    #expect(throws: SystemError.self) { try capped.exchange(input, replyLimit: 1000, stop: nil) }
    capped.close()

    let sleeper = try SocketActivation(
      path: directory + "/sleep.sock", program: ["/bin/sleep", "30"], log: directory + "/sleep")
    let stop = StopSignal()
    let stopper = try DeviceThread.start(name: "stopper") {
      usleep(200_000)
      stop.stop()
    }
    let waiting = try UnixSocket.connect(path: sleeper.path)
    #expect(try waiting.exchange([1, 2, 3], replyLimit: 100, stop: stop) == nil, "stopped, not waited for")
    stopper.join()
    waiting.close()
  }
}
