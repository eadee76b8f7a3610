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
/// `maximumClients` at once and `clientsPerUser` of one user (SO_PEERCRED's uid: one user's idle
/// crowd cannot shut out another's `workoutctl status`), beyond which a client is told the
/// socket is busy. Requests go to the engine thread through the same queue as every other input.
///
/// `@unchecked Sendable`: what threads share is in `scanning` (a `Mutex`), `clients` and
/// `stopping`; `acceptThread` is written by `start()` before that thread exists and taken by
/// `stop()` after the stop request.
final class ControlServer: @unchecked Sendable {
  let path: String
  private let socket: UnixSocket
  private let queue: InputQueue<RuntimeMessage>
  private let log: Logger
  /// Whether a sensor scan runs (one at a time).
  private let scanning = Mutex(false)
  private var acceptThread: DeviceThread?
  /// Answers the sensor commands (scan, add, remove, list) on the client's thread (the board's,
  /// not the engine's business); nil where the board has no Bluetooth. `stopping` ends a scan
  /// early.
  private let sensors: SensorRoster?
  private let stopping = StopSignal()
  private let clients = ClientThreads(limit: ControlServer.maximumClients, perPeer: ControlServer.clientsPerUser)
  /// Answers the pairing commands; nil while the web server is off. Set before `start()`.
  var web: WebServer?
  /// Answers the upload commands. Set before `start()`.
  var uploads: UploadControl?
  /// Seconds a client has to send its whole request line.
  static let requestDeadline = 2.0
  static let maximumClients = 64
  /// A quarter of the places: a user's scripts run a few commands at once, not sixteen.
  static let clientsPerUser = 16

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

  func start() throws(SystemError) {
    acceptThread = try DeviceThread.start(name: "control") { [self] in serve() }
  }

  /// Ends the accept loop, waits for the clients (each within its deadline, the engine's
  /// answer included) and removes the socket.
  func stop() {
    stopping.stop()
    acceptThread?.join()
    acceptThread = nil
    if !clients.waitUntilNone(until: SystemClocks.monotonic() + Self.requestDeadline + 1) {
      log(.warning, "control socket: a client was still connected at stop")
    }
    socket.close()
    unlink(path)
  }

  private func serve() {
    while true {
      var listening = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
      let client: UnixSocket?
      do {
        if try stopping.poll(&listening, until: nil) { return }
        client = try socket.accept(timeout: 0)
      } catch {
        log(.warning, "control socket: \(error)")
        if stopping.wait(seconds: 0.1) { return }
        continue
      }
      guard let client else { continue }
      let user = (try? client.peerCredentials()).map { "uid \($0.uid)" } ?? "unknown"
      // The request's deadline runs from its accept, not from when its thread first runs: a
      // stop waits for the clients accepted before it no longer than the deadline and a second.
      let deadline = SystemClocks.monotonic() + Self.requestDeadline
      if let refusal = clients.start(
        name: "control client", peer: user, { [self] in handle(client, deadline: deadline) },
        closing: { client.close() })
      {
        refuseBusy(client, refusal)
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
    let admitted = scanning.withLock { scanning -> Bool in
      guard !scanning else { return false }
      scanning = true
      return true
    }
    guard admitted else { return ControlReply(ok: false, message: "a sensor scan is already running; try again") }
    defer { scanning.withLock { $0 = false } }
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

  /// Too many clients at once: this one is told so at once, not kept waiting. (A Unix socket's
  /// reader gets what was written before the close, whatever it sent: no reset to avoid.)
  private func refuseBusy(_ client: UnixSocket, _ refusal: ClientCounts.Refusal) {
    defer { client.close() }
    let crowd =
      switch refusal {
      case .peerFull: "\(Self.clientsPerUser) control clients of this user are connected"
      case .full: "\(Self.maximumClients) control clients are connected"
      }
    let reply = ControlReply(ok: false, refusal: ControlReply.busy, message: "busy: \(crowd); try again")
    try? client.setTimeouts(seconds: 0.2)
    try? client.writeAll((try? ControlJSON.encode(reply)).map { $0 + "\n" } ?? "")
  }

  /// Answers one request; the client's socket is closed by `clients` once its place is free.
  private func handle(_ client: UnixSocket, deadline: Double) {
    do {
      try client.setTimeouts(seconds: Self.requestDeadline)
      guard let line = try client.readLine(limit: 4096, deadline: deadline)
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
      } else if let request = try? ControlJSON.decode(ControlRequest.self, from: line),
        UploadControl.commands.contains(request.command)
      {
        reply =
          uploads?.handle(request, wall: SystemClocks.wall())
          ?? ControlReply(ok: false, message: "this service keeps no upload queue")
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
