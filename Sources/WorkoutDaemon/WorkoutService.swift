import BoardLinux
import BoardSim
import Foundation
import LinuxSupport
import Logging
import WorkoutCore
import WorkoutStore

#if canImport(Glibc)
  import Glibc
#endif

/// Exit codes, as the service's unit and scripts see them.
public enum ServiceExit {
  public static let success: Int32 = 0
  /// A runtime failure (cannot open the database, cannot bind the control socket).
  public static let failure: Int32 = 1
  /// A bad configuration: fix the file, restarting will not help.
  public static let badConfiguration: Int32 = 2
  /// The database cannot be used as it is (read-only to this user, written by a newer
  /// release, a directory it cannot write): the log names the file and the fix. Nothing was
  /// written to it.
  public static let storageNeedsOperator: Int32 = 3
}

/// Wires the service together: store, board, engine, control socket, systemd; then runs the
/// engine loop on the calling thread until SIGTERM.
public enum WorkoutService {
  public static func run(configuration: DaemonConfiguration, log: Logger) -> Int32 {
    let notifier = SystemdNotifier(environment: ProcessInfo.processInfo.environment)
    let queue = InputQueue<RuntimeMessage>()
    // Every long-lived part joins this group as it starts, and is stopped by it in reverse.
    let parts = ServiceGroup(log: log)
    defer { parts.stopAll() }
    var signalWatchStarted = true
    parts.start(SignalWatch(queue: queue)) { error in
      log(.error, "cannot start the thread that waits for SIGTERM: \(error)")
      signalWatchStarted = false
    }
    guard signalWatchStarted else { return ServiceExit.failure }

    // What start-up would refuse, before anything is written.
    let problems = StartupCheck.problems(configuration)
    guard problems.isEmpty else {
      for problem in problems { log(.error, "bad configuration: \(problem)") }
      return ServiceExit.badConfiguration
    }

    // One service per state directory: a second would check, move aside or write the first's
    // database under it. Held until this process ends, however it ends.
    let stateLock: FileDescriptor?
    switch lockStateDirectory(configuration.stateDirectory) {
    case .held(let lock): stateLock = lock
    case .taken:
      log(
        .error,
        "another workoutd is using \(configuration.stateDirectory) (it holds the directory's lock); stop it first, or give this one its own --state-dir"
      )
      return ServiceExit.failure
    case .failed(let error):
      // A directory it cannot open is the store's to refuse, with its own words and fix.
      log(.warning, "cannot lock the state directory \(configuration.stateDirectory): \(error)")
      stateLock = nil
    }
    defer { withExtendedLifetime(stateLock) {} }

    // The store first: nothing is recorded without it.
    let store: WorkoutStore
    do {
      let (opened, notices) = try WorkoutStore.open(at: configuration.databasePath, wallNow: SystemClocks.wall())
      store = opened
      for notice in notices {
        switch notice {
        case .created(let path):
          log(.notice, "created database \(path)")
        case .movedAside(let path, let movedTo, let reason):
          log(
            .error,
            "database \(path) failed its integrity check (\(reason)); moved it aside to \(movedTo.joined(separator: ", ")) and started a fresh one"
          )
        case .uncleanStop(let path, let walBytes):
          log(
            .notice,
            "database \(path): the last stop was not clean (\(walBytes) bytes of WAL to replay); checking it in the background"
          )
        case .checkedAgain(let path, let result):
          log(.notice, "database \(path): an earlier check found damage; checked again: \(result)")
        }
      }
    } catch {
      log(.error, "cannot open database \(configuration.databasePath): \(error)")
      return error.needsOperator ? ServiceExit.storageNeedsOperator : ServiceExit.failure
    }

    // The board: its clock, its devices, what the engine drives.
    let board: any Board
    do {
      board = try Boards.open(configuration, log: log)
    } catch {
      log(.error, error.message)
      return error.exitCode
    }
    let clock = board.clock

    // The engine, resuming whatever was left unfinished.
    var settings = configuration.engineSettings
    settings.gpsClock = board.gpsClockSettings
    // The control socket before any session is touched: a service that cannot open it stops
    // here, and a restart loop does not add a `recovered` event to the session each time.
    let server: ControlServer
    do {
      server = try ControlServer(
        path: configuration.controlSocketPath, group: try groupID(configuration.controlSocketGroup), queue: queue,
        log: log, sensors: board.sensors)
    } catch {
      log(.error, "cannot open the control socket \(configuration.controlSocketPath): \(error)")
      return ServiceExit.failure
    }
    let uploadControl = UploadControl(
      store: store, settings: configuration.upload, stateDirectory: configuration.stateDirectory, log: log)
    server.uploads = uploadControl

    var engine: SessionEngine
    var startupCommands: [EngineCommand] = []
    (engine, startupCommands) = resumeUnfinished(store: store, settings: settings, clock: clock, log: log)

    let sink = QueueSink(queue: queue, clock: clock)
    var outputs = RuntimeOutputs(board: board.outputs, uploadTargets: configuration.upload.targets)
    // The phone's screen: off unless enabled; one that cannot start is said once, loudly,
    // and recording goes on without it.
    var web: WebServer?
    if configuration.web.enabled {
      do {
        let identity =
          configuration.web.tls
          ? try WebIdentity.load(configuration.web, stateDirectory: configuration.stateDirectory, log: log) : nil
        let webServer = try WebServer(
          settings: configuration.web, identity: identity, store: store, queue: queue, log: log)
        let feed = webServer.feed
        outputs.statusWanted = { feed.wanted }
        outputs.statusCommitted = { feed.hand($0) }
        web = webServer
      } catch {
        log(.error, "web: \(error); the phone page is off until this is fixed and the service restarted")
      }
    }
    var exporter: SessionExporter?
    if configuration.export.enabled {
      let sessionExporter = SessionExporter(
        databasePath: store.path, ledger: store, formats: configuration.export.formats,
        directory: configuration.exportDirectory, sink: sink, log: log,
        drive: configuration.usbDrive.enabled
          ? UsbDrive(image: configuration.usbDriveImage, formats: configuration.usbDrive.formats, log: log) : nil)
      outputs.sessionEnded = { _ in sessionExporter.kick() }
      outputs.exportsWritten = { store, id in sessionExporter.hasExported(sessionID: id, in: store) }
      exporter = sessionExporter
    }

    // Each ended ride sent to the rider's platforms: off unless [upload] names one.
    var uploader: Uploader?
    if !configuration.upload.targets.isEmpty {
      let part = Uploader(
        settings: configuration.upload, store: store, stateDirectory: configuration.stateDirectory, sink: sink,
        log: log)
      let exported = outputs.sessionEnded
      outputs.sessionEnded = { id in
        exported?(id)
        part.kick()
      }
      uploadControl.onQueued { part.kick() }
      uploader = part
    }

    var runtimeSettings = RuntimeSettings(epoch: clock.epoch, databasePath: store.path)
    outputs.engineReadDevices = board.devices.compactMap { $0 as? any EngineReadDevice }
    runtimeSettings.readsDevices = !outputs.engineReadDevices.isEmpty
    runtimeSettings.idleReadInterval = min(3, configuration.gps.fixLostAfter / 2)
    runtimeSettings.boardWallTrusted = board.gpsClockSettings == nil && clock.wallTrusted
    let runtime = ServiceRuntime(
      engine: engine, store: store, clock: clock, queue: queue, notifier: notifier, log: log, boardName: board.name,
      settings: runtimeSettings, outputs: outputs, firstTick: board.firstTick)
    runtime.execute(startup: startupCommands)

    if let web {
      parts.start(web) { error in log(.error, "web: cannot start its thread: \(error)") }
      server.web = web
      let place =
        "\(configuration.web.address):\(web.port)" + (configuration.web.interface.map { " of \($0) only" } ?? "")
      if let fingerprint = web.routes.fingerprint {
        log(
          .notice,
          "web: serving the phone page on \(place) (HTTPS, certificate SHA-256 \(fingerprint)) from \(web.routes.assets)"
        )
      } else {
        log(
          .warning,
          "web: serving the phone page on \(place) (plain HTTP: anyone on the network can read the phone's token) from \(web.routes.assets)"
        )
      }
    }
    parts.start(server) { error in log(.error, "control socket: cannot start its thread: \(error)") }

    let devices: [any DeviceSource] = board.devices + (board.sensors.map { [$0] } ?? [])
    for device in devices {
      log(.info, "starting \(device.name)")
      parts.start(DevicePart(device, sink: sink)) { _ in }
    }

    notifier.notify("READY=1\nSTATUS=recording ready")
    log(
      .notice,
      "ready: database \(store.path), control socket \(server.path), \(board.name) board, \(settings.activity.rawValue)"
    )
    // What start-up ran (the configuration, the migrations, the resume) is not what a recorded
    // second runs: its code's pages leave the resident size (ProcessMemory.releaseCodePages).
    do {
      let released = try ProcessMemory.releaseCodePages()
      log(.info, "let go of \(released) KiB of start-up code's pages")
    } catch {
      log(.notice, "start-up code's pages stay resident: \(error)")
    }

    if !configuration.usbDrive.enabled && access(configuration.usbDriveImage, F_OK) == 0 {
      UsbDrive.retire(image: configuration.usbDriveImage, log: log)
    }
    var exports: ExporterPart?
    if let sessionExporter = exporter {
      // With an integrity check to run, the exporter's first pass (a catch-up of many
      // sessions after an upgrade) waits for it: the two at once would hold both their
      // connections' caches and working memory at the same moment (make bench's READY peak).
      let part = ExporterPart(sessionExporter, firstPass: !store.integrityCheckIsDue)
      parts.start(part) { error in
        // Told as a device fault: status, the LED, an event, this line.
        log(.error, "cannot start the exporter: \(error); sessions are exported at the next start")
        sink.post(.device(DeviceStatus(device: .exports, condition: .failing, detail: "cannot start: \(error)")))
      }
      if parts.isRunning(part) { exports = part } else { exporter = nil }
    }

    if let uploader {
      parts.start(uploader) { error in
        log(.error, "cannot start the uploader: \(error); rides wait in the queue until the next start")
        sink.post(.device(DeviceStatus(device: .uploads, condition: .failing, detail: "cannot start: \(error)")))
      }
    }

    if store.integrityCheckIsDue {
      // Off the engine thread, on a read-only connection of its own: recording goes on.
      do {
        try DeviceThread.detach(name: "integrity check") { [exporter] in
          let started = SystemClocks.monotonic()
          let result = store.backgroundIntegrityCheck()
          queue.post(.integrityChecked(result, seconds: SystemClocks.monotonic() - started))
          exporter?.kick()
        }
      } catch {
        log(.error, "cannot start the background integrity check of \(store.path): \(error); it runs at the next start")
        exporter?.kick()
      }
    }

    // Room for the WAL's frames, written once now rather than grown by every commit of the
    // next quarter-hour (see `preallocateWAL`); after READY, as it writes about 2 MB.
    do {
      try store.preallocateWAL()
    } catch {
      log(
        .warning, "cannot make room in the WAL of \(store.path) (\(error)); each commit grows it until it is full size")
    }

    let code = runtime.run()
    // A stop waits for exports a bounded time (systemd's stop timeout; the next start
    // completes them); a replay's end, which nothing hurries, waits until the ride is
    // exported, however slow the CPU (`make run` on a Pi, an emulated one).
    exports?.stopWaiting = runtime.endedWithReplay ? .infinity : 10
    parts.stopAll()
    let exportsFinished = exports?.finished ?? true
    board.finish(code: code, log: log)
    // Nothing else writes now: the WAL is kept at its size for the next start. (An exporter
    // still at work could write its ledger after the close: then SQLite closes as it would.)
    if exportsFinished {
      let closed = store.closeKeepingWAL()  // not inside log(): its message is only made at that level
      log(.info, closed)
    }
    return code
  }

  /// The engine, carrying on the latest unfinished session. Never fatal: a session whose saved
  /// state this binary cannot read is rebuilt from its events and points; one that cannot be
  /// rebuilt either is closed with an `abandoned` event and its data kept, as is one older than
  /// the latest (only one is carried on); a store that cannot even be asked starts an engine
  /// with nothing to resume (its writes will then fail loudly).
  static func resumeUnfinished(
    store: WorkoutStore, settings: EngineSettings, clock: any BoardClock, log: Logger
  ) -> (SessionEngine, [EngineCommand]) {
    let now = ClockStamp(epoch: clock.epoch, moment: clock.now(), wallTrusted: clock.wallTrusted)
    var resumable: [ResumableSession] = []
    var nextID: Int64 = 1
    do {
      nextID = try store.maxSessionID() + 1
      for unfinished in try store.unfinishedSessions(settings: settings) {
        switch unfinished {
        case .resumable(let session):
          if case .rebuilt(let reason) = session.basis {
            log(
              .warning,
              "session \(session.session.id): resume checkpoint unreadable (\(reason)); rebuilt it from its events and points"
            )
          }
          resumable.append(session)
        case .ended(let id):
          log(
            .warning,
            "session \(id): its row's state cannot be read (a damaged record); its event log says it ended: marked ended again"
          )
          do { try store.markEnded(sessionID: id) } catch {
            log(.error, "cannot mark session \(id) ended: \(error)")
          }
        case .unresumable(let id, let state, let reason):
          log(.error, "session \(id) cannot be resumed (\(reason)): closing it; its points and events are kept")
          do {
            try store.closeUnresumable(sessionID: id, state: state, reason: reason, clock: now)
          } catch {
            log(.error, "cannot close session \(id): \(error)")
          }
        }
      }
    } catch {
      log(.error, "cannot read unfinished sessions from \(store.path): \(error); starting with none to resume")
    }
    guard let latest = resumable.last else {
      return (SessionEngine(settings: settings, nextSessionID: nextID), [])
    }
    for older in resumable.dropLast() {
      // Only one session is carried on; an older one left open would never be resumed, ended
      // or exported. It is closed as one that cannot be resumed is, its data kept.
      let reason = "session \(latest.session.id), later, was also left unfinished and is the one resumed"
      log(
        .warning,
        "session \(older.session.id) was also left \(older.session.state.rawValue) (\(reason)): closing it; its points and events are kept"
      )
      do {
        try store.closeUnresumable(
          sessionID: older.session.id, state: older.session.state.rawValue, reason: reason, clock: now)
      } catch {
        log(.error, "cannot close session \(older.session.id): \(error)")
      }
    }
    let gap = RecoveryGap.between(latest.lastCommit, and: now)
    return SessionEngine.resuming(
      latest.session, settings: settings, nextSessionID: nextID, gap: gap, at: now.moment, lastPoint: latest.lastPoint,
      unreadable: latest.unreadable, incident: openIncident(of: latest.session.id, in: store, log: log))
  }

  /// The incident alarm the session's events leave on, to sound again after the restart.
  private static func openIncident(of sessionID: Int64, in store: WorkoutStore, log: Logger) -> OpenIncident? {
    do {
      return OpenIncident.left(
        by: try store.events(sessionID: sessionID).lazy.compactMap { event in
          SessionEvent.Kind(rawValue: event.kind).map { (kind: $0, value: event.value) }
        })
    } catch {
      log(.error, "session \(sessionID): cannot read its events to see whether the incident alarm was on: \(error)")
      return nil
    }
  }

  private static func groupID(_ name: String?) throws(SystemError) -> gid_t? {
    guard let name else { return nil }
    guard let entry = getgrnam(name) else {
      throw SystemError("getgrnam", errno: ENOENT, context: "group \"\(name)\"")
    }
    return entry.pointee.gr_gid
  }
}

/// GPS times before this are not believed: a receiver hit by a week rollover says 1999 or
/// 2003, and gpsd may resolve an old date forwards by 1024 weeks. This version was made in
/// November 2026; no ride it records can be older.
let earliestPlausibleGPSTime: Double = 1_793_491_200  // 2026-11-01T00:00:00Z

/// Where the package's data (`$(DATADIR)/workoutd/...`) is found: next to an installed binary
/// (`../share/workoutd`), in the system's data directories, or in the source tree (`make run`,
/// the tests).
enum SharedData {
  static func candidates(installed path: String, inSourceTree sourcePath: String) -> [String] {
    let executable =
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    let binDirectory = (executable as NSString).deletingLastPathComponent
    let sourceTree = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().path
    return [
      "\(binDirectory)/../share/workoutd/\(path)", "/usr/share/workoutd/\(path)", "/usr/local/share/workoutd/\(path)",
      "\(sourceTree)/\(sourcePath)",
    ].map { ($0 as NSString).standardizingPath }
  }
}

/// Where the bundled ride (board/sim/rides) is found: next to an installed binary, in the
/// system's data directories, or in the source tree for `make run`.
enum BundledRide {
  static let fileName = "garmin-edge-500-2011-09-25.csv"

  static func candidates() -> [String] {
    SharedData.candidates(installed: "rides/\(fileName)", inSourceTree: "board/sim/rides/\(fileName)")
  }

  static func find() -> String? {
    candidates().first { FileManager.default.fileExists(atPath: $0) }
  }
}

enum StateLock {
  case held(FileDescriptor)
  case taken
  case failed(SystemError)
}

/// The state directory (made if missing, as the store would), locked with flock(2).
func lockStateDirectory(_ path: String) -> StateLock {
  try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  do {
    let directory = try FileDescriptor.openDirectory(path)
    return try directory.tryLockExclusive() ? .held(directory) : .taken
  } catch {
    return .failed(error)
  }
}
