import Foundation
import LinuxSupport
import Synchronization
import Testing
import WorkoutControl
import WorkoutTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// The control socket's places per user (issue 57): one user's idle crowd cannot stop another
/// user's `workoutctl status`, and a client refused for the crowd is told the socket is busy.
@Suite(.serialized)
struct ControlLimitTests {
  /// Idle clients of this process's user (root), kept up as the service drops them after their
  /// 2 s: a connection the service ends (its deadline, or a busy reply) is made again at once.
  final class Crowd: @unchecked Sendable {
    let stopping = Mutex(false)
    let busyReplies = Mutex([String]())
    private var thread: Thread?

    init(path: String, size: Int) throws {
      let first = try (0..<size).map { _ in try UnixSocket.connect(path: path) }
      thread = Thread { [self] in
        var sockets = first
        while !stopping.withLock({ $0 }) {
          var pollers = sockets.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
          _ = poll(&pollers, nfds_t(pollers.count), 50)
          for (index, poller) in pollers.enumerated() where poller.revents != 0 {
            if let line = try? sockets[index].readLine(limit: 4096), line.contains("\"busy\"") {
              busyReplies.withLock { $0.append(line) }
            }
            sockets[index].close()
            if let again = try? UnixSocket.connect(path: path) { sockets[index] = again }
          }
        }
        for socket in sockets { socket.close() }
      }
      thread?.start()
    }

    func stop() {
      stopping.withLock { $0 = true }
      while thread?.isFinished == false { usleep(10_000) }
    }
  }

  @Test func oneUsersIdleCrowdIsRefusedAsBusyAndAnotherUsersStatusIsAnswered() throws {
    let dir = ServiceDirectory()
    let service = try ServiceProcess.recording(in: dir)
    let ctl = binaryDirectory + "/workoutctl"
    let locations = ["--state-dir", dir.state, "--runtime-dir", dir.runtime]
    let pointsBefore = try service.status().points

    // Root keeps 24 clients connected, more than its 16 places.
    let crowd = try Crowd(path: dir.socket, size: 24)
    let crowdStarted = Date()
    defer { crowd.stop() }
    try waitFor("the crowd's extra clients to be refused", timeout: 10) {
      !crowd.busyReplies.withLock { $0.isEmpty }
    }
    #expect(crowd.busyReplies.withLock { $0.first ?? "" }.contains("16 control clients of this user"))

    // Another user (nobody, in the socket's group, root's) asks for the status: answered.
    for _ in 0..<3 {
      let other = try run(
        "/usr/bin/setpriv", ["--reuid=65534", "--regid=0", "--clear-groups", ctl, "status"] + locations)
      #expect(other.status == 0 && other.output.contains("session 1 running"), "\(other.output)")
    }
    // Root itself, while its crowd holds its places, is told the socket is busy, not that the
    // service is down.
    var busy = 0
    for _ in 0..<3 {
      let own = try run(ctl, ["status"] + locations)
      if own.status != 0 {
        busy += 1
        #expect(own.output.contains("is busy, too many clients are connected"), "\(own.output)")
        #expect(!own.output.contains("cannot reach") && !own.output.contains("sent no status"), "\(own.output)")
      }
    }
    #expect(busy > 0, "root's own status was never refused while its crowd was up")
    // The crowd stays 4 s at least; root's own requests wait for it to go, so the points counted
    // after were made while it was up.
    Thread.sleep(until: crowdStarted.addingTimeInterval(4))
    crowd.stop()
    #expect(try service.status().points > pointsBefore + 2, "recording went on")
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
  }
}
