import Foundation
import LinuxSupport
import Testing

/// `ChildProcess.run`: the program's output and exit status, and a clear error when it cannot
/// be run.
struct ChildProcessTests {
  @Test func collectsTheOutputAndTheExitStatus() throws {
    let echo = try ChildProcess.run("/bin/sh", ["-c", "printf 'ID_FS_TYPE=ntfs\\nDEVTYPE=partition\\n'; exit 3"])
    #expect(echo.status == 3)
    #expect(String(decoding: echo.output, as: UTF8.self) == "ID_FS_TYPE=ntfs\nDEVTYPE=partition\n")
    let big = try ChildProcess.run("/bin/sh", ["-c", "head -c 200000 /dev/zero"])
    #expect(big.status == 0 && big.output.count == 200_000, "more than a pipe's buffer")
    let capped = try ChildProcess.run("/bin/sh", ["-c", "head -c 9000 /dev/zero"], outputLimit: 100)
    #expect(capped.output.count == 100)
  }

  @Test func itsInputIsGivenWholeAndAStopKillsIt() throws {
    let input = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let echoed = try #require(try ChildProcess.run("/bin/cat", [], input: input, stop: StopSignal()))
    #expect(echoed.status == 0 && echoed.output == input, "more than a socket's buffer, both ways")
    // A child that exits without reading is no SIGPIPE here (this runner does not ignore it).
    let early = try #require(try ChildProcess.run("/bin/true", [], input: input, stop: nil))
    #expect(early.status == 0)
    let stop = StopSignal()
    let stopper = try DeviceThread.start(name: "stopper") {
      usleep(200_000)
      stop.stop()
    }
    #expect(try ChildProcess.run("/bin/sleep", ["30"], input: [], stop: stop) == nil, "killed, not waited for")
    stopper.join()
  }

  @Test func aSignalIsMinusOneAndAMissingProgramAnError() throws {
    // Even from a thread that blocks SIGTERM (as the service's threads do, for signalfd).
    var blocked = sigset_t()
    sigemptyset(&blocked)
    sigaddset(&blocked, SIGTERM)
    var before = sigset_t()
    pthread_sigmask(SIG_BLOCK, &blocked, &before)
    defer { pthread_sigmask(SIG_SETMASK, &before, nil) }
    #expect(try ChildProcess.run("/bin/sh", ["-c", "kill -TERM $$; sleep 5"]).status == -1)
    // posix_spawn reports a failed exec through the vfork'd child's memory, which qemu-user
    // (make test-arm64) does not share: there the child exits 127.
    if ProcessInfo.processInfo.environment["WORKOUTD_TEST_QEMU_USER"] == nil {
      #expect(throws: SystemError.self) { try ChildProcess.run("/nonexistent/udevadm", []) }
    } else {
      #expect(try ChildProcess.run("/nonexistent/udevadm", []).status == 127)
    }
  }
}
