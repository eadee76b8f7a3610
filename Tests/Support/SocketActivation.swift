import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A socket-activated service as systemd runs one with `Accept=yes` and `StandardInput=socket`,
/// `StandardOutput=socket`: systemd's own `systemd-socket-activate --accept --inetd`, listening
/// at `path` and running `program` for each connection with it as standard input and output.
public final class SocketActivation {
  public let path: String
  private let pid: pid_t
  private var stopped = false

  public struct Failure: Error, CustomStringConvertible {
    public var description: String
  }

  /// Starts it (its own output in `log`) and waits, up to 10 s, until the socket is there.
  public init(path: String, program: [String], log: String) throws {
    self.path = path
    // It gives its program only PATH, TERM and what --setenv names: under qemu-user (make
    // test-arm64) an aarch64 program needs QEMU_LD_PREFIX to find its libraries.
    let environment = ProcessInfo.processInfo.environment
    let passed = ["QEMU_LD_PREFIX"].filter { environment[$0] != nil }.map { "--setenv=" + $0 }
    pid = try GPSFake.spawn(
      ["/usr/bin/systemd-socket-activate", "--listen=" + path, "--accept", "--inetd"] + passed + program,
      environment: environment, stdout: log, stderr: log + ".err")
    for _ in 0..<200 {
      if FileManager.default.fileExists(atPath: path) { return }
      usleep(50_000)
    }
    stop()
    let error = (try? String(contentsOfFile: log + ".err", encoding: .utf8)) ?? ""
    throw Failure(description: "systemd-socket-activate did not listen at \(path): \(error)")
  }

  deinit { stop() }

  /// Ends it and reaps it.
  public func stop() {
    guard !stopped else { return }
    stopped = true
    kill(pid, SIGKILL)
    var status: Int32 = 0
    waitpid(pid, &status, 0)
  }
}
