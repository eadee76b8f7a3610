/// Severity of a log line, as syslog and journald rank them.
public enum LogLevel: Int, Sendable, Hashable, Codable, CaseIterable {
  case error = 3
  case warning = 4
  case notice = 5
  case info = 6
  case debug = 7

  /// Whether a line of this level is shown when `minimum` is the least severe level wanted.
  public func isShown(atMinimum minimum: LogLevel) -> Bool { rawValue <= minimum.rawValue }

  public var name: String {
    switch self {
    case .error: "error"
    case .warning: "warning"
    case .notice: "notice"
    case .info: "info"
    case .debug: "debug"
    }
  }
}

/// What the engine is told: every input is one of these, stamped with a `Moment` by the caller.
public enum EngineInput: Sendable, Hashable {
  /// The 1 Hz recording clock: a running session records a point.
  case tick
  /// A deadline the engine asked for (`scheduleWakeup`) has come.
  case wakeup
  case reading(SensorReading)
  /// The inertial sensor's detector saw a fall (an impact, then stillness on another side):
  /// an incident if the session was riding (`IncidentAlarm`).
  case fall(Fall)
  /// The rider says all is well (the phone page's "I'm fine", `workoutctl fine`): an incident's
  /// alarm ends. Any button press says so too.
  case riderIsFine(RequestSource)
  case request(SessionRequest, RequestSource)
  /// A button gesture; what it asks for depends on the state (`ButtonEvent.request(in:)`).
  case button(ButtonEvent, RequestSource)
  case device(DeviceStatus)
  /// A device is no longer configured (a sensor removed with `workoutctl sensors remove`): its
  /// condition is forgotten, so it is neither in status nor a fault on the LED.
  case deviceRemoved(DeviceKind)
  case lowBattery
  /// The store has committed the summary of this stopped session.
  case sessionFinalized(sessionID: Int64)
  case storage(StorageCondition)
  /// Whether the board's own wall clock is synchronised (NTP): a GPS time that contradicts a
  /// synchronised clock is the receiver's error and is not believed.
  case systemClockTrusted(Bool)
  /// What the USB stick copier (`workoutctl copy-exports --report`) says of its copy.
  case stickCopy(StickCopyReport)
  /// The uploader sent the last ride that was waiting for it: the LED says so, between rides.
  case uploadsSent
  /// The next (or the prepared) workout's own zones for one quantity (`workoutctl zones set`):
  /// refused once it runs.
  case customZones(ZoneConfiguration)
  /// A target zone range for the workout (the next one while none is open) of one quantity, or
  /// none (`workoutctl zones target`): an alert when the rider leaves it.
  case targetZone(ZoneQuantity, TargetZone?)
  /// The workout goes on to its next activity (a multisport workout, as HKWorkoutActivity): of
  /// this type, or nil for the next of `EngineSettings.activityPlan` (`workoutctl activity
  /// next`, a long press of lap).
  case nextActivity(ActivityType?, RequestSource)
}

/// One step of copying the exports onto a USB stick, as the copier and its unit report it.
public struct StickCopyReport: Sendable, Hashable, Codable {
  public enum Phase: String, Sendable, Hashable, Codable, CaseIterable {
    /// Mounted, files being copied: not to be pulled.
    case copying
    /// Every file copied and synced; the stick is still mounted.
    case copied
    /// The copy failed (full, read-only, pulled, our file missing); `detail` says why.
    case failed
    /// The unit has unmounted the stick (or given up on mounting it): after `copied`, safe to
    /// pull; after anything else, the copy did not finish.
    case unmounted
    /// The stick cannot take rides (no file system, or one workoutd does not write) and is not
    /// mounted: a fault for as long as it is plugged in; `detail` says why and what to do.
    case refused
    /// A stick that was `refused` has been pulled out: nothing more to tell of it.
    case removed
  }

  public var phase: Phase
  /// The stick's name in the export table: `usb:<filesystem UUID>`.
  public var target: String
  public var detail: String
  /// The partition's kernel name ("sda1"), when known: the unit's later report finds the copy
  /// by it when the stick is gone and its UUID can no longer be read.
  public var device: String?

  public init(phase: Phase, target: String, detail: String, device: String? = nil) {
    self.phase = phase
    self.target = target
    self.detail = detail
    self.device = device
  }

  /// Whether the stick's UUID was unknown to the reporter (the stick gone before the unit's
  /// report): its target is then only `usb:<kernel name>`.
  public var namesOnlyTheDevice: Bool { device.map { target == "usb:" + $0 } ?? false }

  /// Whether this report is about the same stick as `other`: the same target, or, when this
  /// report knows only the partition's kernel name, the same partition. (Another stick later
  /// plugged into the same port gets the same kernel name and a target of its own.)
  public func isAbout(_ other: StickCopyReport) -> Bool {
    target == other.target || (namesOnlyTheDevice && device == other.device)
  }
}

/// What the runtime reports about the store.
public enum StorageCondition: Sendable, Hashable, Codable {
  /// Writes are failing (disk full, I/O error); data waits in memory and is retried.
  case failing(String)
  /// Writes succeed again; `String` says what was caught up.
  case recovered(String)
}

/// A recorded happening in a session. Transitions carry from/to/cause; others carry a detail
/// and, where useful, a number (the lap number, the seconds of a gap).
public struct SessionEvent: Sendable, Hashable, Codable {
  public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
    case transition
    case lap
    case recovered
    case deviceAbsent
    case deviceAvailable
    case deviceLost
    case deviceFailing
    /// A BLE sensor (strap, power meter, pod) connected, or back after it went: `detail` names it.
    case sensorConnected
    /// A BLE sensor went, or cannot be reached: `detail` names it and says why. The values it
    /// gave stop; a gap stays a gap.
    case sensorDisconnected
    case fixLost
    case fixRegained
    case storageFailing
    case storageRecovered
    /// GPS time was trusted: `value` is how far off the board's wall clock was, seconds.
    case clockCorrected
    /// An unfinished session that could not be put back together after a restart was closed
    /// (`ended`) with its data kept: `detail` says why.
    case abandoned
    /// Resuming the session after a restart found rows of its record that a damaged file made
    /// unreadable (`detail`: what, as "2 points, 1 lap"; `value`: the recorded seconds among
    /// them): they are left out of its figures and its exports.
    case damagedRecord
    /// A zone configuration in force from the start (`detail`: quantity, source, zones as
    /// `ZoneConfiguration(parsing:)` reads them).
    case zoneConfiguration
    /// The rider's functional threshold power at the start (`value`, W): IF and TSS are
    /// reckoned against it.
    case ftp
    /// The rider's age, weight, sex and heart rates as `[rider]` set them at the start
    /// (`detail`: `RiderProfile.eventDetail`): calories from heart rate, and the files' zone
    /// records, are reckoned from these.
    case rider
    /// The ride's best 20 minutes suggest a higher FTP than the configured one (`value`: 95 %
    /// of that best, W); said once, when the ride stops.
    case ftpSuggested
    /// The heart rate or power moved to another zone (`detail` says which; `value`: the zone,
    /// from 1).
    case zoneChange
    /// How the ride's average power counts (`detail`: "withZeros" or "withoutZeros"), recorded
    /// at the start: the exports and `show` average as the rider had it set.
    case powerAveraging
    /// The announced zone left the workout's target range (`detail`: which zone, which target;
    /// `value`: the zone) …
    case targetZoneLeft
    /// … or came back into it.
    case targetZoneReached
    /// The workout's target zone range of one quantity (`detail`: "heartRate 2-3", or
    /// "heartRate off"), when it starts running and whenever it is changed after: a session
    /// rebuilt from its record takes its targets from these.
    case targetZoneSet
    /// The workout went on to another activity (`detail`: its type; `value`: its number, the
    /// first being 1; `cause`: what asked).
    case activity
    /// What the rider noted from the phone page (`cause`: "drink", "note", "rpe", "mood";
    /// `detail`: the words; `value`: millilitres, the RPE 1-10, the mood's valence -1...1).
    /// Written by the service beside the engine's events, during the ride or after it.
    case annotation
    /// The board's battery fell to the low level (`value`: the level, %; `detail`: the level
    /// and the time left): the LED, the buzzer and the phone's banner warn.
    case batteryLow
    /// The battery is critical (`detail`: the level or the time left that made it so; `value`:
    /// the level): the ride is stopped and ended in `[battery] countdown` seconds.
    case batteryCritical
    /// The critical countdown was cancelled (`detail`: a charger plugged in, the level back).
    case batteryCountdownCancelled
    /// The level rose back above the low level (`value`): the warnings are over.
    case batteryRecovered
    /// A fall while riding (`value`: the impact's peak, g; `detail`: the impact and the tilt):
    /// the alarm sounds and the countdown runs for the rider to say all is well.
    case incidentSuspected
    /// The rider said all is well (`cause`: the button or the page) and the alarm stopped.
    case incidentCancelled
    /// The countdown ran out with no answer: the alarm goes on until the rider answers.
    case incidentConfirmed
  }

  public var kind: Kind
  public var moment: Moment
  public var from: SessionState?
  public var to: SessionState?
  /// `button`, `system` or `recovery` for transitions and recoveries.
  public var cause: String?
  public var detail: String?
  public var value: Double?

  public init(
    kind: Kind, moment: Moment, from: SessionState? = nil, to: SessionState? = nil,
    cause: String? = nil, detail: String? = nil, value: Double? = nil
  ) {
    self.kind = kind
    self.moment = moment
    self.from = from
    self.to = to
    self.cause = cause
    self.detail = detail
    self.value = value
  }

  public init(_ transition: Transition) {
    self.init(
      kind: .transition, moment: transition.moment, from: transition.from, to: transition.to,
      cause: transition.cause.kind, detail: transition.cause.detail)
  }
}

/// A session's totals when it stops: what `workoutctl show` and exports report.
public struct SessionSummary: Sendable, Hashable, Codable {
  public var totals: IntervalTotals
  public var laps: Int
  /// When the session first ran (nil if it was stopped during the countdown).
  public var start: Moment?
  public var end: Moment
}

/// Everything needed to carry a session on after a restart, saved with every committed second.
public struct ActiveSession: Sendable, Hashable, Codable {
  public var id: Int64
  public var activity: ActivityType
  public var machine: SessionMachine
  public var builder: LiveBuilder
  public var autoPause: AutoPauseDetector?
  /// When the countdown ends (monotonic), while prepared.
  public var countdownDeadline: Double?
  /// This workout's own zones (`custom`), set before it ran; they replace the configured ones
  /// of the same quantity. Optional, so that checkpoints written before it existed decode.
  public var customZones: [ZoneConfiguration]?
  /// The target zone ranges of this workout (at most one per quantity). Optional, so that
  /// checkpoints written before it existed decode.
  public var targetZones: [TargetZone]?
  /// The activity the workout is in, its number (from 1) and the session's totals when it
  /// began (its own are the difference); nil for the first. Optional, so that checkpoints
  /// written before they existed decode.
  public var currentActivity: ActivityType?
  public var activityNumber: Int?
  public var activityStart: IntervalTotals?
  public var openedAt: Moment
  /// The latest moment the engine saw for this session.
  public var lastMoment: Moment
  /// Where this run of the service took the session up (its opening, or the latest resume):
  /// the first point and lap recorded since, and whether it was opened in this run. What was
  /// recorded since shares one boot's clocks, so a GPS clock correction applies to exactly that
  /// (monotonic times of different boots cannot be compared).
  public var openedThisRun: Bool
  public var epochFirstPoint: Int
  public var epochFirstLap: Int

  public var state: SessionState { machine.state }
}

/// An effect the runtime carries out. Store commands from one step go in one transaction.
///
/// The cases that carry a whole session, summary or lap are `indirect` (their payload in a box
/// of its own): an enum is as large as its largest case, and with an `ActiveSession` inline
/// every command, a point or a log line, took 2.3 KB, copied at each step.
public enum EngineCommand: Sendable, Hashable {
  indirect case openSession(ActiveSession)
  /// An event of a session, or of the service when `sessionID` is nil (a device gone missing
  /// while no session runs).
  case recordEvent(sessionID: Int64?, SessionEvent)
  case recordPoint(sessionID: Int64, TrackPoint)
  /// A heart-rate strap's RR intervals (1/1024 s, oldest first) that arrived in the second the
  /// point `sequence` closes; in the same step, so the same transaction, as that point.
  case recordRRIntervals(sessionID: Int64, sequence: Int, [UInt16])
  /// The battery as it was at `moment`: one a `[battery] sample_interval` (a minute) while the
  /// session is under way, the ride's companion data (`battery_sample`).
  case recordBatterySample(sessionID: Int64, BatterySample)
  indirect case recordLap(sessionID: Int64, LapSummary)
  /// Save the session's state and resume snapshot.
  indirect case saveSnapshot(ActiveSession)
  /// Write the summary; once committed, tell the engine `sessionFinalized`.
  indirect case finalizeSession(sessionID: Int64, SessionSummary)
  /// Add `seconds` to the wall times the session recorded in this run of the service (points
  /// from `firstPoint`, laps from `firstLap`, and events stamped with the current clock epoch):
  /// they were written with a wall clock GPS has now shown to be off.
  case correctWallTimes(sessionID: Int64, seconds: Double, firstPoint: Int, firstLap: Int)
  /// GPS time is trusted from now on (or moved): stamp what follows with it (the board's wall
  /// clock was `systemOffset` seconds off), and set the system clock if the configuration asks.
  case correctBoardClock(GPSClockCorrection)
  /// A session is being prepared: start GPS, straps and barometer so they are ready.
  case warmUpSensors
  /// Show this on the status LED (sent when it changes).
  case indicate(IndicatorPattern)
  /// Sound this on the buzzer, if the board has one.
  case chirp(ChirpPattern)
  case log(LogLevel, String)
  /// The battery ran out of time: power the board off once session `afterSession` (nil: none)
  /// has ended and its exports are written, if `[battery] power_off` says so.
  case powerOff(afterSession: Int64?)
}

/// What one request led to, for the rider (LED, `workoutctl`'s answer).
public enum RequestOutcome: Sendable, Hashable {
  case accepted(SessionState)
  case lapMarked(number: Int)
  case refused(Refusal, state: SessionState)
}

/// The result of handling one input.
public struct EngineStep: Sendable, Hashable {
  public var commands: [EngineCommand] = []
  /// Set when the input was a rider's request.
  public var outcome: RequestOutcome?

  public init() {}

  /// Whether any command must be written to the store.
  public var touchesStore: Bool {
    commands.contains { command in
      switch command {
      case .correctBoardClock, .warmUpSensors, .indicate, .chirp, .log, .powerOff: false
      default: true
      }
    }
  }
}
