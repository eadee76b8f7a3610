import BoardLinux
import BoardSim
import LinuxSupport
import Logging
import Synchronization
import WorkoutControl
import WorkoutCore
import WorkoutStore
import WorkoutUpload
import WorkoutWeb

/// What reaches the engine thread.
enum RuntimeMessage: Sendable {
  case input(EngineInput, Moment)
  case control(ControlRequest, ReplyBox)
  case terminate(signal: Int32)
  /// The background integrity check of the database finished: `["ok"]` or what it found.
  case integrityChecked([String], seconds: Double)
  /// A rider's note from the phone page, for session `sessionID` (nil: the current one).
  case annotate(Annotation, sessionID: Int64?, ReplyBox)
}

/// A control client's reply, handed from the engine thread to the server thread: a queue of
/// one, so it waits the same way the engine loop does (CLOCK_MONOTONIC, `InputQueue`).
final class ReplyBox: Sendable {
  private let queue = InputQueue<ControlReply>()

  func fulfil(_ reply: ControlReply) {
    queue.post(reply)
  }

  /// The reply, or nil if none came within `seconds`.
  func wait(seconds: Double) -> ControlReply? {
    queue.next(until: SystemClocks.monotonic() + seconds)
  }
}

/// Stamps device inputs with the board clock as they arrive and queues them for the engine.
struct QueueSink: InputSink {
  let queue: InputQueue<RuntimeMessage>
  let clock: any BoardClock

  func post(_ input: EngineInput) {
    queue.post(.input(input, clock.now()))
  }

  func post(_ input: EngineInput, at moment: Moment) {
    queue.post(.input(input, moment))
  }
}

/// The engine loop's executor: one thread that owns the runtime core (the engine, the
/// scheduler, the held writes) and the store. It reads the clocks, asks the core what is next,
/// and does it: reads the engine-read devices, takes queued messages, writes to the store,
/// talks to systemd, the LED and the buzzer, and waits. Every decision is `RuntimeCore`'s.
final class ServiceRuntime {
  private let log: Logger
  private let clock: any BoardClock
  private let store: WorkoutStore
  private let queue: InputQueue<RuntimeMessage>
  private let notifier: SystemdNotifier
  private let boardName: String
  private let host: any RuntimeHost
  private(set) var core: RuntimeCore

  private let exitWhenReplayEnds: Bool
  private let gpsClock: GPSCorrectedClock?
  private let setsSystemClock: Bool
  private let indicator: ((IndicatorPattern) -> Void)?
  private let chirp: ((ChirpPattern) -> Void)?
  private let sessionEnded: ((Int64) -> Void)?
  private let exportsWritten: ((WorkoutStore, Int64) -> Bool)?
  private let uploadTargets: [UploadTarget]
  private let powerOff: (() -> Void)?
  /// A critical battery's power-off, waiting for the ended ride's exports.
  private var pendingPowerOff: LowBatteryPowerOff?
  /// How many times the board was told to power off (once at most; tests read it).
  private(set) var powerOffsRequested = 0
  private let replayFinished: () -> Bool
  private var pulledReplay: PulledReplay?
  private var pulledReplayFinished = false
  private let engineReadDevices: [any EngineReadDevice]
  private let statusWanted: () -> Bool
  private let statusCommitted: ((StatusReport) -> Void)?
  /// True while the held writes are being written (an action asking for it again waits).
  private var writing = false

  init(
    engine: SessionEngine, store: WorkoutStore, clock: any BoardClock, queue: InputQueue<RuntimeMessage>,
    notifier: SystemdNotifier, log: Logger, boardName: String, settings: RuntimeSettings, outputs: RuntimeOutputs,
    host: any RuntimeHost = SystemHost(), firstTick: Double? = nil
  ) {
    self.host = host
    exitWhenReplayEnds = outputs.board.exitWhenReplayEnds
    gpsClock = outputs.board.gpsClock
    setsSystemClock = outputs.board.setsSystemClock
    indicator = outputs.board.indicator
    chirp = outputs.board.chirp
    replayFinished = outputs.board.replayFinished
    pulledReplay = outputs.board.pulledReplay
    sessionEnded = outputs.sessionEnded
    exportsWritten = outputs.exportsWritten
    uploadTargets = outputs.uploadTargets
    powerOff = outputs.board.powerOff
    engineReadDevices = outputs.engineReadDevices
    statusWanted = outputs.statusWanted
    statusCommitted = outputs.statusCommitted
    self.store = store
    self.clock = clock
    self.queue = queue
    self.notifier = notifier
    self.log = log
    self.boardName = boardName
    var settings = settings
    settings.watchdogInterval = notifier.watchdogInterval
    core = RuntimeCore(engine: engine, settings: settings, now: clock.now(), firstTick: firstTick)
    hostTime = { clock.hostDeadline(forBoardTime: $0) }
  }

  /// The board-to-host time conversion of every `clocks()`, made once: a closure over the
  /// clock made at each turn of the loop was an allocation (and a free) each time.
  private let hostTime: (Double) -> Double

  private func clocks() -> RuntimeClocks {
    RuntimeClocks(board: clock.now(), host: host.monotonic(), hostTime: hostTime)
  }

  /// Carries out commands the engine produced before the loop started (a resumed session's).
  func execute(startup commands: [EngineCommand]) {
    let now = clocks()
    if let gpsClock { perform(core.boardClockTrusted(gpsClock.baseWallTrusted, at: now.board, host: now.host)) }
    perform(core.replay(startup: commands, at: now.board, host: now.host))
  }

  /// Runs until a termination signal (returns 0) or, when asked to, until the replay is done.
  func run() -> Int32 {
    while true {
      let now = clocks()
      let queued: QueuedMessage? =
        switch queue.peek() {
        case .input(_, let moment)?: .input(at: moment.monotonic)
        case .some: .other
        case nil: nil
        }
      switch core.next(now, queued: queued) {
      case .readDevices:
        readDevices(at: now)
      case .takeQueued:
        if process(queue.poll()!) { return 0 }
      case .act(let actions):
        perform(actions)
        if isDone { return replayEnded() }
      case .wait(var hostDeadline, let actions):
        perform(actions)
        if isDone { return replayEnded() }
        if pendingPowerOff != nil {
          powerOffIfReady()
          if pendingPowerOff != nil {
            hostDeadline = min(hostDeadline ?? .infinity, host.monotonic() + LowBatteryPowerOff.checkInterval)
          }
        }
        if let replay = pulledReplay {
          if let message = queue.poll() {
            if process(message) { return 0 }
            continue
          }
          if let step = replay.schedule.next() {
            replay.clock.advance(to: step.time)
            for input in step.inputs {
              perform(core.handle(input, at: replay.clock.now(), host: host.monotonic()).actions)
            }
            continue
          }
          pulledReplay = nil
          pulledReplayFinished = true
          if isDone { return replayEnded() }
        }
        if exitWhenReplayEnds && !pulledReplayFinished && !replayFinished() {
          // A threaded replay says nothing when it ends: look every quarter second (`make run`).
          hostDeadline = min(hostDeadline ?? .infinity, host.monotonic() + 0.25)
        }
        // Only wait here: what arrives is taken at the top of the loop, where its time is
        // weighed against the tick that may have fallen due meanwhile (a reading of second s + 1
        // must not go into second s's point).
        guard host.wait(for: queue, until: hostDeadline) else { return 0 }
      }
    }
  }

  /// Handles one message from the queue; true when the service must stop.
  private func process(_ message: RuntimeMessage) -> Bool {
    switch message {
    case .input(let input, let moment):
      perform(core.handle(input, at: moment, host: host.monotonic()).actions)
    case .control(let request, let reply):
      reply.fulfil(answer(request, at: clock.now()))
    case .terminate(let signal):
      shutDown(signal: signal)
      return true
    case .integrityChecked(let result, let seconds):
      perform(core.integrityChecked(result, seconds: seconds, at: clock.now(), host: host.monotonic()))
    case .annotate(let annotation, let sessionID, let reply):
      reply.fulfil(annotate(annotation, sessionID: sessionID, at: clock.now()))
    }
    return false
  }

  /// True once run() has returned because the replayed ride ended (`--exit-at-end`).
  private(set) var endedWithReplay = false

  private func replayEnded() -> Int32 {
    endedWithReplay = true
    return 0
  }

  private var isDone: Bool {
    exitWhenReplayEnds && (pulledReplayFinished || replayFinished()) && core.isSettled
  }

  /// Reads the engine-read devices; each input is stamped with the moment it arrived.
  private func readDevices(at now: RuntimeClocks) {
    var arrivals: [(input: EngineInput, moment: Moment)] = []
    for device in engineReadDevices {
      device.read { input, age in
        arrivals.append((input, Moment(monotonic: now.board.monotonic - age, wall: now.board.wall - age)))
      }
    }
    if let gpsClock { perform(core.boardClockTrusted(gpsClock.baseWallTrusted, at: now.board, host: now.host)) }
    core.devicesRead(arrivals, at: now)
  }

  // MARK: - Actions

  private func perform(_ actions: [RuntimeAction]) {
    for action in actions {
      switch action {
      case .log(let level, let text): log(level, text)
      case .indicate(let pattern): indicator?(pattern)
      case .chirp(let pattern): chirp?(pattern)
      case .notifySystemd(let message): notifier.notify(message)
      case .writeHeld: writeHeld()
      case .correctBoardClock(let correction):
        gpsClock?.apply(correction)
        if setsSystemClock { setSystemClock(by: correction.systemOffset) }
      case .sessionEnded(let id): sessionEnded?(id)
      case .powerOff(let id): schedulePowerOff(after: id)
      }
    }
  }

  /// A critical battery ended the ride (or found none): the board is powered off once the ride
  /// is exported, if `[battery] power_off` says so.
  private func schedulePowerOff(after sessionID: Int64?) {
    guard core.engine.settings.battery.powerOff else {
      log(.notice, "battery critical: the board stays on ([battery] power_off = false)")
      return
    }
    guard pendingPowerOff == nil, powerOffsRequested == 0 else { return }
    pendingPowerOff = LowBatteryPowerOff(sessionID: sessionID, host: host.monotonic())
    if let sessionID { log(.notice, "battery critical: powering off once session \(sessionID) is exported") }
    powerOffIfReady()
  }

  private func powerOffIfReady() {
    guard let pending = pendingPowerOff else { return }
    let ready = pending.isReady(store: store, exportsWritten: exportsWritten)
    guard ready || host.monotonic() >= pending.giveUpAt else { return }
    pendingPowerOff = nil
    if !ready, let id = pending.sessionID {
      log(
        .warning,
        "session \(id) is not exported after \(formatSeconds(LowBatteryPowerOff.exportWait)): powering off all the same; the next start exports it"
      )
    }
    powerOffsRequested += 1
    guard let powerOff else {
      log(.notice, "battery critical: the board would power off now (this board cannot)")
      return
    }
    log(.notice, "battery critical: powering the board off")
    powerOff()
  }

  /// Writes held writes in order until one fails; that one and all after it wait for the
  /// core's next try.
  private func writeHeld() {
    guard !writing else { return }  // the loop below takes what was just held too
    writing = true
    defer { writing = false }
    while let write = core.nextWrite {
      do {
        try store.write(write.commands, clock: write.stamp)
      } catch {
        perform(core.refused(error.fault, at: clock.now(), host: host.monotonic()))
        return
      }
      perform(core.committed(at: clock.now(), host: host.monotonic()))
    }
    if let statusCommitted, statusWanted() { statusCommitted(statusReport(at: clock.now())) }
  }

  private func setSystemClock(by offset: Double) {
    switch SystemClockSetter().apply(offset: offset) {
    case .stepped(let by): log(.notice, "set the system clock to GPS time (stepped by \(formatSeconds(abs(by))))")
    case .skipped: break
    case .failed(let error): log(.error, "cannot set the system clock to GPS time: \(error) (needs CAP_SYS_TIME)")
    }
  }

  // MARK: - Control

  private func answer(_ request: ControlRequest, at now: Moment) -> ControlReply {
    if request.command == .reportCopy {
      guard let report = request.copy, !report.target.isEmpty else {
        return ControlReply(ok: false, message: "reportCopy needs copy: {phase, target, detail}")
      }
      perform(core.handle(.stickCopy(report), at: now, host: host.monotonic()).actions)
      return ControlReply(ok: true, state: core.engine.state)
    }
    let input: EngineInput
    if request.command == .setZones {
      let configuration: ZoneConfiguration
      do {
        configuration = try ZoneConfiguration(
          parsing: request.zones ?? "", quantity: request.power == true ? .cyclingPower : .heartRate,
          source: .custom)
      } catch {
        return ControlReply(ok: false, state: core.engine.state, message: "zones refused: \(error)")
      }
      input = .customZones(configuration)
    } else if request.command == .nextActivity {
      var activity: ActivityType?
      if let name = request.activity, !name.isEmpty {
        guard let type = ActivityType(rawValue: name) else {
          let known = ActivityType.allCases.map(\.rawValue).joined(separator: ", ")
          return ControlReply(ok: false, state: core.engine.state, message: "no activity \"\(name)\" (known: \(known))")
        }
        activity = type
      }
      input = .nextActivity(activity, .control)
    } else if request.command == .setTargetZone {
      let quantity = request.power == true ? ZoneQuantity.cyclingPower : .heartRate
      let text = request.zones ?? ""
      do {
        input = .targetZone(quantity, text.isEmpty ? nil : try TargetZone(parsing: text, quantity: quantity))
      } catch {
        return ControlReply(ok: false, state: core.engine.state, message: "target refused: \(error)")
      }
    } else if request.command == .fine {
      input = .riderIsFine(.control)
    } else if let sessionRequest = request.command.request {
      input = .request(sessionRequest, .control)
    } else {
      return ControlReply(ok: true, state: core.engine.state, status: statusReport(at: now))
    }
    let step = core.handle(input, at: now, host: host.monotonic())
    perform(step.actions)
    let state = core.engine.state
    switch step.outcome {
    case .accepted(let accepted)?:
      return ControlReply(ok: true, state: state == .ended ? .ended : accepted)
    case .lapMarked(let number)?:
      return ControlReply(ok: true, state: state, lap: number)
    case .refused(let refusal, let refusedIn)?:
      return ControlReply(ok: false, state: refusedIn, refusal: refusal.rawValue, message: refusal.description)
    case nil:
      return ControlReply(ok: false, state: state, message: "no outcome")
    }
  }

  /// Keeps a rider's note as an `annotation` event of the session, stamped with the board's
  /// clock, beside the engine's events (it changes nothing the engine keeps). Said in the log
  /// (a note's words are the rider's: only its kind).
  private func annotate(_ annotation: Annotation, sessionID: Int64?, at now: Moment) -> ControlReply {
    guard let id = sessionID ?? core.engine.status(at: now).sessionID else {
      return ControlReply(ok: false, state: core.engine.state, message: "no workout to note this in: start one first")
    }
    let event = SessionEvent(
      kind: .annotation, moment: now, cause: annotation.kind.rawValue, detail: annotation.detail,
      value: annotation.value)
    let ended: Bool
    do {
      guard let record = try store.session(id: id) else {
        return ControlReply(ok: false, state: core.engine.state, message: "no session \(id)")
      }
      ended = record.state == SessionState.ended.rawValue
      guard try store.eventCount(sessionID: id, kind: .annotation) < Annotation.perSessionLimit else {
        return ControlReply(
          ok: false, state: core.engine.state,
          message: "session \(id) has \(Annotation.perSessionLimit) notes already: no more are kept")
      }
      _ = try store.addEvent(EventRecord(sessionID: id, event: event, epoch: clock.epoch))
    } catch {
      log(.error, "session \(id): cannot keep a \(annotation.kind.rawValue) from the phone: \(error)")
      return ControlReply(ok: false, state: core.engine.state, message: "not saved: \(error)")
    }
    log(.info, "session \(id): \(annotation.kind == .note ? "a note" : annotation.detail) from the phone")
    // Its files hold the notes: those of an ended ride are made again.
    if ended { sessionEnded?(id) }
    return ControlReply(ok: true, state: core.engine.state, message: "noted in session \(id): \(annotation.detail)")
  }

  func statusReport(at now: Moment) -> StatusReport {
    StatusReport(
      engine: core.engine.status(at: now), board: boardName, boardTime: now.monotonic, devices: core.deviceConditions,
      storage: StatusReport.StorageReport(
        database: store.path, pendingWrites: core.pendingWrites, failing: core.storageFailing,
        lastError: core.lastStorageError),
      uploads: uploadCounts())
  }

  /// The upload queue's counts for status, of the configured targets (nil when it has nothing
  /// pending or failed, or cannot be read: status is not refused for it). A read of
  /// `upload_job`'s state index.
  private func uploadCounts() -> UploadCounts? {
    guard !uploadTargets.isEmpty, let counts = try? store.uploadCounts(targets: uploadTargets), !counts.isEmpty
    else { return nil }
    return counts
  }

  // MARK: - Shutdown

  private func shutDown(signal: Int32) {
    perform(core.shutDown(signalName: TerminationSignals.name(signal), at: clock.now()))
    perform(core.lostAtStop)
  }
}
