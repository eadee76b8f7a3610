/// How the engine judges the devices' reports (config: none yet; the defaults are the design's).
public struct DeviceWatchSettings: Sendable, Hashable, Codable {
  /// Seconds of fixes arriving and all being refused before the rider is told (a warning, an
  /// event, the LED's fault): long enough to ride out a receiver's first poor fixes after a
  /// cold start, short enough that a wrong limit is noticed before the ride.
  public var rejectedFixesAlarmAfter: Double
  /// A device whose condition changes more than `flapLimit` times within `flapWindow` seconds
  /// is unstable (a loose connector, a gpsd that keeps reopening its receiver): one event says
  /// so, its changes are counted rather than each recorded, and one event says when it has been
  /// steady for `flapWindow` seconds again.
  public var flapWindow: Double
  public var flapLimit: Int

  public init(rejectedFixesAlarmAfter: Double = 10, flapWindow: Double = 60, flapLimit: Int = 4) {
    self.rejectedFixesAlarmAfter = rejectedFixesAlarmAfter
    self.flapWindow = flapWindow
    self.flapLimit = flapLimit
  }
}

/// What the engine makes of the devices: each device's last condition, GPS fixes that arrive
/// and are refused, and devices that flap. A pure value: the caller passes the time and turns
/// the notices it returns into events and log lines.
///
/// ```swift
/// notices += watch.deviceReported(status, at: now.monotonic)
/// notices += watch.readingArrived(reading, at: now.monotonic)
/// notices += watch.advance(to: now.monotonic)         // on every tick and wakeup
/// let wake = watch.deadline                            // when `advance` has news, if nothing comes
/// ```
public struct DeviceWatch: Sendable, Hashable {
  /// Something to record: an event of `kind` about `device`, and the matching log line.
  public struct Notice: Sendable, Hashable {
    public var kind: SessionEvent.Kind
    public var device: DeviceKind
    /// What happened in a word or two ("lost", "unstable", "refusing fixes").
    public var word: String
    public var detail: String
    public var level: LogLevel
    public var value: Double?
    /// A plain change of condition: its event says only the detail (as it always has).
    var isConditionChange = false

    /// The event's detail: "gps: lost gpsd at ...", "gps: unstable: its condition ...".
    public var eventDetail: String {
      isConditionChange ? "\(device.rawValue): \(detail)" : "\(device.rawValue): \(word): \(detail)"
    }

    /// The log line: "gps lost: lost gpsd at ...".
    public var logLine: String { "\(device.rawValue) \(word): \(detail)" }
  }

  struct Rejection: Sendable, Hashable {
    var since: Double
    var reason: FixRejection
    var reported = false
  }

  struct Flapping: Sendable, Hashable {
    /// Times of the recent changes (within the window).
    var changes: [Double] = []
    /// Set while unstable: when it began, and the changes counted since.
    var unstableSince: Double?
    var countedWhileUnstable = 0
  }

  public var settings: DeviceWatchSettings
  /// Each device's last reported status.
  public private(set) var conditions: [DeviceKind: DeviceStatus] = [:]
  private(set) var rejection: Rejection?
  private var flapping: [DeviceKind: Flapping] = [:]

  public init(settings: DeviceWatchSettings = DeviceWatchSettings()) {
    self.settings = settings
  }

  /// Whether the LED shows a fault: a device that is not available, one that is unstable, or
  /// refused fixes the rider has been told about.
  public var hasFault: Bool {
    conditions.values.contains(where: Self.isFault)
      || flapping.values.contains { $0.unstableSince != nil }
      || rejection?.reported == true
  }

  /// Devices at fault, for status.
  public var faultyDevices: Set<DeviceKind> {
    var devices = Set(conditions.values.filter(Self.isFault).map(\.device))
    devices.formUnion(flapping.filter { $0.value.unstableSince != nil }.map(\.key))
    if rejection?.reported == true { devices.insert(.gps) }
    return devices
  }

  /// Whether a device's condition is a fault: anything but available, except a battery gauge
  /// that is absent. A board without one (mains, a plain power bank) says "no battery
  /// information" and runs as it always has; a gauge that was there and went is a fault.
  static func isFault(_ status: DeviceStatus) -> Bool {
    status.condition != .available && !(status.device == .battery && status.condition == .absent)
  }

  /// Whether `device` is unstable now.
  public func isUnstable(_ device: DeviceKind) -> Bool { flapping[device]?.unstableSince != nil }

  /// Fixes are arriving and being refused: since when, and the latest reason.
  public var fixesRefused: (since: Double, reason: FixRejection)? { rejection.map { ($0.since, $0.reason) } }

  /// The GPS's condition, given whether the fix monitor has a fix and whether any GPS has
  /// reported at all.
  public func gpsCondition(hasFix: Bool, gpsPresent: Bool) -> GPSCondition {
    if let gpsd = conditions[.gps], gpsd.condition != .available { return .noGPSD }
    if let receiver = conditions[.gpsReceiver], receiver.condition != .available { return .noReceiver }
    if hasFix { return .fix }
    if rejection != nil { return .rejecting }
    return gpsPresent ? .searching : .none
  }

  /// The GPS's condition in words, for `workoutctl status`.
  public func gpsDetail(_ condition: GPSCondition, now: Double) -> String {
    switch condition {
    case .none: return "no GPS has reported"
    case .noGPSD: return conditions[.gps].map { "\($0.condition.rawValue): \($0.detail)" } ?? "no gpsd"
    case .noReceiver:
      return conditions[.gpsReceiver].map { "\($0.condition.rawValue): \($0.detail)" } ?? "gpsd has no receiver"
    case .searching: return "the receiver has no fix"
    case .rejecting:
      guard let rejection else { return "fixes are refused" }
      return "fixes arrive and are refused for \(formatSeconds(max(0, now - rejection.since))): \(rejection.reason)"
    case .fix: return "fix"
    }
  }

  /// The earliest time `advance(to:)` has something to say if nothing else happens.
  public var deadline: Double? {
    var soonest: Double?
    if let rejection, !rejection.reported { soonest = rejection.since + settings.rejectedFixesAlarmAfter }
    for state in flapping.values where state.unstableSince != nil {
      soonest = earliest(soonest, state.changes.last.map { $0 + settings.flapWindow })
    }
    return soonest
  }

  /// A device taken out of the configuration: nothing about it is kept.
  public mutating func forget(_ device: DeviceKind) {
    conditions.removeValue(forKey: device)
    flapping.removeValue(forKey: device)
  }

  /// A device's condition changed (sources report changes only). Returns what to record: the
  /// change itself, or, for an unstable device, only the start of its instability. The
  /// battery's detail names which battery it reads (or none): a battery plugged in or swapped
  /// while the gauge stays available is news as a condition's change is.
  public mutating func deviceReported(_ status: DeviceStatus, at now: Double) -> [Notice] {
    let previous = conditions[status.device]
    conditions[status.device] = status
    if status.condition != .available, status.device == .gps || status.device == .gpsReceiver {
      rejection = nil  // no gpsd, no receiver: no fixes, refused or not
    }
    let batteryChanged = status.device == .battery && previous?.detail != status.detail
    guard previous?.condition != status.condition || batteryChanged else { return [] }
    // A stick's condition changes when the rider plugs one in: each change is news, never a
    // flapping device.
    if status.device == .usbStick { return [Self.notice(for: status)] }
    var state = flapping[status.device] ?? Flapping()
    state.changes.append(now)
    state.changes.removeAll { $0 < now - settings.flapWindow }
    defer { flapping[status.device] = state }
    if state.unstableSince != nil {
      state.countedWhileUnstable += 1
      return []
    }
    if state.changes.count > settings.flapLimit {
      state.unstableSince = now
      state.countedWhileUnstable = 0
      return [
        Notice(
          kind: .deviceFailing, device: status.device, word: "unstable",
          detail:
            "its condition changed \(state.changes.count) times in \(formatSeconds(settings.flapWindow)) (now \(status.condition.rawValue): \(status.detail)); further changes are counted until it is steady",
          level: .warning, value: Double(state.changes.count))
      ]
    }
    return [Self.notice(for: status)]
  }

  /// A GPS reading: refused fixes start (or go on with) the refused condition; an accepted fix
  /// or a report of no fix ends it.
  public mutating func readingArrived(_ reading: SensorReading, at now: Double) -> [Notice] {
    switch reading {
    case .gpsRejected(let reason):
      if rejection == nil {
        rejection = Rejection(since: now, reason: reason)
      } else {
        rejection?.reason = reason
      }
      return []
    case .gps:
      return endRejection(at: now, detail: "fixes are accepted again")
    case .gpsNoFix:
      return endRejection(at: now, detail: "no more refused fixes: the receiver reports no fix")
    default:
      return []
    }
  }

  /// Lets time pass: refused fixes that lasted are reported, and an unstable device that has
  /// been steady for the window is stable again.
  public mutating func advance(to now: Double) -> [Notice] {
    var notices: [Notice] = []
    if var current = rejection, !current.reported, now >= current.since + settings.rejectedFixesAlarmAfter {
      current.reported = true
      rejection = current
      notices.append(
        Notice(
          kind: .deviceFailing, device: .gps, word: "refusing fixes",
          detail: "fixes arrive and are refused (for \(formatSeconds(now - current.since))): \(current.reason)",
          level: .warning, value: now - current.since))
    }
    for (device, var state) in flapping where state.unstableSince != nil {
      guard let last = state.changes.last, now >= last + settings.flapWindow else { continue }
      let counted = state.countedWhileUnstable
      state = Flapping()
      flapping[device] = state
      guard let status = conditions[device] else { continue }
      var notice = Self.notice(for: status)
      notice.isConditionChange = false
      notice.word = "steady"
      notice.detail =
        "steady again after \(counted) more changes while unstable; now \(status.condition.rawValue): \(status.detail)"
      notice.level = status.condition == .available ? .notice : .warning
      notice.value = Double(counted)
      notices.append(notice)
    }
    return notices
  }

  private mutating func endRejection(at now: Double, detail: String) -> [Notice] {
    guard let ended = rejection else { return [] }
    rejection = nil
    guard ended.reported else { return [] }
    return [
      Notice(
        kind: .deviceAvailable, device: .gps, word: "fixes accepted",
        detail: "\(detail) (after \(formatSeconds(now - ended.since)) of refused fixes)", level: .notice,
        value: now - ended.since)
    ]
  }

  static func notice(for status: DeviceStatus) -> Notice {
    let kind: SessionEvent.Kind =
      switch (status.condition, status.device.isRideSensor) {
      case (.available, true): status.sameConnection == true ? .deviceAvailable : .sensorConnected
      case (.absent, true), (.lost, true): .sensorDisconnected
      case (.absent, false): .deviceAbsent
      case (.available, false): .deviceAvailable
      case (.lost, false): .deviceLost
      case (.failing, _): .deviceFailing
      }
    return Notice(
      kind: kind, device: status.device, word: status.condition.rawValue, detail: status.detail,
      level: status.condition == .available ? .info : .warning, isConditionChange: true)
  }
}

/// The earlier of two optional times (nil when neither is set), without building an array on
/// the loop's path.
func earliest(_ a: Double?, _ b: Double?) -> Double? {
  guard let a else { return b }
  guard let b else { return a }
  return Swift.min(a, b)
}
