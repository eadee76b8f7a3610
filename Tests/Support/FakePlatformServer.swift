import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// One of the fake platforms of Tests/Platforms (Python HTTPS servers that answer as a
/// platform's documentation says), run for a test with a certificate of `TestCertificates` and
/// a state directory of its own: the faults to apply next and the record of what it received.
public final class FakePlatformServer {
  public static let scripts: String = {
    var url = URL(fileURLWithPath: #filePath)
    url.deleteLastPathComponent()
    url.deleteLastPathComponent()
    return url.appendingPathComponent("Platforms").path
  }()

  public let state: String
  public let port: Int
  private let pid: pid_t
  private var stopped = false

  public struct Failure: Error, CustomStringConvertible {
    public var description: String
  }

  /// Starts `script` (a file of Tests/Platforms) with `arguments` after its port, certificate,
  /// key and state, and waits (up to 10 s) until it listens.
  public init(script: String, certificates: TestCertificates, state: String, arguments: [String]) throws {
    self.state = state
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    let python = ["/usr/bin/python3", "/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
    guard let python else { throw Failure(description: "no python3") }
    pid = try GPSFake.spawn(
      [
        python, Self.scripts + "/" + script, "--port", "0", "--cert", certificates.certificateFile, "--key",
        certificates.keyFile, "--state", state,
      ] + arguments, environment: ProcessInfo.processInfo.environment, stdout: state + "/stdout.txt",
      stderr: state + "/stderr.txt")
    var port: Int?
    for _ in 0..<200 {
      if let text = try? String(contentsOfFile: state + "/port", encoding: .utf8),
        let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
      {
        port = number
        break
      }
      var status: Int32 = 0
      if waitpid(pid, &status, WNOHANG) == pid { break }
      usleep(50_000)
    }
    guard let port else {
      kill(pid, SIGKILL)
      var status: Int32 = 0
      waitpid(pid, &status, 0)
      let error = (try? String(contentsOfFile: state + "/stderr.txt", encoding: .utf8)) ?? ""
      throw Failure(description: "\(script) did not start: \(error)")
    }
    self.port = port
  }

  deinit { stop() }

  /// The server's https:// origin, by IP address.
  public var origin: String { "https://127.0.0.1:\(port)" }

  /// Applies these faults (see fake_platform_base.py) to the next requests, one each.
  public func queueFaults(_ faults: [String]) throws {
    try faults.map { $0 + "\n" }.joined().write(toFile: state + "/faults", atomically: true, encoding: .utf8)
  }

  /// What the server received so far: a record per request.
  public func received() throws -> [[String: Any]] {
    guard let text = try? String(contentsOfFile: state + "/received.jsonl", encoding: .utf8) else { return [] }
    return try text.split(separator: "\n").map {
      guard let record = try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] else {
        throw Failure(description: "a record that is not an object: \($0)")
      }
      return record
    }
  }

  /// Ends the server (SIGTERM, then SIGKILL after 2 s) and reaps it.
  public func stop() {
    guard !stopped else { return }
    stopped = true
    kill(pid, SIGTERM)
    var status: Int32 = 0
    for _ in 0..<40 {
      if waitpid(pid, &status, WNOHANG) == pid { return }
      usleep(50_000)
    }
    kill(pid, SIGKILL)
    waitpid(pid, &status, 0)
  }
}
