import Foundation
import LinuxSupport
import Logging
import Synchronization
import WorkoutControl

#if canImport(Glibc)
  import Glibc
#endif

/// The local control socket: a Unix stream socket in the runtime directory, mode 0660 and owned
/// by the service's group, so `workoutctl` (and ssh users in that group) can act as the buttons
/// do. Each client on a thread of its own, with `requestDeadline` seconds in all to send its
/// request line, so no client (a slow one, a crowd of idle ones) keeps another waiting; at most
/// `maximumClients` at once, beyond which a client is told the service is busy. Requests go to
/// the engine thread through the same queue as every other input.
///
/// `@unchecked Sendable`: what threads share is in `state`, a `Mutex`; `socket` is shut down
/// from `stop()` while the accept thread waits on it, which is how that wait is ended; and
/// `acceptThread` is written once by `start()`, before that thread exists.
final class ControlServer: @unchecked Sendable {
  let path: String
  private let socket: UnixSocket
  private let queue: InputQueue<RuntimeMessage>
  private let log: Logger
  /// Shared by the accept thread, the client threads and `stop()`.
  private struct State {
    var stopping = false
    var finished = false
    var clients = 0
    var scanning = false
  }
  private let state = Mutex(State())
  private var acceptThread: DeviceThread?
  /// Answers the sensor commands (scan, add, remove, list) on the client's thread (the board's,
  /// not the engine's business); nil where the board has no Bluetooth. `stopping` ends a scan
  /// early.
  private let sensors: SensorRoster?
  private let stopping = StopSignal()
  /// Answers the pairing commands; nil while the web server is off. Set before `start()`.
  var web: WebServer?
  /// Seconds a client has to send its whole request line.
  static let requestDeadline = 2.0
  static let maximumClients = 64

  init(
    path: String, group: gid_t?, queue: InputQueue<RuntimeMessage>, log: Logger,
    sensors: SensorRoster? = nil
  ) throws(SystemError) {
    self.path = path
    self.queue = queue
    self.log = log
    self.sensors = sensors
    let directory = (path as NSString).deletingLastPathComponent
    if !FileManager.default.fileExists(atPath: directory) {
      try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }
    socket = try UnixSocket.listen(path: path, mode: 0o660, group: group)
  }

  func start() {
    do {
      acceptThread = try DeviceThread.start(name: "control") { [self] in serve() }
    } catch {
      log(.error, "control socket: cannot start its thread: \(error)")
    }
  }

  func stop() {
    state.withLock { $0.stopping = true }
    stopping.stop()
    // The accept loop blocks without a timeout (an idle board should not wake for nothing):
    // shutting the socket down wakes it.
    socket.shutDown()
    for _ in 0..<100 where !state.withLock({ $0.finished }) { usleep(10_000) }
    // Clients finish within their deadlines (the engine's answer included).
    for _ in 0..<300 where state.withLock({ $0.clients }) > 0 { usleep(10_000) }
    socket.close()
    unlink(path)
  }

  private func serve() {
    defer { state.withLock { $0.finished = true } }
    while !state.withLock({ $0.stopping }) {
      let client: UnixSocket?
      do {
        client = try socket.accept(timeout: .infinity)
      } catch {
        if state.withLock({ $0.stopping }) { break }
        log(.warning, "control socket: \(error)")
        usleep(100_000)
        continue
      }
      guard let client else { continue }
      let admitted = state.withLock { state -> Bool in
        guard state.clients < Self.maximumClients else { return false }
        state.clients += 1
        return true
      }
      guard admitted else {
        refuseBusy(client)
        continue
      }
      do {
        try DeviceThread.detach(name: "control client") { [self] in
          defer { state.withLock { $0.clients -= 1 } }
          handle(client)
        }
      } catch {
        state.withLock { $0.clients -= 1 }
        refuseBusy(client)
      }
    }
  }

  /// One scan at a time: a second asker is told, not queued (the radio does one discovery).
  private func sensorCommand(_ request: ControlRequest) -> ControlReply {
    guard let sensors else {
      return ControlReply(
        ok: false, message: "this board has no Bluetooth to scan with or sensors to choose (the simulated board)")
    }
    guard request.command == .scanSensors else { return sensors.handle(request, stop: stopping) }
    let admitted = state.withLock { state -> Bool in
      guard !state.scanning else { return false }
      state.scanning = true
      return true
    }
    guard admitted else { return ControlReply(ok: false, message: "a sensor scan is already running; try again") }
    defer { state.withLock { $0.scanning = false } }
    log(.info, "sensor scan: \(Int(request.scanSeconds)) s, asked over the control socket")
    let reply = sensors.handle(request, stop: stopping)
    if let scan = reply.scan {
      log(
        .info,
        "sensor scan on \(scan.controller): \(scan.devices.count) device(s)\(scan.sharedDiscovery ? " (discovery shared with another client)" : "")"
      )
    } else {
      log(.warning, "sensor scan failed: \(reply.message ?? "no reason")")
    }
    return reply
  }

  /// Too many clients at once: this one is told so at once, not kept waiting.
  private func refuseBusy(_ client: UnixSocket) {
    defer { client.close() }
    let reply = ControlReply(
      ok: false, message: "busy: \(Self.maximumClients) control clients are connected; try again")
    try? client.setTimeouts(seconds: 0.2)
    try? client.writeAll((try? ControlJSON.encode(reply)).map { $0 + "\n" } ?? "")
  }

  private func handle(_ client: UnixSocket) {
    defer { client.close() }
    do {
      try client.setTimeouts(seconds: Self.requestDeadline)
      guard let line = try client.readLine(limit: 4096, deadline: SystemClocks.monotonic() + Self.requestDeadline)
      else { return }
      let reply: ControlReply
      if let request = try? ControlJSON.decode(ControlRequest.self, from: line),
        SensorRoster.commands.contains(request.command)
      {
        reply = sensorCommand(request)
      } else if let request = try? ControlJSON.decode(ControlRequest.self, from: line),
        [.pair, .listPairings, .revokePairing].contains(request.command)
      {
        reply =
          web?.handle(request)
          ?? ControlReply(ok: false, message: "the web server is off: set [web] enabled = true in the configuration")
      } else if let request = try? ControlJSON.decode(ControlRequest.self, from: line) {
        let box = ReplyBox()
        queue.post(.control(request, box))
        reply = box.wait(seconds: 10) ?? ControlReply(ok: false, message: "the engine did not answer in time")
      } else {
        reply = ControlReply(
          ok: false,
          message:
            "not a request: expected {\"command\": one of \(ControlCommand.allCases.map(\.rawValue).joined(separator: ", "))}"
        )
      }
      try client.writeAll(try ControlJSON.encode(reply) + "\n")
    } catch {
      log(.warning, "control client: \(error)")
    }
  }
}
