import BoardLinux
import BoardSim
import Foundation
import LinuxSupport
import Synchronization
import WorkoutControl
import WorkoutCore
import WorkoutStore

/// What reaches the engine thread.
enum RuntimeMessage: Sendable {
  case input(EngineInput, Moment)
  case control(ControlRequest, ReplyBox)
  case terminate(signal: Int32)
  /// The background integrity check of the database finished: `["ok"]` or what it found.
  case integrityChecked([String], seconds: Double)
}

/// A control client's reply, handed from the engine thread to the server thread.
final class ReplyBox: Sendable {
  private let ready = DispatchSemaphore(value: 0)
  private let reply = Mutex<ControlReply?>(nil)

  func fulfil(_ reply: ControlReply) {
    self.reply.withLock { $0 = reply }
    ready.signal()
  }

  func wait(seconds: Double) -> ControlReply? {
    ready.wait(timeout: .now() + seconds) == .success ? reply.withLock { $0 } : nil
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

/// The engine loop: one thread that owns the engine and the store, takes every input in
/// order, ticks the 1 Hz recording clock, and carries out the engine's commands. A write the
/// disk refuses stays in memory, in order, and is retried every second until it succeeds.
final class ServiceRuntime {
  private let log: Log
  private let clock: any BoardClock
  private let store: WorkoutStore
  private let queue: InputQueue<RuntimeMessage>
  private let notifier: SystemdNotifier
  private let boardName: String
  private var engine: SessionEngine
  private var deviceConditions: [String: String] = [:]

  /// Exit (code 0) once the replayed ride is over and its session has ended (`make run`).
  var exitWhenReplayEnds = false
  /// The real board's GPS-corrected clock: GPS fixes are offered to it, and a trusted time is
  /// passed to the engine (and, if configured, to the system clock).
  var gpsClock: GPSCorrectedClock?
  var setsSystemClock = false
  /// Shows a pattern on the status LED, and sounds the buzzer, when the board has them.
  var indicator: ((IndicatorPattern) -> Void)?
  var chirp: ((ChirpPattern) -> Void)?
  /// Whether a threaded replay (the simulated board in real or scaled time) is over.
  var replayFinished: () -> Bool = { false }
  /// The simulated board at full speed: the loop pulls each next second of the world itself.
  var pulledReplay: (schedule: ReplaySchedule, clock: VirtualClock)?
  private var pulledReplayFinished = false
  /// Devices this loop reads itself (gpsd on the real board): just before each tick while a
  /// session records, before a deadline of the engine's is acted on, and every
  /// `idleReadInterval` host seconds otherwise. Reading them costs no wake-up of their own.
  var engineReadDevices: [any EngineReadDevice] = []
  /// With no session under way. Less than the fix-lost limit, so an idle board never counts
  /// a fix lost that is waiting to be read; long enough that it wakes about once in three
  /// seconds. A session that is paused or counting down is read every second (auto-resume
  /// and the LED answer movement promptly).
  var idleReadInterval = 3.0
  private var deviceReadInterval: Double {
    engine.session?.state.isUnfinished == true ? min(1, idleReadInterval) : idleReadInterval
  }
  /// What the last read brought, in arrival order, not yet handed to the engine.
  private var inbox: [(input: EngineInput, moment: Moment)] = []
  private var inboxHead = 0
  private var lastDeviceRead = -Double.infinity
  private var nextIdleRead = -Double.infinity
  /// The latest moment an input was handled at: an input read late never goes before it.
  private var lastInputMonotonic = -Double.infinity

  private struct PendingWrite {
    var commands: [EngineCommand]
    var stamp: ClockStamp
  }
  /// Writes not yet committed, in order. A write the store refuses, whatever the error, stays
  /// here and is retried every second with everything after it: nothing is given up while
  /// the service runs, short of `pendingLimit`.
  private var pending: [PendingWrite] = []
  private var pendingHead = 0
  /// About a day of seconds: beyond this the oldest held write is given up, loudly.
  private let pendingLimit = 86_400
  /// Why writes fail, while they do.
  private var writeFailure: StoreError?
  /// What the background integrity check found, if the database is damaged.
  private var integrityFailure: String?
  /// The storage condition last reported (log, event, LED, status), nil while sound.
  private var reportedStorageProblem: String?
  private var retryAtHost = 0.0

  private var storageFailing: Bool { writeFailure != nil || integrityFailure != nil }
  private var lastStorageError: String? { writeFailure?.description ?? integrityFailure }

  private var nextTick: Double
  private var lastWatchdogPing = -Double.infinity
  private var lastStatusLineKey: StatusLineKey?

  private var lastBehindWarning = -Double.infinity
  /// Seconds (of board and of host time) the loop catches up tick by tick; beyond that, with
  /// nothing queued, it skips ahead.
  private let maximumCatchUp = 60.0

  init(
    engine: SessionEngine, store: WorkoutStore, clock: any BoardClock, queue: InputQueue<RuntimeMessage>,
    notifier: SystemdNotifier, log: Log, boardName: String, firstTick: Double? = nil
  ) {
    self.engine = engine
    self.store = store
    self.clock = clock
    self.queue = queue
    self.notifier = notifier
    self.log = log
    self.boardName = boardName
    // A fresh simulated world ticks from its own beginning (at high speed the board clock has
    // moved on while the service was starting); a real board from now.
    nextTick = (firstTick ?? clock.now().monotonic).rounded(.up)
  }

  /// Carries out commands the engine produced before the loop started (a resumed session's).
  func execute(startup commands: [EngineCommand]) {
    var step = EngineStep()
    step.commands = commands
    execute(step, at: clock.now())
  }

  /// The next tick, while the engine records a point a second (a running session); nil
  /// otherwise: with nothing to record the loop sleeps until an input, a deadline of the
  /// engine's, or the watchdog's ping.
  private var tickDue: Double? { engine.needsTick ? nextTick : nil }

  /// Runs until a termination signal (returns 0) or, when asked to, until the replay is done.
  func run() -> Int32 {
    while true {
      let now = clock.now()
      // Inputs, wakeups and ticks in time order: what was sensed before a second's tick goes
      // into it, even when the loop is behind (a busy host) and catching up.
      let tick = tickDue ?? .infinity
      let nextWakeup = engine.nextDeadline ?? .infinity
      let due = min(tick, nextWakeup)
      if !engineReadDevices.isEmpty,
        (now.monotonic >= due && lastDeviceRead < due) || SystemClocks.monotonic() >= nextIdleRead
      {
        readDevices(at: now)
      }
      if inboxHead < inbox.count, inbox[inboxHead].moment.monotonic < due {
        let input = inbox[inboxHead].input
        var moment = inbox[inboxHead].moment
        inboxHead += 1
        if moment.monotonic < lastInputMonotonic {
          // Read late (at a tick) but arrived before something already handled: it goes now.
          moment = Moment(monotonic: lastInputMonotonic, wall: moment.wall + (lastInputMonotonic - moment.monotonic))
        }
        if inboxHead == inbox.count {
          inbox.removeAll(keepingCapacity: true)
          inboxHead = 0
        }
        handle(input, at: moment)
        continue
      }
      if let head = queue.peek() {
        switch head {
        case .input(_, let moment) where moment.monotonic >= due:
          break
        default:
          if process(queue.poll()!) { return 0 }
          continue
        }
      }
      if nextWakeup < tick, nextWakeup <= now.monotonic {
        handle(.wakeup, at: Moment(monotonic: nextWakeup, wall: now.wall - (now.monotonic - nextWakeup)))
        continue
      }
      if now.monotonic >= tick {
        let behind = now.monotonic - nextTick
        // Measured on the host too: a simulated board at 300x is 60 board seconds behind after
        // a fifth of a second of starvation, which is a busy host, not a silence.
        let hostBehind = SystemClocks.monotonic() - clock.hostDeadline(forBoardTime: nextTick)
        if behind > maximumCatchUp && hostBehind > maximumCatchUp && queue.peek() == nil {
          // A long silence (the process was stopped, the board suspended): nothing was sensed,
          // so skip those seconds rather than record a burst of points about one instant.
          // Shorter lags (a busy host, device threads starved too) are caught up: each second of
          // timer time keeps its point.
          warnBehind(by: behind)
          nextTick = now.monotonic.rounded(.down)
        }
        // The tick carries its own second's time, not the time the loop got to it.
        handle(.tick, at: Moment(monotonic: nextTick, wall: now.wall - (now.monotonic - nextTick)))
        nextTick += 1
        pingWatchdog()
        if isDone { return 0 }
        continue
      }
      pingWatchdog()
      if isDone { return 0 }
      if writeFailure != nil && SystemClocks.monotonic() >= retryAtHost { flush() }

      if var replay = pulledReplay {
        if let message = queue.poll() {
          if process(message) { return 0 }
          continue
        }
        if let step = replay.schedule.next() {
          pulledReplay = replay
          replay.clock.advance(to: step.time)
          for input in step.inputs { handle(input, at: replay.clock.now()) }
          continue
        }
        pulledReplay = nil
        pulledReplayFinished = true
        if isDone { return 0 }
      }

      var hostDeadline = clock.hostDeadline(forBoardTime: min(tick, nextWakeup))
      if writeFailure != nil { hostDeadline = min(hostDeadline, retryAtHost) }
      if let interval = notifier.watchdogInterval { hostDeadline = min(hostDeadline, lastWatchdogPing + interval) }
      if !engineReadDevices.isEmpty && tickDue == nil { hostDeadline = min(hostDeadline, nextIdleRead) }
      if exitWhenReplayEnds && !pulledReplayFinished && !replayFinished() {
        // A threaded replay says nothing when it ends: look every quarter second (`make run`).
        hostDeadline = min(hostDeadline, SystemClocks.monotonic() + 0.25)
      }
      // Only wait here: what arrives is taken at the top of the loop, where its time is
      // weighed against the tick that may have fallen due meanwhile (a reading of second s + 1
      // must not go into second s's point).
      queue.wait(until: hostDeadline.isFinite ? hostDeadline : nil)
    }
  }

  /// Handles one message from the queue; true when the service must stop.
  private func process(_ message: RuntimeMessage) -> Bool {
    switch message {
    case .input(let input, let moment):
      handle(input, at: moment)
    case .control(let request, let reply):
      reply.fulfil(answer(request, at: clock.now()))
    case .terminate(let signal):
      shutDown(signal: signal)
      return true
    case .integrityChecked(let result, let seconds):
      if result == ["ok"] {
        log(.info, "database \(store.path) passed its integrity check (\(formatSeconds(seconds)))")
      } else {
        integrityFailure =
          "the database failed its integrity check (\(result.prefix(3).joined(separator: "; "))); it is moved aside at the next start: copy the ride off first"
        updateStorageCondition()
      }
    }
    return false
  }

  private var isDone: Bool {
    guard exitWhenReplayEnds, pulledReplayFinished || replayFinished() else { return false }
    return (engine.state == .ended || engine.state == .notStarted) && pendingCount == 0
  }

  private func warnBehind(by seconds: Double) {
    let host = SystemClocks.monotonic()
    guard host - lastBehindWarning > 60 else { return }
    lastBehindWarning = host
    log(
      .warning,
      "no input for \(Int(seconds)) s of board time (the process was stopped or the board suspended): nothing recorded for them"
    )
  }

  // MARK: - Engine steps

  /// Reads the engine-read devices; what they bring waits in `inbox`, each input at the
  /// moment it arrived.
  private func readDevices(at now: Moment) {
    for device in engineReadDevices {
      device.read { input, age in
        inbox.append((input, Moment(monotonic: now.monotonic - age, wall: now.wall - age)))
      }
    }
    lastDeviceRead = now.monotonic
    nextIdleRead = SystemClocks.monotonic() + deviceReadInterval
  }

  private func handle(_ input: EngineInput, at moment: Moment) {
    lastInputMonotonic = max(lastInputMonotonic, moment.monotonic)
    if case .device(let status) = input {
      deviceConditions[status.device.rawValue] = "\(status.condition.rawValue): \(status.detail)"
    }
    let ticking = engine.needsTick
    let step = engine.handle(input, at: moment)
    if !ticking && engine.needsTick {
      // Recording (re)starts: the first point is the next whole second's, as if the clock had
      // ticked all along (it slept while there was nothing to record).
      nextTick = max(nextTick, moment.monotonic.rounded(.down) + 1)
    }
    execute(step, at: moment)
    if case .reading(.gps(let fix)) = input, let gpsClock {
      switch gpsClock.observe(fix, at: moment) {
      case .established(let correction), .corrected(from: _, to: let correction):
        handle(.clockCorrected(correction), at: moment)
        if setsSystemClock { setSystemClock(by: correction.systemOffset) }
      default:
        break
      }
    }
  }

  private func setSystemClock(by offset: Double) {
    switch SystemClockSetter().apply(offset: offset) {
    case .stepped(let by): log(.notice, "set the system clock to GPS time (stepped by \(formatSeconds(abs(by))))")
    case .skipped: break
    case .failed(let error): log(.error, "cannot set the system clock to GPS time: \(error) (needs CAP_SYS_TIME)")
    }
  }

  private func execute(_ step: EngineStep, at moment: Moment) {
    var storeCommands: [EngineCommand] = []
    for command in step.commands {
      switch command {
      case .log(let level, let text):
        log(level, text)
      case .scheduleWakeup:
        break  // the loop waits for `engine.nextDeadline`, which includes this one
      case .warmUpSensors:
        log(.debug, "warming up sensors")
      case .indicate(let pattern):
        indicator?(pattern)
      case .chirp(let pattern):
        chirp?(pattern)
      default:
        storeCommands.append(command)
      }
    }
    if !storeCommands.isEmpty {
      let stamp = ClockStamp(epoch: clock.epoch, moment: moment, wallTrusted: clock.wallTrusted)
      enqueue(PendingWrite(commands: storeCommands, stamp: stamp))
      flush()
    }
    updateStatusLine()
  }

  private var pendingCount: Int { pending.count - pendingHead }

  private func enqueue(_ write: PendingWrite) {
    pending.append(write)
    if pendingCount > pendingLimit {
      log(
        .error,
        "storage has refused writes for too long: giving up the oldest held second (\(describe(pending[pendingHead].commands)))"
      )
      pendingHead += 1
    }
  }

  /// Writes held writes in order until one fails; that one and all after it wait for the
  /// next try, a second later.
  private func flush() {
    while pendingHead < pending.count {
      let write = pending[pendingHead]
      do {
        try store.write(write.commands, clock: write.stamp)
      } catch {
        retryAtHost = SystemClocks.monotonic() + 1
        writeFailure = error
        updateStorageCondition()
        return
      }
      pendingHead += 1
      for case .finalizeSession(let id, _) in write.commands {
        handle(.sessionFinalized(sessionID: id), at: clock.now())
      }
    }
    pending.removeAll(keepingCapacity: pending.count < 4096)
    pendingHead = 0
    if writeFailure != nil {
      writeFailure = nil
      updateStorageCondition()
    }
  }

  /// Reports a change of the storage condition once: a log line, the systemd status, and the
  /// engine's storage event (the LED's fault pattern, and an event written once writes work).
  /// The condition is the kind of failure, not its text, so a disk that stays full is one line.
  private func updateStorageCondition() {
    let problem: String? =
      if let writeFailure {
        switch writeFailure {
        case .diskFull: "disk full"
        case .ioFailure: "I/O error"
        case .readOnly: "read-only"
        case .corrupt: "corrupt"
        default: "write failing"
        }
      } else if integrityFailure != nil {
        "damaged"
      } else {
        nil
      }
    guard problem != reportedStorageProblem else { return }
    reportedStorageProblem = problem
    guard problem != nil, let reason = lastStorageError else {
      log(.notice, "storage works again: everything held in memory is written")
      notifier.notify("STATUS=storage works again")
      handle(.storage(.recovered("held writes caught up")), at: clock.now())
      return
    }
    if let writeFailure {
      log(
        .error,
        "cannot write to \(store.path): \(writeFailure); holding the ride in memory and retrying every second (\(pendingCount) writes held)"
      )
    } else {
      log(.error, "database \(store.path): \(reason)")
    }
    notifier.notify("STATUS=storage failing: \(reason)")
    handle(.storage(.failing(reason)), at: clock.now())
  }

  private func describe(_ commands: [EngineCommand]) -> String {
    commands.map { command in
      switch command {
      case .openSession(let s): "open session \(s.id)"
      case .recordEvent(_, let e): "event \(e.kind.rawValue)"
      case .recordPoint(let id, let p): "point \(p.sequence) of session \(id)"
      case .recordLap(let id, let lap): "lap \(lap.number) of session \(id)"
      case .saveSnapshot(let s): "snapshot of session \(s.id)"
      case .finalizeSession(let id, _): "summary of session \(id)"
      default: "\(command)"
      }
    }.joined(separator: ", ")
  }

  // MARK: - systemd

  /// WATCHDOG=1 only from the engine loop, when it is due (half of WatchdogSec): a hung loop
  /// stops the pings and systemd restarts the service. The loop wakes for it even when idle,
  /// but a wake for something else after half of that time pings early and saves one.
  private func pingWatchdog() {
    guard let interval = notifier.watchdogInterval else { return }
    let host = SystemClocks.monotonic()
    guard host - lastWatchdogPing >= interval / 2 else { return }
    lastWatchdogPing = host
    notifier.notify("WATCHDOG=1")
  }

  private func updateStatusLine() {
    // From the state alone, not `engine.status` (a copy of the whole builder at every step),
    // and the text made only when it changes.
    let key = StatusLineKey(session: engine.session?.id, state: engine.session?.state, storageFailing: storageFailing)
    guard key != lastStatusLineKey else { return }
    lastStatusLineKey = key
    var line = engine.session.map { "session \($0.id) \($0.state.rawValue)" } ?? "idle: no session"
    if storageFailing { line += ", storage failing" }
    notifier.notify("STATUS=\(line)")
  }

  private struct StatusLineKey: Equatable {
    var session: Int64?
    var state: SessionState?
    var storageFailing: Bool
  }

  // MARK: - Control

  private func answer(_ request: ControlRequest, at now: Moment) -> ControlReply {
    guard let sessionRequest = request.command.request else {
      return ControlReply(ok: true, state: engine.state, status: statusReport(at: now))
    }
    let step = engine.handle(.request(sessionRequest, .control), at: now)
    execute(step, at: now)
    switch step.outcome {
    case .accepted(let state)?:
      return ControlReply(ok: true, state: engine.state == .ended ? .ended : state)
    case .lapMarked(let number)?:
      return ControlReply(ok: true, state: engine.state, lap: number)
    case .refused(let refusal, let state)?:
      return ControlReply(ok: false, state: state, refusal: refusal.rawValue, message: refusal.description)
    case nil:
      return ControlReply(ok: false, state: engine.state, message: "no outcome")
    }
  }

  func statusReport(at now: Moment) -> StatusReport {
    StatusReport(
      engine: engine.status(at: now), board: boardName, boardTime: now.monotonic, devices: deviceConditions,
      storage: StatusReport.StorageReport(
        database: store.path, pendingWrites: pendingCount, failing: storageFailing, lastError: lastStorageError))
  }

  // MARK: - Shutdown

  private func shutDown(signal: Int32) {
    let state = engine.state
    notifier.notify("STOPPING=1")
    if let session = engine.session, session.state.isUnfinished {
      log(
        .notice,
        "\(TerminationSignals.name(signal)): stopping; session \(session.id) stays \(state.rawValue) and resumes at the next start"
      )
      enqueue(
        PendingWrite(
          commands: [.saveSnapshot(session)],
          stamp: ClockStamp(epoch: clock.epoch, moment: clock.now(), wallTrusted: clock.wallTrusted)))
    } else {
      log(.notice, "\(TerminationSignals.name(signal)): stopping")
    }
    flush()
    if pendingCount > 0 {
      log(.error, "stopping with \(pendingCount) writes the disk refused; they are lost: \(lastStorageError ?? "")")
    }
  }
}
