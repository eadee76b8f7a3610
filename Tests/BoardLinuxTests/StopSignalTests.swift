import Foundation
import LinuxSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The one wait every device loop uses: its own descriptors and the stop request together,
/// with no timeout unless the loop has a deadline of its own.
struct StopSignalTests {
  private func makePipe() -> (read: Int32, write: Int32) {
    var fds: [Int32] = [-1, -1]
    #expect(pipe(&fds) == 0)
    return (fds[0], fds[1])
  }

  @Test func returnsWhenADescriptorIsReadable() throws {
    let signal = StopSignal()
    let (r, w) = makePipe()
    defer { close(r); close(w) }
    #expect(write(w, "x", 1) == 1)
    var fds = [pollfd(fd: r, events: Int16(POLLIN), revents: 0)]
    #expect(try signal.poll(&fds, until: nil) == false)
    #expect(fds[0].revents & Int16(POLLIN) != 0)
  }

  @Test func returnsAtTheDeadlineWithNothingReady() throws {
    let signal = StopSignal()
    let (r, w) = makePipe()
    defer { close(r); close(w) }
    var fds = [pollfd(fd: r, events: Int16(POLLIN), revents: 0)]
    let deadline = SystemClocks.monotonic() + 0.05
    #expect(try signal.poll(&fds, until: deadline) == false)
    #expect(SystemClocks.monotonic() >= deadline, "never woken before its deadline")
    #expect(fds[0].revents == 0)
  }

  @Test func aStopFromAnotherThreadWakesAWaitWithNoDeadline() throws {
    let signal = StopSignal()
    let (r, w) = makePipe()
    defer { close(r); close(w) }
    let stopper = Thread {
      usleep(50_000)
      signal.stop()
    }
    stopper.start()
    var fds = [pollfd(fd: r, events: Int16(POLLIN), revents: 0)]
    #expect(try signal.poll(&fds, until: nil) == true)
    #expect(signal.isStopRequested)
    // Once stopped, every later wait returns at once.
    #expect(try signal.poll(&fds, until: nil) == true)
    #expect(signal.wait(seconds: 10) == true)
  }
}
