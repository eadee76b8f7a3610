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
    do {
      try DeviceThread.detach(name: "signals") {
        let signal = TerminationSignals.wait()
        queue.post(.terminate(signal: signal))
      }
    } catch {
      log(.error, "cannot start the thread that waits for SIGTERM: \(error)")
      return ServiceExit.failure
    }

    // What start-up would refuse, before anything is written.
    let problems = StartupCheck.problems(configuration)
    guard problems.isEmpty else {
      for problem in problems { log(.error, "bad configuration: \(problem)") }
      return ServiceExit.badConfiguration
    }

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

    // The board: its clock and devices.
    let clock: any BoardClock
    var devices: [any DeviceSource] = []
    var simRide: SimulatedRide?
    var pulledReplay: (schedule: ReplaySchedule, clock: VirtualClock)?
    var led: GPIOOutputLine?
    var buzzer: GPIOOutputLine?
    var gpsCorrectedClock: GPSCorrectedClock?
    var firstTick: Double?
    let boardName: String
    switch configuration.board {
    case .sim:
      let ridePath = configuration.simRide ?? BundledRide.find()
      guard let ridePath else {
        log(
          .error,
          "no ride to replay: set [sim] ride, or install the bundled one (looked in \(BundledRide.candidates().joined(separator: ", ")))"
        )
        return ServiceExit.badConfiguration
      }
      // Read the whole file once now, so a malformed row is a start-up error with its line.
      let ride: ReplayRideHeader
      let schedule: ReplaySchedule
      do {
        let validated = try ReplayRideReader.validate(path: ridePath)
        ride = validated.header
        if !validated.pressesStart {
          log(
            .notice,
            "\(ridePath) has no start press: nothing is recorded unless a session is started (workoutctl start)")
        }
        schedule = ReplaySchedule(
          header: ride, rows: try ReplayRideReader(path: ridePath), countdown: configuration.countdown)
      } catch {
        log(.error, "cannot replay \(ridePath): \(error)")
        return ServiceExit.badConfiguration
      }
      boardName = "sim"
      guard let speed = configuration.simSpeed else {
        // Full speed: virtual time, pulled by the engine loop. Such a world is never resumed.
        let virtual = VirtualClock(
          epoch: "sim-virtual-" + UUID().uuidString.lowercased(), startTime: schedule.startTime,
          startWall: ride.startWall)
        clock = virtual
        pulledReplay = (schedule, virtual)
        log(.notice, "simulated board: replaying \(ridePath) at full speed (virtual time)")
        break
      }
      let (world, resumed) = SimulatedWorld.resume(
        path: configuration.simWorldPath, ride: ride, speed: speed,
        startTime: schedule.startTime, hostNow: SystemClocks.boottime(), bootID: SystemClocks.bootID())
      do {
        try world.save(to: configuration.simWorldPath)
      } catch {
        log(.error, "cannot save the simulated world to \(configuration.simWorldPath): \(error)")
        return ServiceExit.failure
      }
      let simClock = SimulatedClock(world: world)
      clock = simClock
      if !resumed { firstTick = schedule.startTime }
      let replay = SimulatedRide(
        ridePath: ridePath, clock: simClock, countdown: configuration.countdown, resumingWorld: resumed)
      simRide = replay
      devices.append(replay)
      log(
        .notice,
        "simulated board: \(resumed ? "resuming" : "starting") \(ridePath) at \(speed)× (world \(world.id), t=\(Int(simClock.worldTime())) s)"
      )
    case .linux:
      let gpsClock = GPSCorrectedClock(base: LinuxBoardClock())
      clock = gpsClock
      gpsCorrectedClock = gpsClock
      boardName = "linux"
      do {
        let board = try LinuxBoardDevices(configuration)
        devices = board.devices
        led = board.led
        buzzer = board.buzzer
      } catch {
        log(.error, "bad device configuration: \(error)")
        return ServiceExit.badConfiguration
      }
      if devices.isEmpty {
        log(.warning, "linux board: no devices are configured; recording with what there is (control socket only)")
      }
    }

    // The engine, resuming whatever was left unfinished.
    var settings = configuration.engineSettings
    if gpsCorrectedClock != nil {
      settings.gpsClock = GPSClockSettings(earliestPlausible: earliestPlausibleGPSTime)
    }
    // The control socket before any session is touched: a service that cannot open it stops
    // here, and a restart loop does not add a `recovered` event to the session each time.
    let server: ControlServer
    do {
      server = try ControlServer(
        path: configuration.controlSocketPath, group: try groupID(configuration.controlSocketGroup), queue: queue,
        log: log)
    } catch {
      log(.error, "cannot open the control socket \(configuration.controlSocketPath): \(error)")
      return ServiceExit.failure
    }

    var engine: SessionEngine
    var startupCommands: [EngineCommand] = []
    (engine, startupCommands) = resumeUnfinished(store: store, settings: settings, clock: clock, log: log)

    var runtimeSettings = RuntimeSettings(epoch: clock.epoch, databasePath: store.path)
    let engineReadDevices = devices.compactMap { $0 as? any EngineReadDevice }
    runtimeSettings.readsDevices = !engineReadDevices.isEmpty
    runtimeSettings.idleReadInterval = min(3, configuration.gps.fixLostAfter / 2)
    runtimeSettings.boardWallTrusted = gpsCorrectedClock == nil && clock.wallTrusted
    let runtime = ServiceRuntime(
      engine: engine, store: store, clock: clock, queue: queue, notifier: notifier, log: log, boardName: boardName,
      settings: runtimeSettings, firstTick: firstTick)
    runtime.exitWhenReplayEnds = configuration.simExitAtEnd
    if let simRide { runtime.replayFinished = { simRide.finished } }
    runtime.pulledReplay = pulledReplay
    runtime.engineReadDevices = engineReadDevices
    if let led { runtime.indicator = { led.play(OutputPattern($0)) } }
    if let buzzer { runtime.chirp = { buzzer.play(OutputPattern($0)) } }
    if let gpsCorrectedClock {
      runtime.gpsClock = gpsCorrectedClock
      runtime.setsSystemClock = configuration.gps.setSystemClock
    }
    runtime.execute(startup: startupCommands)

    server.start()

    let sink = QueueSink(queue: queue, clock: clock)
    for device in devices {
      log(.info, "starting \(device.name)")
      device.start(sink: sink)
    }

    notifier.notify("READY=1\nSTATUS=recording ready")
    log(
      .notice,
      "ready: database \(store.path), control socket \(server.path), \(boardName) board, \(settings.activity.rawValue)")

    if store.integrityCheckIsDue {
      // Off the engine thread, on a read-only connection of its own: recording goes on.
      do {
        try DeviceThread.detach(name: "integrity check") {
          let started = SystemClocks.monotonic()
          let result = store.backgroundIntegrityCheck()
          queue.post(.integrityChecked(result, seconds: SystemClocks.monotonic() - started))
        }
      } catch {
        log(.error, "cannot start the background integrity check of \(store.path): \(error); it runs at the next start")
      }
    }

    let code = runtime.run()
    for device in devices { device.stop() }
    server.stop()
    if code == ServiceExit.success, simRide?.finished == true {
      // The ride is over: a next start replays a new world.
      try? FileManager.default.removeItem(atPath: configuration.simWorldPath)
      log(.notice, "the simulated ride is over")
    }
    return code
  }

  /// The engine, carrying on the latest unfinished session. Never fatal: a session whose saved
  /// state this binary cannot read is rebuilt from its events and points; one that cannot be
  /// rebuilt either is closed with an `abandoned` event and its data kept; a store that cannot
  /// even be asked starts an engine with nothing to resume (its writes will then fail loudly).
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
      log(
        .warning,
        "session \(older.session.id) was also left \(older.session.state.rawValue); only the latest is resumed")
    }
    let gap = RecoveryGap.between(latest.lastCommit, and: now)
    return SessionEngine.resuming(
      latest.session, settings: settings, nextSessionID: nextID, gap: gap, at: now.moment, lastPoint: latest.lastPoint)
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

/// Where the bundled ride (board/sim/rides) is found: next to an installed binary, in the
/// system's data directories, or in the source tree for `make run`.
enum BundledRide {
  static let fileName = "garmin-edge-500-2011-09-25.csv"

  static func candidates() -> [String] {
    let executable =
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    let binDirectory = (executable as NSString).deletingLastPathComponent
    let sourceTree = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().path
    return [
      "\(binDirectory)/../share/workoutd/rides/\(fileName)",
      "/usr/share/workoutd/rides/\(fileName)",
      "/usr/local/share/workoutd/rides/\(fileName)",
      "\(sourceTree)/board/sim/rides/\(fileName)",
    ].map { ($0 as NSString).standardizingPath }
  }

  static func find() -> String? {
    candidates().first { FileManager.default.fileExists(atPath: $0) }
  }
}
