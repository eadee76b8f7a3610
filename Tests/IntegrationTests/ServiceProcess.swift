import Foundation
import LinuxSupport
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport
import WorkoutUpload

let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .deletingLastPathComponent().path

/// A directory for one test's state and runtime files, removed afterwards.
final class ServiceDirectory: @unchecked Sendable {
  let path: String

  init() {
    // Short: a Unix socket path must fit in 108 bytes.
    path = "/tmp/wdt-" + String(UUID().uuidString.prefix(8)).lowercased()
    try! FileManager.default.createDirectory(atPath: path + "/state", withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(atPath: path) }

  var state: String { path + "/state" }
  var runtime: String { path + "/run" }
  var database: String { state + "/workoutd.db" }
  var socket: String { runtime + "/control.sock" }

  /// Writes what `commands` record into this directory's database, as the service's store does.
  func record(_ commands: [EngineCommand]) throws {
    let (store, _) = try WorkoutStore.open(at: database, wallNow: 0)
    try store.write(commands, clock: ClockStamp(epoch: "t", moment: Moment(monotonic: 0, wall: 0), wallTrusted: true))
  }

  /// Runs `workoutctl arguments` on this directory's database and control socket.
  func workoutctl(_ arguments: [String]) throws -> (status: Int32, output: String) {
    try run(binaryDirectory + "/workoutctl", arguments + ["--state-dir", state, "--runtime-dir", runtime])
  }

  /// A service on this directory's control socket that answers every request with a status of
  /// `engine` on the linux board, until the socket returned is shut down (or 20 s pass with no
  /// request).
  func answeringStatus(_ engine: EngineStatus, uploads: UploadCounts? = nil) throws -> UnixSocket {
    let report = StatusReport(
      engine: engine, board: "linux", boardTime: 0, devices: [:],
      storage: .init(database: "/var/lib/workoutd/workoutd.db", pendingWrites: 0, failing: false, lastError: nil),
      uploads: uploads)
    return try answering(ControlReply(ok: true, status: report))
  }

  /// A service on this directory's control socket that answers every request with `reply`,
  /// keeping the request lines in `requests`, until the socket returned is shut down (or 20 s
  /// pass with no request).
  func answering(_ reply: ControlReply, requests: ReceivedLines = ReceivedLines()) throws -> UnixSocket {
    let line = try ControlJSON.encode(reply) + "\n"
    try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
    let server = try UnixSocket.listen(path: socket, mode: 0o600)
    let answering = Thread {
      while let client = try? server.accept(timeout: 20) {
        if let request = try? client.readLine() { requests.append(request) }
        try? client.writeAll(line)
      }
    }
    answering.start()
    return server
  }
}

/// Lines a test's stand-in service received, from its thread.
final class ReceivedLines: @unchecked Sendable {
  private let lock = NSLock()
  private var received: [String] = []

  func append(_ line: String) { lock.withLock { received.append(line) } }
  var lines: [String] { lock.withLock { received } }
}

/// A running `workoutd`, with its stderr kept in a file.
final class ServiceProcess: @unchecked Sendable {
  let process = Process()
  let logPath: String
  let directory: ServiceDirectory

  init(_ directory: ServiceDirectory, arguments: [String], environment: [String: String] = [:]) throws {
    self.directory = directory
    logPath = directory.path + "/workoutd-\(UUID().uuidString.prefix(6)).log"
    FileManager.default.createFile(atPath: logPath, contents: nil)
    process.executableURL = URL(fileURLWithPath: binaryDirectory + "/workoutd")
    process.arguments = ["--state-dir", directory.state, "--runtime-dir", directory.runtime] + arguments
    var env = ProcessInfo.processInfo.environment
    env.removeValue(forKey: "NOTIFY_SOCKET")
    env.removeValue(forKey: "JOURNAL_STREAM")
    for (key, value) in environment { env[key] = value }
    process.environment = env
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
    process.standardOutput = FileHandle.nullDevice
    try process.run()
  }

  var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

  /// A service in `directory` at real speed with auto-pause off (the ride's first minutes stand
  /// still, and points must keep coming), its session started by `workoutctl start` and recording.
  static func recording(in directory: ServiceDirectory) throws -> ServiceProcess {
    let config = directory.path + "/workoutd.toml"
    try "[auto_pause]\nenabled = false\n".write(toFile: config, atomically: true, encoding: .utf8)
    let service = try ServiceProcess(directory, arguments: ["--speed", "1", "--config", config])
    try service.waitUntilReady()
    let started = try directory.workoutctl(["start"])
    guard started.status == 0 else { throw TestFailure("workoutctl start: \(started.output)") }
    try waitFor("recording", timeout: 30) { try service.status().points >= 2 }
    return service
  }

  /// Waits until the service says it is ready (its control socket answers).
  func waitUntilReady(timeout: Double = 30) throws {
    try waitFor("workoutd to become ready", timeout: timeout) { log.contains("ready:") }
  }

  func control(_ command: ControlCommand) throws -> ControlReply {
    try sendControl(ControlRequest(command: command), socketPath: directory.socket, timeout: 10)
  }

  func status() throws -> StatusReport {
    guard let status = try control(.status).status else { throw TestFailure("no status in the reply") }
    return status
  }

  func signal(_ number: Int32) {
    kill(process.processIdentifier, number)
  }

  /// Waits for the process to exit and returns its status.
  @discardableResult
  func waitForExit(timeout: Double = 30) throws -> Int32 {
    try waitFor("workoutd to exit", timeout: timeout) { !process.isRunning }
    return process.terminationStatus
  }

  deinit {
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }
}

struct TestFailure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Polls `condition` every `interval` seconds (50 ms) until it holds or `timeout` passes (then
/// throws).
func waitFor(_ what: String, timeout: Double, interval: Double = 0.05, _ condition: () throws -> Bool) throws {
  let deadline = Date().addingTimeInterval(timeout)
  while Date() < deadline {
    if (try? condition()) == true { return }
    usleep(UInt32(interval * 1_000_000))
  }
  if try condition() { return }
  throw TestFailure("timed out after \(timeout) s waiting for \(what)")
}

/// Runs a command and returns its exit status and output.
@discardableResult
func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: executable)
  process.arguments = arguments
  let pipe = Pipe()
  process.standardOutput = pipe
  process.standardError = pipe
  try process.run()
  let data = pipe.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// Garmin's FIT SDK's reading of a file (Tests/WorkoutExportTests/read_fit.py).
func decodeFIT(_ path: String) throws -> [String: Any] {
  let python = repositoryRoot + "/.build/pyref/bin/python"
  guard FileManager.default.isExecutableFile(atPath: python) else {
    throw TestFailure("no reference decoders in \(python): make test makes them")
  }
  let process = Process()
  process.executableURL = URL(fileURLWithPath: python)
  process.arguments = [repositoryRoot + "/Tests/WorkoutExportTests/read_fit.py", path]
  let pipe = Pipe()
  process.standardOutput = pipe
  try process.run()
  let output = pipe.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  guard process.terminationStatus == 0, let decoded = try JSONSerialization.jsonObject(with: output) as? [String: Any]
  else { throw TestFailure("read_fit.py failed on \(path)") }
  return decoded
}
