/// How the service's loop runs (see `RuntimeCore`).
public struct RuntimeSettings: Sendable, Hashable {
  /// The board clock's epoch, for the stamps of writes.
  public var epoch: String
  /// The database, for log lines.
  public var databasePath: String
  /// Seconds (of board and of host time) the loop catches up tick by tick; beyond that, with
  /// nothing queued, it skips ahead.
  public var maximumCatchUp = 60.0
  /// Writes held in memory before the oldest is given up (about a day of seconds).
  public var pendingLimit = 86_400
  /// Host seconds between retries of a refused write while nothing new arrives.
  public var retryInterval = 1.0
  /// Host seconds between the pings systemd requires (`WATCHDOG_USEC`), nil without a watchdog.
  public var watchdogInterval: Double?
  /// Whether there are devices the loop reads itself (`EngineReadDevice`: gpsd on the real
  /// board). They are read just before each tick while a session records, before a deadline of
  /// the engine's is acted on, and every `idleReadInterval` host seconds otherwise (every
  /// second at most while a session is paused or counting down).
  public var readsDevices = false
  /// With no session under way: less than the fix-lost limit, so an idle board never counts a
  /// fix lost that is waiting to be read; long enough to wake about once in three seconds.
  public var idleReadInterval = 3.0
  /// The board's own wall clock is right from the start (a simulated ride's time).
  public var boardWallTrusted = false

  public init(epoch: String, databasePath: String) {
    self.epoch = epoch
    self.databasePath = databasePath
  }
}

/// The clocks, read by the executor for one decision of the core.
public struct RuntimeClocks {
  /// The board's clocks now.
  public var board: Moment
  /// The host's CLOCK_MONOTONIC now (the board's runs faster on a simulated board).
  public var host: Double
  /// The host time at which the board's monotonic clock reaches a time (`BoardClock`).
  public var hostTime: (Double) -> Double

  public init(board: Moment, host: Double, hostTime: @escaping (Double) -> Double) {
    self.board = board
    self.host = host
    self.hostTime = hostTime
  }
}

/// What waits at the head of the executor's queue (filled by other threads).
public enum QueuedMessage: Sendable, Hashable {
  /// A device's input that arrived at this board monotonic time.
  case input(at: Double)
  /// Anything else (a control request, a signal): taken at once.
  case other
}

/// An effect for the executor to carry out, in order.
public enum RuntimeAction: Sendable, Hashable {
  case log(LogLevel, String)
  case indicate(IndicatorPattern)
  case chirp(ChirpPattern)
  /// Write the held writes in order: `nextWrite`, then `committed` or `refused` for each.
  case writeHeld
  /// A notification for systemd (`sd_notify`): `STATUS=…`, `WATCHDOG=1`, `STOPPING=1`.
  case notifySystemd(String)
  /// GPS time is trusted (or moved): the board clock stamps with it from now on; the system
  /// clock is set too if the configuration asks.
  case correctBoardClock(GPSClockCorrection)
  /// The commit that made this session `ended` (its summary went in before) is done: what
  /// reads ended sessions (the exports) may take it now.
  case sessionEnded(sessionID: Int64)
  /// The battery ran out of time: power the board off once session `afterSession` (nil: none)
  /// has ended and its exports are written (`EngineCommand.powerOff`).
  case powerOff(afterSession: Int64?)
}

/// What the executor does next.
public enum RuntimeDecision {
  /// Read the engine-read devices, and hand what they brought to `devicesRead`.
  case readDevices
  /// Take the head of the queue and hand it to the core.
  case takeQueued
  /// The core did something (an input read earlier, a deadline, a tick, a retry): carry
  /// these out, then ask again.
  case act([RuntimeAction])
  /// Nothing is due: carry these out (a watchdog ping), then wait for the queue until this
  /// host time (nil: until something arrives), then ask again.
  case wait(untilHost: Double?, [RuntimeAction])
}

/// What one input led to.
public struct RuntimeStep: Sendable {
  public var actions: [RuntimeAction] = []
  /// Set when the input was a rider's request.
  public var outcome: RequestOutcome?
}

/// The service's loop as a value: the scheduler (ticks, deadlines, catch-up), the engine-read
/// devices' inbox, the write-behind queue and its retries, the storage condition, the
/// watchdog decision and the systemd status line. It takes inputs and the clocks, and returns
/// actions; it never reads a clock and never touches a file, so a test drives it on a manual
/// clock. The executor (`ServiceRuntime`) reads the clocks, waits, reads devices, writes to
/// the store and carries out the actions.
///
/// ```swift
/// while true {
///   switch core.next(clocks(), queued: queue.peekKind()) {
///   case .readDevices: core.devicesRead(readAll(), at: clocks())
///   case .takeQueued: handle(queue.poll())
///   case .act(let actions): perform(actions)
///   case .wait(let until, let actions): perform(actions); queue.wait(until: until)
///   }
/// }
/// ```
public struct RuntimeCore: Sendable {
  public private(set) var engine: SessionEngine
  public let settings: RuntimeSettings
  public private(set) var writes: WriteBehind
  /// Each device's last reported condition, by device name.
  public private(set) var deviceConditions: [String: String] = [:]
  /// What the background integrity check found, if the database is damaged.
  public private(set) var integrityFailure: String?

  private var nextTick: Double
  /// What the last device read brought, in arrival order, not yet handed to the engine.
  private var inbox: [(input: EngineInput, moment: Moment)] = []
  private var inboxHead = 0
  private var lastDeviceRead = -Double.infinity
  private var nextIdleRead = -Double.infinity
  /// The latest moment an input was handled at: an input read late never goes before it.
  private var lastInputMonotonic = -Double.infinity
  private var lastWatchdogPing = -Double.infinity
  private var lastBehindWarning = -Double.infinity
  /// The storage condition last reported (log, event, LED, status), nil while sound.
  private var reportedStorageProblem: String?
  private var lastStatusLine: StatusLineKey?
  private var boardWallTrusted: Bool

  /// `firstTick`: a fresh simulated world ticks from its own beginning (at high speed the board
  /// clock has moved on while the service was starting); a real board from `now`.
  public init(engine: SessionEngine, settings: RuntimeSettings, now: Moment, firstTick: Double? = nil) {
    self.engine = engine
    self.settings = settings
    writes = WriteBehind(limit: settings.pendingLimit, retryInterval: settings.retryInterval)
    nextTick = (firstTick ?? now.monotonic).rounded(.up)
    boardWallTrusted = settings.boardWallTrusted
  }

  // MARK: - Status

  public var storageFailing: Bool { writes.failure != nil || integrityFailure != nil }
  public var lastStorageError: String? { writes.failure?.reason ?? integrityFailure }
  public var pendingWrites: Int { writes.count }
  /// Nothing left to do for a replay that is over: no session under way, everything written.
  public var isSettled: Bool {
    (engine.state == .ended || engine.state == .notStarted) && writes.count == 0
  }

  /// The next tick, while the engine records a point a second (a running session); nil
  /// otherwise: with nothing to record the loop sleeps until an input, a deadline of the
  /// engine's, or the watchdog's ping.
  public var tickDue: Double? { engine.needsTick ? nextTick : nil }

  private var deviceReadInterval: Double {
    engine.state.isUnfinished ? min(1, settings.idleReadInterval) : settings.idleReadInterval
  }

  // MARK: - The loop's decision

  /// What to do next. Inputs, wakeups and ticks go in time order: what was sensed before a
  /// second's tick goes into it, even when the loop is behind (a busy host) and catching up.
  public mutating func next(_ clocks: RuntimeClocks, queued: QueuedMessage?) -> RuntimeDecision {
    let now = clocks.board
    let tick = tickDue ?? .infinity
    let wakeup = engine.nextDeadline ?? .infinity
    let due = min(tick, wakeup)
    if settings.readsDevices, (now.monotonic >= due && lastDeviceRead < due) || clocks.host >= nextIdleRead {
      return .readDevices
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
      return .act(handle(input, at: moment, host: clocks.host).actions)
    }
    switch queued {
    case .input(let at)? where at >= due: break
    case .some: return .takeQueued
    case nil: break
    }
    if wakeup < tick, wakeup <= now.monotonic {
      let moment = Moment(monotonic: wakeup, wall: now.wall - (now.monotonic - wakeup))
      return .act(handle(.wakeup, at: moment, host: clocks.host).actions)
    }
    if now.monotonic >= tick {
      var actions: [RuntimeAction] = []
      let behind = now.monotonic - nextTick
      // Measured on the host too: a simulated board at 300x is 60 board seconds behind after
      // a fifth of a second of starvation, which is a busy host, not a silence.
      let hostBehind = clocks.host - clocks.hostTime(nextTick)
      if behind > settings.maximumCatchUp && hostBehind > settings.maximumCatchUp && queued == nil {
        // A long silence (the process was stopped, the board suspended): nothing was sensed,
        // so skip those seconds rather than record a burst of points about one instant.
        // Shorter lags (a busy host, device threads starved too) are caught up: each second of
        // timer time keeps its point.
        if clocks.host - lastBehindWarning > 60 {
          lastBehindWarning = clocks.host
          actions.append(
            .log(
              .warning,
              "no input for \(Int(behind)) s of board time (the process was stopped or the board suspended): nothing recorded for them"
            ))
        }
        nextTick = now.monotonic.rounded(.down)
      }
      // The tick carries its own second's time, not the time the loop got to it.
      let moment = Moment(monotonic: nextTick, wall: now.wall - (now.monotonic - nextTick))
      actions += handle(.tick, at: moment, host: clocks.host).actions
      nextTick += 1
      actions += pingWatchdogIfDue(host: clocks.host)
      return .act(actions)
    }
    let ping = pingWatchdogIfDue(host: clocks.host)
    if writes.retryDue(host: clocks.host) { return .act(ping + [.writeHeld]) }

    var deadline = clocks.hostTime(min(tick, wakeup))
    if writes.failure != nil { deadline = min(deadline, writes.retryAt) }
    if let interval = settings.watchdogInterval { deadline = min(deadline, lastWatchdogPing + interval) }
    if settings.readsDevices && tickDue == nil { deadline = min(deadline, nextIdleRead) }
    return .wait(untilHost: deadline.isFinite ? deadline : nil, ping)
  }

  /// What a read of the engine-read devices brought, each input at the moment it arrived.
  public mutating func devicesRead(_ arrivals: [(input: EngineInput, moment: Moment)], at clocks: RuntimeClocks) {
    inbox += arrivals
    lastDeviceRead = clocks.board.monotonic
    nextIdleRead = clocks.host + deviceReadInterval
  }

  /// WATCHDOG=1 only from the loop, when it is due (half of the interval): a hung loop asks
  /// for no decisions, so it stops the pings and systemd restarts the service. The loop wakes
  /// for it even when idle, but a wake for something else after half of that time pings early
  /// and saves one.
  private mutating func pingWatchdogIfDue(host: Double) -> [RuntimeAction] {
    guard let interval = settings.watchdogInterval, host - lastWatchdogPing >= interval / 2 else { return [] }
    lastWatchdogPing = host
    return [.notifySystemd("WATCHDOG=1")]
  }

  // MARK: - Inputs

  /// Hands one input to the engine and turns its commands into actions.
  public mutating func handle(_ input: EngineInput, at moment: Moment, host: Double) -> RuntimeStep {
    lastInputMonotonic = max(lastInputMonotonic, moment.monotonic)
    if case .device(let status) = input {
      deviceConditions[status.device.rawValue] = "\(status.condition.rawValue): \(status.detail)"
    } else if case .deviceRemoved(let device) = input {
      deviceConditions.removeValue(forKey: device.rawValue)
    }
    let ticking = engine.needsTick
    let step = engine.handle(input, at: moment)
    if case .stickCopy = input, let status = engine.watch.conditions[.usbStick] {
      // The engine words the stick's condition from the copier's reports (safe to remove…).
      deviceConditions[status.device.rawValue] = "\(status.condition.rawValue): \(status.detail)"
    }
    if !ticking && engine.needsTick {
      // Recording (re)starts: the first point is the next whole second's, as if the clock had
      // ticked all along (it slept while there was nothing to record).
      nextTick = max(nextTick, moment.monotonic.rounded(.down) + 1)
    }
    var result = RuntimeStep(outcome: step.outcome)
    result.actions = execute(step.commands, at: moment, host: host)
    return result
  }

  /// Carries out commands the engine produced before the loop started (a resumed session's).
  public mutating func replay(startup commands: [EngineCommand], at moment: Moment, host: Double) -> [RuntimeAction] {
    execute(commands, at: moment, host: host)
  }

  /// The board's own wall clock became synchronised (NTP), or stopped being: stamps say so,
  /// and the engine's GPS clock weighs GPS time against it.
  public mutating func boardClockTrusted(_ trusted: Bool, at moment: Moment, host: Double) -> [RuntimeAction] {
    guard trusted != boardWallTrusted else { return [] }
    boardWallTrusted = trusted
    return handle(.systemClockTrusted(trusted), at: moment, host: host).actions
  }

  /// The background integrity check of the database finished: `["ok"]` or what it found.
  public mutating func integrityChecked(
    _ result: [String], seconds: Double, at moment: Moment, host: Double
  )
    -> [RuntimeAction]
  {
    guard result != ["ok"] else {
      return [
        .log(
          .info, "database \(settings.databasePath) passed its integrity check (\(formatSeconds(seconds)))")
      ]
    }
    integrityFailure =
      "the database failed its integrity check (\(result.prefix(3).joined(separator: "; "))); it is moved aside at the next start: copy the ride off first"
    return updateStorageCondition(at: moment, host: host)
  }

  private mutating func execute(_ commands: [EngineCommand], at moment: Moment, host: Double) -> [RuntimeAction] {
    var actions: [RuntimeAction] = []
    var storeCommands: [EngineCommand] = []
    for command in commands {
      switch command {
      case .log(let level, let text): actions.append(.log(level, text))
      case .warmUpSensors: actions.append(.log(.debug, "warming up sensors"))
      case .indicate(let pattern): actions.append(.indicate(pattern))
      case .chirp(let pattern): actions.append(.chirp(pattern))
      case .correctBoardClock(let correction): actions.append(.correctBoardClock(correction))
      case .powerOff(let sessionID): actions.append(.powerOff(afterSession: sessionID))
      default: storeCommands.append(command)
      }
    }
    if !storeCommands.isEmpty {
      let trusted = boardWallTrusted || engine.gpsClock?.isTrusted == true
      actions += hold(
        HeldWrite(
          commands: storeCommands, stamp: ClockStamp(epoch: settings.epoch, moment: moment, wallTrusted: trusted)))
    }
    actions += statusLine()
    return actions
  }

  // MARK: - Writes

  /// The write to try next, if any is held. A mutating getter that changes nothing: from the
  /// executor, in another module, a non-mutating one gets the 3.4 KB core by value, a copy of
  /// all of it each time (twice a recorded second, callgrind); a mutating one its address.
  public var nextWrite: HeldWrite? {
    mutating get { writes.next }
  }

  private mutating func hold(_ write: HeldWrite) -> [RuntimeAction] {
    var actions: [RuntimeAction] = []
    if let dropped = writes.hold(write) {
      actions.append(
        .log(.error, "storage has refused writes for too long: giving up the oldest held second (\(dropped.summary))"))
    }
    actions.append(.writeHeld)
    return actions
  }

  /// The store committed `nextWrite`.
  public mutating func committed(at moment: Moment, host: Double) -> [RuntimeAction] {
    let commands = writes.next?.commands ?? []
    let finalized = commands.compactMap { command -> Int64? in
      if case .finalizeSession(let id, _) = command { id } else { nil }
    }
    let ended = commands.compactMap { command -> Int64? in
      if case .saveSnapshot(let session) = command, session.state == .ended { session.id } else { nil }
    }
    let caughtUp = writes.committed()
    var actions: [RuntimeAction] = []
    for id in finalized {
      actions += handle(.sessionFinalized(sessionID: id), at: moment, host: host).actions
    }
    actions += ended.map { .sessionEnded(sessionID: $0) }
    if caughtUp { actions += updateStorageCondition(at: moment, host: host) }
    return actions
  }

  /// The store refused `nextWrite`: it and everything after it wait for the next try.
  public mutating func refused(_ fault: StorageFault, at moment: Moment, host: Double) -> [RuntimeAction] {
    writes.refused(fault, host: host)
    return updateStorageCondition(at: moment, host: host)
  }

  /// Reports a change of the storage condition once: a log line, the systemd status, and the
  /// engine's storage event (the LED's fault pattern, and an event written once writes work).
  /// The condition is the kind of failure, not its text, so a disk that stays full is one line.
  private mutating func updateStorageCondition(at moment: Moment, host: Double) -> [RuntimeAction] {
    let problem = writes.failure?.condition ?? (integrityFailure != nil ? "damaged" : nil)
    guard problem != reportedStorageProblem else { return [] }
    reportedStorageProblem = problem
    guard problem != nil, let reason = lastStorageError else {
      return [
        .log(.notice, "storage works again: everything held in memory is written"),
        .notifySystemd("STATUS=storage works again"),
      ] + handle(.storage(.recovered("held writes caught up")), at: moment, host: host).actions
    }
    var actions: [RuntimeAction] = []
    if let failure = writes.failure {
      actions.append(
        .log(
          .error,
          "cannot write to \(settings.databasePath): \(failure.reason); holding the ride in memory and retrying every second (\(writes.count) writes held)"
        ))
    } else {
      actions.append(.log(.error, "database \(settings.databasePath): \(reason)"))
    }
    actions.append(.notifySystemd("STATUS=storage failing: \(reason)"))
    return actions + handle(.storage(.failing(reason)), at: moment, host: host).actions
  }

  // MARK: - systemd status

  private mutating func statusLine() -> [RuntimeAction] {
    // From the state alone, not `engine.status` (a copy of the whole builder at every step),
    // and the text made only when it changes.
    let key = StatusLineKey(session: engine.session?.id, state: engine.session?.state, storageFailing: storageFailing)
    guard key != lastStatusLine else { return [] }
    lastStatusLine = key
    var line = engine.session.map { "session \($0.id) \($0.state.rawValue)" } ?? "idle: no session"
    if storageFailing { line += ", storage failing" }
    return [.notifySystemd("STATUS=\(line)")]
  }

  private struct StatusLineKey: Equatable {
    var session: Int64?
    var state: SessionState?
    var storageFailing: Bool
  }

  // MARK: - Shutdown

  /// A termination signal: the session stays as it is and resumes at the next start; its state
  /// is saved with everything held. The executor writes what is held, then asks `lostAtStop`.
  public mutating func shutDown(signalName: String, at moment: Moment) -> [RuntimeAction] {
    var actions: [RuntimeAction] = [.notifySystemd("STOPPING=1")]
    guard let session = engine.session, session.state.isUnfinished else {
      return actions + [.log(.notice, "\(signalName): stopping"), .writeHeld]
    }
    actions.append(
      .log(
        .notice,
        "\(signalName): stopping; session \(session.id) stays \(session.state.rawValue) and resumes at the next start"
      ))
    let trusted = boardWallTrusted || engine.gpsClock?.isTrusted == true
    return actions
      + hold(
        HeldWrite(
          commands: [.saveSnapshot(session)],
          stamp: ClockStamp(epoch: settings.epoch, moment: moment, wallTrusted: trusted)))
  }

  /// After the last writes at a stop: what is lost, said loudly.
  public var lostAtStop: [RuntimeAction] {
    guard writes.count > 0 else { return [] }
    return [
      .log(.error, "stopping with \(writes.count) writes the disk refused; they are lost: \(lastStorageError ?? "")")
    ]
  }
}
