/// The heart of the logger: the session machine, the live builder and auto-pause, as a pure
/// function of (state, input, moment) → (state, commands). It never reads a clock and never
/// touches a file; the runtime executes the commands it returns.
public struct SessionEngine: Sendable {
  public private(set) var settings: EngineSettings
  /// The current session: running, or the last one (ended) until the next start.
  public internal(set) var session: ActiveSession? {
    didSet {
      sessionState = session?.state
      countdownDeadline = session?.countdownDeadline
    }
  }
  /// The session's state and countdown, kept beside it for what the runtime asks several times
  /// a recorded second (`state`, `needsTick`, `nextDeadline`). Read through a getter, the
  /// optional 2.3 KB session is first copied whole to the stack (the compiler reads its tag
  /// with an outlined function and keeps the copy): ~15 copies a recorded second, 5 % of the
  /// instructions (callgrind). Kept here, in a mutating context, it is read in place.
  private var sessionState: SessionState?
  private var countdownDeadline: Double?
  /// The id the next session will get.
  public private(set) var nextSessionID: Int64
  /// The last point recorded, for status.
  public internal(set) var lastPoint: TrackPoint?
  /// Whether a GPS has reported at all (a board without one shows no "waiting for fix").
  public private(set) var gpsPresent = false
  /// Whether the GPS has a fix, and since when it has not.
  public private(set) var fixMonitor = FixMonitor()
  /// What the GPS has said lately, for the LED and status.
  public var gps: GPSCondition {
    if case .fixed = fixMonitor.state {
      return watch.gpsCondition(hasFix: true, gpsPresent: gpsPresent)
    }
    return watch.gpsCondition(hasFix: false, gpsPresent: gpsPresent)
  }
  /// The devices' conditions, refused GPS fixes and flapping devices (`DeviceWatch`).
  public internal(set) var watch: DeviceWatch
  /// The battery's level, drain and warnings (`BatteryWatch`); at its countdown's end the
  /// system stops the ride (`SessionEngineBattery.swift`).
  public internal(set) var battery: BatteryWatch
  /// The incident alarm: a fall while riding, its countdown and the rider's answer
  /// (`SessionEngineMotion.swift`).
  public internal(set) var incident: IncidentAlarm
  /// The inertial sensor's last second and when it came: beside the session, not in its
  /// checkpoint, as it is stale a moment after a restart.
  public internal(set) var motion: (second: MotionSecond, at: Double)?
  /// Seconds in a row the board has moved while a session waits to auto-start.
  var movingSeconds = 0
  /// Devices that are absent, lost, failing or unstable (or a GPS whose fixes are refused):
  /// with a store that refuses writes, what makes the LED show a fault.
  public var faultyDevices: Set<DeviceKind> { watch.faultyDevices }
  public private(set) var storageFailing = false
  /// The pattern last sent to the LED.
  public private(set) var indicator = IndicatorPattern.off
  /// The session's point count when its checkpoint was last saved.
  private var pointsAtCheckpoint = 0
  /// Decides when GPS time is trusted (nil when `settings.gpsClock` is): each accepted fix's
  /// time is offered to it, and a trusted correction becomes `correctBoardClock`.
  public internal(set) var gpsClock: GPSClock?
  /// Whether the board's own wall clock is synchronised, as the runtime last said.
  public private(set) var systemClockTrusted = false
  /// The copies onto USB sticks under way, and those that failed (`stickCopy`).
  public internal(set) var stickCopies = StickCopies()
  /// The workout's zones, targets, activities and laps, and what is set for the next workout.
  public internal(set) var workoutPlan: WorkoutPlan
  /// What resuming the session found unreadable (status shows it while the session is current).
  private(set) var unreadableAtResume: (sessionID: Int64, rows: UnreadableRows)?
  /// Until when (monotonic) the LED shows that damage with the fault pattern
  /// (`damagedRecordIndication`); nil once it has been shown, or the session is no longer current.
  public private(set) var damageIndicatedUntil: Double?
  /// Until when (monotonic) the LED says the rides waiting to be uploaded have gone
  /// (`sentIndication`).
  public private(set) var sentIndicatedUntil: Double?

  /// How long the LED shows a damaged record found at resume: the fault pattern, then the
  /// ride's own rhythm again (status, the phone page and `show` go on saying it). A minute, so a
  /// rider who looks at the board once it is back sees it, and the rhythm that says whether the
  /// ride records is not hidden for the rest of it. With a buzzer, the alarm sounds as it begins.
  public static let damagedRecordIndication: Double = 60
  /// How long the LED shows that the last pending upload has gone: long enough to be seen by a
  /// rider who put the bike away, short enough to leave the LED dark for the battery.
  public static let sentIndication: Double = 10

  /// A running session's checkpoint is saved every this many points (and whenever the session
  /// changes otherwise). Between checkpoints a second writes only its point: a restart folds
  /// the points recorded since the checkpoint back in (`SessionRebuild`). Five minutes: the
  /// checkpoint (a few KB of JSON with the training metrics' rings, several pages, ~1.4 M
  /// instructions) spread over its interval is then a twentieth of a recorded second's
  /// instructions, where at one a minute it was a fifth, and the roll-forward stays short
  /// (at most 299 points read back at a start, a few milliseconds).
  public static let checkpointInterval = 300

  public init(settings: EngineSettings, nextSessionID: Int64 = 1) {
    self.settings = settings
    self.nextSessionID = nextSessionID
    fixMonitor = FixMonitor(settings: FixMonitorSettings(lostAfter: settings.fixLostAfter))
    watch = DeviceWatch(settings: settings.deviceWatch)
    battery = BatteryWatch(settings: settings.battery)
    incident = IncidentAlarm(settings: settings.incident ?? IncidentSettings())
    workoutPlan = WorkoutPlan(settings: settings)
    gpsClock = settings.gpsClock.map { GPSClock(settings: $0) }
  }

  /// Carries on a session that was not ended when the service stopped (a crash, a watchdog
  /// restart, a power cut). Records a `recovered` event with the gap, restarts a countdown
  /// that was running, and finishes the finalisation of a stopped session.
  public static func resuming(
    _ persisted: ActiveSession, settings: EngineSettings, nextSessionID: Int64,
    gap: RecoveryGap, at now: Moment, lastPoint: TrackPoint? = nil, unreadable: UnreadableRows = UnreadableRows(),
    incident: OpenIncident? = nil
  ) -> (SessionEngine, [EngineCommand]) {
    var engine = SessionEngine(settings: settings, nextSessionID: max(nextSessionID, persisted.id + 1))
    engine.lastPoint = lastPoint
    var session = persisted
    session.builder.resume(after: gap, at: now, in: session.state)
    session.autoPause?.reset()
    session.lastMoment = now
    session.openedThisRun = false
    session.builder.beginRun()
    // A session rebuilt from its points (its checkpoint unreadable) or saved by a release
    // without zones counts its zones again from here; `show` derives the whole from the points.
    var newlyTracked: [ZoneConfiguration] = []
    if session.builder.zoneTrackers == nil, session.builder.startMoment != nil {
      newlyTracked = engine.workoutPlan.zones(custom: session.customZones)
      session.builder.trackZones(newlyTracked)
    }
    session.epochFirstPoint = session.builder.pointCount
    session.epochFirstLap = session.builder.lapNumber
    var commands: [EngineCommand] = []
    let gapText = gap.seconds.map { "\(formatSeconds($0)) away" } ?? "time away unknown"
    commands.append(
      .recordEvent(
        sessionID: session.id,
        SessionEvent(
          kind: .recovered, moment: now, from: session.state, to: session.state,
          cause: TransitionCause.recovery.kind, detail: gap.basis.rawValue, value: gap.seconds)))
    if !unreadable.isEmpty {
      // Said in the ride's record, not only in the log: the phone page and `show` list it;
      // status shows it while the session is current; the LED for a minute (at the end).
      engine.unreadableAtResume = (session.id, unreadable)
      engine.damageIndicatedUntil = now.monotonic + damagedRecordIndication
      commands.append(
        .recordEvent(
          sessionID: session.id,
          SessionEvent(
            kind: .damagedRecord, moment: now, cause: TransitionCause.recovery.kind, detail: unreadable.description,
            value: Double(unreadable.points))))
      commands.append(
        .log(
          .warning,
          "session \(session.id): part of its record cannot be read (a damaged record) and is left out of its figures: \(unreadable.description); the rest is resumed"
        ))
    }
    for configuration in newlyTracked {
      commands.append(
        .recordEvent(
          sessionID: session.id,
          SessionEvent(kind: .zoneConfiguration, moment: now, detail: WorkoutPlan.describe(configuration))))
    }
    commands.append(
      .log(
        .notice,
        "resumed session \(session.id) in state \(session.state.rawValue) (\(gapText), measured by \(gap.basis.rawValue))"
      ))
    switch session.state {
    case .prepared:
      // The runtime wakes for the deadline (`nextDeadline`); auto-start waits for motion.
      session.countdownDeadline = settings.autoStart == nil ? now.monotonic + settings.countdown : nil
      commands.append(.warmUpSensors)
    case .running, .paused:
      commands.append(.warmUpSensors)
    case .stopped:
      commands.append(.finalizeSession(sessionID: session.id, summary(of: session, at: now)))
    case .notStarted, .ended:
      break
    }
    commands.append(.saveSnapshot(session))
    engine.session = session
    engine.pointsAtCheckpoint = session.builder.pointCount
    engine.resumeIncident(incident, at: now, into: &commands)
    // The damage and the incident alarm show on the LED from now (the damage's fault pattern
    // with the alarm as it begins); otherwise the first input sets the LED, as at any start.
    if engine.damageIndicatedUntil != nil || engine.incident.isOn { engine.updateIndicator(into: &commands) }
    return (engine, commands)
  }

  /// The state riders and the LED see.
  public var state: SessionState { sessionState ?? .notStarted }

  /// Handles one input at `now` and returns the effects for the runtime to carry out.
  public mutating func handle(_ input: EngineInput, at now: Moment) -> EngineStep {
    var step = EngineStep()
    // In place (through the optional), not a copy written back: a copy would share the
    // builder's buffers and copy them on the first write, at every input.
    if let state = session?.state {
      session?.builder.advance(to: now, in: state)
      session?.lastMoment = now
    }
    var changed = false
    note(watch.advance(to: now.monotonic), at: now, into: &step)
    switch input {
    case .tick:
      noteFixChanges(fixMonitor.advance(to: now.monotonic).map { [$0] } ?? [], at: now, into: &step)
      changed = fireDueCountdown(at: now, into: &step)
      if session?.state == .running { noteRiding(at: now) }
      let (motion, cadenceFromSteps) = (currentMotion(at: now), countsSteps)
      if session?.state == .running, let id = session?.id,
        let point = session?.builder.recordPoint(at: now, motion: motion, cadenceFromSteps: cadenceFromSteps)
      {
        lastPoint = point
        step.commands.append(.recordPoint(sessionID: id, point))
        if let intervals = session?.builder.takeRRIntervals() {
          step.commands.append(.recordRRIntervals(sessionID: id, sequence: point.sequence, intervals))
        }
        for change in session?.builder.takeZoneChanges() ?? [] {
          record(Self.event(for: change, at: now), into: &step)
          changed = checkTarget(change.quantity, zone: change.zone + 1, at: now, into: &step) || changed
        }
        if let autoLap = settings.autoLap, var current = session, let trigger = autoLap.due(current.builder.lapTotals) {
          closeLap(of: &current, trigger: trigger, cause: "autoLap", at: now, into: &step)
          session = current
          changed = true
        }
        if point.sequence + 1 - pointsAtCheckpoint >= Self.checkpointInterval { changed = true }
      }
    case .wakeup:
      noteFixChanges(fixMonitor.advance(to: now.monotonic).map { [$0] } ?? [], at: now, into: &step)
      changed = fireDueCountdown(at: now, into: &step)
    case .reading(.battery(let reading)):
      changed = observeBattery(reading, at: now, into: &step)
    case .reading(.motion(let second)):
      motion = (second, now.monotonic)
      changed = noteMotionForAutoStart(second, at: now, into: &step)
    case .fall(let fall):
      noteIncident(incident.fall(fall, at: now.monotonic), at: now, into: &step)
    case .riderIsFine(let source):
      riderIsFine(from: source, at: now, into: &step)
    case .reading(let reading):
      changed = observe(reading, at: now, into: &step)
      if case .gps(let fix) = reading, gpsClock != nil {
        changed = observeTime(of: fix, at: now, into: &step) || changed
      }
    case .request(let request, let source):
      changed = handleRequest(request, from: source, at: now, into: &step)
    case .button(_, let source) where incident.isOn:
      // Any press answers the alarm, and does nothing else.
      riderIsFine(from: source, at: now, into: &step)
    case .button(let event, let source):
      if event.button == .lap, event.gesture == .longPress, settings.activityPlan.count > 1,
        state == .running || state == .paused
      {
        // A multisport workout's transition: lap held 2 s (a short press is a lap).
        changed = startNextActivity(nil, from: source, at: now, into: &step)
      } else if let request = event.request(in: state) {
        changed = handleRequest(request, from: source, at: now, into: &step)
      } else {
        step.commands.append(
          .log(.info, "\(event.gesture.rawValue) of \(event.button.rawValue) does nothing while \(state.rawValue)"))
      }
    case .systemClockTrusted(let trusted):
      systemClockTrusted = trusted
    case .stickCopy(let report):
      noteStickCopy(report, at: now, into: &step)
    case .uploadsSent:
      sentIndicatedUntil = now.monotonic + Self.sentIndication
    case .customZones(let configuration):
      changed = setCustomZones(configuration, into: &step)
    case .targetZone(let quantity, let target):
      changed = setTargetZone(quantity, target, at: now, into: &step)
    case .nextActivity(let activity, let source):
      changed = startNextActivity(activity, from: source, at: now, into: &step)
    case .device(let status):
      if status.device == .gps || status.device == .gpsReceiver { gpsPresent = true }
      if status.condition == .lost || status.condition == .absent {
        session?.builder.forgetReadings(of: status.device)
        if status.device == .imu { motion = nil }
      }
      note(watch.deviceReported(status, at: now.monotonic), at: now, into: &step)
    case .deviceRemoved(let device):
      session?.builder.forgetReadings(of: device)
      watch.forget(device)
      step.commands.append(.log(.info, "\(device.rawValue) is no longer configured"))
    case .lowBattery:
      changed = apply(.lowBattery, at: now, into: &step)
    case .sessionFinalized(let id):
      if session?.id == id { changed = apply(.finalized, at: now, into: &step) }
    case .storage(let condition):
      switch condition {
      case .failing(let detail):
        storageFailing = true
        record(SessionEvent(kind: .storageFailing, moment: now, detail: detail), into: &step)
      case .recovered(let detail):
        storageFailing = false
        record(SessionEvent(kind: .storageRecovered, moment: now, detail: detail), into: &step)
      }
    }
    if noteBattery(battery.advance(to: now.monotonic), at: now, into: &step) { changed = true }
    if incident.isOn { advanceIncident(at: now, into: &step) }
    if changed, let session {
      step.commands.append(.saveSnapshot(session))
      pointsAtCheckpoint = session.builder.pointCount
    }
    if let until = damageIndicatedUntil, now.monotonic >= until || session?.id != unreadableAtResume?.sessionID {
      damageIndicatedUntil = nil
    }
    if let until = sentIndicatedUntil, now.monotonic >= until || state != .notStarted && state != .ended {
      sentIndicatedUntil = nil
    }
    updateIndicator(into: &step.commands)
    return step
  }

  /// Sends the LED the pattern for the engine's state, if it changed; the alarm as a fault
  /// begins.
  private mutating func updateIndicator(into commands: inout [EngineCommand]) {
    let pattern = IndicatorPattern.choose(
      state: state, gps: gps, fault: storageFailing || watch.hasFault || damageIndicatedUntil != nil,
      copying: stickCopies.isCopying, offTarget: session?.targetZones?.contains { $0.outside == true } ?? false,
      lowBattery: battery.alert != .normal, sent: sentIndicatedUntil != nil, incident: incident.isOn)
    guard pattern != indicator else { return }
    if pattern == .fault { commands.append(.chirp(.alarm)) }
    indicator = pattern
    commands.append(.indicate(pattern))
  }

  /// The earliest monotonic time at which the engine wants a `wakeup`, if any: the end of the
  /// countdown, the moment the GPS fix counts as lost if no fix comes, the end of a damaged
  /// record's indication and of rides sent, and the end of a low battery's countdown. Derived from the state, so a runtime that sleeps until it (or the
  /// next input) misses nothing. Inlined: called through a getter, the 3.1 KB engine is copied
  /// whole to the stack first (four times a recorded second, callgrind).
  public var nextDeadline: Double? {
    @inline(__always) get {
      earliest(
        earliest(
          earliest(earliest(earliest(countdownDeadline, fixMonitor.deadline), watch.deadline), damageIndicatedUntil),
          sentIndicatedUntil), earliest(battery.countdownDeadline, incident.deadline))
    }
  }

  /// Whether the engine needs its 1 Hz `tick`: only while a session is running (a point a
  /// second). Paused, prepared or idle, nothing happens on a clock but `nextDeadline`.
  public var needsTick: Bool { sessionState == .running }

  // MARK: - Inputs

  private mutating func handleRequest(
    _ request: SessionRequest, from source: RequestSource, at now: Moment, into step: inout EngineStep
  ) -> Bool {
    if session == nil {
      guard request == .start else {
        step.outcome = .refused(.noActiveSession, state: .notStarted)
        step.commands.append(
          .log(.warning, "refused \(request.rawValue) from \(source.rawValue): \(Refusal.noActiveSession)"))
        return false
      }
      openSession(at: now, into: &step)
    }
    let changed = apply(.request(request, source), at: now, into: &step)
    if step.outcome == nil { step.outcome = .accepted(state) }
    return changed
  }

  private mutating func observe(_ reading: SensorReading, at now: Moment, into step: inout EngineStep) -> Bool {
    switch reading {
    case .gps, .gpsNoFix, .gpsRejected:
      gpsPresent = true
      note(watch.readingArrived(reading, at: now.monotonic), at: now, into: &step)
    default: break
    }
    noteFixChanges(fixMonitor.observe(reading, at: now.monotonic), at: now, into: &step)
    // The session is changed in place, through the optional: taking it out into a variable
    // and putting it back copied all of it (2.3 KB) twice for every reading.
    guard let state = session?.state, let pausedBySystem = session?.machine.pausedBySystem else { return false }
    // Distance counts while running, and while auto-paused (see LiveBuilder.observe).
    let counting = state == .running || (state == .paused && pausedBySystem)
    session?.builder.observe(reading, at: now, in: state, countingDistance: counting)
    var signal: SessionSignal?
    // Auto-pause follows GPS speed, or a wheel sensor's where GPS has no current fix (indoors).
    let speedReading: Bool
    switch reading {
    case .gps: speedReading = true
    case .wheelSpeed: speedReading = session?.builder.hasCurrentFix(at: now.monotonic) == false
    default: speedReading = false
    }
    if speedReading, let speed = session?.builder.currentSpeed(at: now) {
      signal = session?.autoPause?.observe(
        speed: speed, at: now.monotonic, state: state, pausedBySystem: pausedBySystem)
    }
    guard let signal else { return false }
    return apply(signal, at: now, into: &step)
  }

  private mutating func fireDueCountdown(at now: Moment, into step: inout EngineStep) -> Bool {
    guard let deadline = session?.countdownDeadline, now.monotonic >= deadline else { return false }
    return apply(.countdownFinished, at: now, into: &step)
  }

  // MARK: - The machine and its effects

  private mutating func openSession(at now: Moment, into step: inout EngineStep) {
    let planned = workoutPlan.takeForNewWorkout()
    let opened = ActiveSession(
      id: nextSessionID, activity: settings.activity, machine: SessionMachine(),
      builder: LiveBuilder(
        freshness: settings.freshness,
        elevation: ElevationTracker(
          calibrator: settings.seaLevelPressure.flatMap { SeaLevelCalibrator(configuredSeaLevelPressure: $0) }
            ?? SeaLevelCalibrator())),
      autoPause: settings.autoPause.map(AutoPauseDetector.init(settings:)),
      countdownDeadline: nil, customZones: planned.zones, targetZones: planned.targets, openedAt: now,
      lastMoment: now, openedThisRun: true, epochFirstPoint: 0, epochFirstLap: 1)
    nextSessionID += 1
    session = opened
    lastPoint = nil
    pointsAtCheckpoint = 0
    step.commands.append(.openSession(opened))
    step.commands.append(.log(.info, "opened session \(opened.id) (\(opened.activity.rawValue))"))
  }

  /// Runs a signal through the machine and carries out what its outcome means. Returns whether
  /// the session changed in a way worth saving.
  mutating func apply(_ signal: SessionSignal, at now: Moment, into step: inout EngineStep) -> Bool {
    guard var current = session else { return false }
    let outcome = current.machine.handle(signal, at: now)
    switch outcome {
    case .transitioned(let transition):
      step.commands.append(.recordEvent(sessionID: current.id, SessionEvent(transition)))
      step.commands.append(
        .log(
          .info,
          "session \(current.id): \(transition.from.rawValue) → \(transition.to.rawValue) (\(transition.cause.kind)\(transition.cause.detail.map { ": \($0)" } ?? ""))"
        ))
      effects(of: transition, on: &current, at: now, into: &step)
      if let chirp = ChirpPattern.forTransition(from: transition.from, to: transition.to) {
        step.commands.append(.chirp(chirp))
      }
      session = current
      return true
    case .lapMarked:
      let number = closeLap(
        of: &current, trigger: .lapPress, cause: TransitionCause.button(source(of: signal)).kind, at: now,
        into: &step)
      step.outcome = .lapMarked(number: number)
      session = current
      return true
    case .startNewSession:
      openSession(at: now, into: &step)
      return apply(signal, at: now, into: &step)
    case .refused(let refusal):
      step.outcome = .refused(refusal, state: current.state)
      if case .request(let request, let source) = signal {
        step.commands.append(
          .log(
            .warning,
            "refused \(request.rawValue) from \(source.rawValue) in state \(current.state.rawValue): \(refusal)"))
      }
      return false
    case .ignored:
      return false
    }
  }

  private func effects(
    of transition: Transition, on session: inout ActiveSession, at now: Moment, into step: inout EngineStep
  ) {
    switch (transition.from, transition.to) {
    case (_, .prepared):
      // With auto-start the session waits for the board to move, with no deadline.
      session.countdownDeadline = settings.autoStart == nil ? now.monotonic + settings.countdown : nil
      step.commands.append(.warmUpSensors)
    case (.prepared, .running):
      session.countdownDeadline = nil
      session.builder.begin(at: now)
      // The metres ridden during the countdown are not the workout's.
      session.builder.startCountingHere()
      let zones = workoutPlan.zones(custom: session.customZones)
      session.builder.trackZones(zones)
      // The zones in force, with the session's events: what `show` sorts its points by.
      for configuration in zones {
        step.commands.append(
          .recordEvent(
            sessionID: session.id,
            SessionEvent(kind: .zoneConfiguration, moment: now, detail: WorkoutPlan.describe(configuration))))
      }
      if let ftp = settings.ftp {
        step.commands.append(
          .recordEvent(
            sessionID: session.id,
            SessionEvent(kind: .ftp, moment: now, detail: "\(Int(ftp.rounded())) W", value: ftp)))
      }
      if !settings.rider.isEmpty {
        step.commands.append(
          .recordEvent(
            sessionID: session.id, SessionEvent(kind: .rider, moment: now, detail: settings.rider.eventDetail)))
      }
      step.commands.append(
        .recordEvent(
          sessionID: session.id,
          SessionEvent(kind: .powerAveraging, moment: now, detail: settings.powerAveraging.rawValue)))
      for target in session.targetZones ?? [] {
        step.commands.append(
          .recordEvent(sessionID: session.id, WorkoutPlan.targetEvent(target.quantity, target, at: now)))
      }
    case (.paused, .running):
      if case .button = transition.cause { session.builder.startNewSegment() }
    case (_, .stopped):
      session.countdownDeadline = nil
      if session.builder.startMoment != nil {
        let lap = session.builder.closeLap(at: now, trigger: .sessionEnd)
        step.commands.append(.recordLap(sessionID: session.id, lap))
      }
      if let ftp = settings.ftp, let estimate = session.builder.metrics?.estimatedFTP, estimate.rounded() > ftp {
        let text = "the best 20 minutes suggest FTP \(Int(estimate.rounded())) W (set: \(Int(ftp.rounded())) W)"
        step.commands.append(
          .recordEvent(
            sessionID: session.id, SessionEvent(kind: .ftpSuggested, moment: now, detail: text, value: estimate)))
        step.commands.append(.log(.notice, "session \(session.id): \(text); [rider] ftp in workoutd.toml"))
      }
      step.commands.append(.finalizeSession(sessionID: session.id, Self.summary(of: session, at: now)))
    default:
      break
    }
  }

  private static func summary(of session: ActiveSession, at now: Moment) -> SessionSummary {
    SessionSummary(
      totals: session.builder.totals, laps: session.builder.lapNumber - 1,
      start: session.builder.startMoment, end: now)
  }

  /// Records an event against the unfinished session, or as a service event when there is none.
  mutating func record(_ event: SessionEvent, into step: inout EngineStep) {
    let owner = session.flatMap { $0.state.isUnfinished ? $0.id : nil }
    step.commands.append(.recordEvent(sessionID: owner, event))
  }

  private func source(of signal: SessionSignal) -> RequestSource {
    if case .request(_, let source) = signal { return source }
    return .control
  }
}
