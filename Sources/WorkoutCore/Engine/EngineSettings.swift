/// What the engine needs to know to run sessions.
public struct EngineSettings: Sendable, Hashable, Codable {
  public var activity: ActivityType
  /// Seconds between `prepare` and `running`.
  public var countdown: Double
  /// nil switches auto-pause off.
  public var autoPause: AutoPauseSettings?
  public var freshness: Freshness
  /// A known sea-level pressure, Pa; nil calibrates the barometer from GPS at each start.
  public var seaLevelPressure: Double?
  /// Seconds without an accepted fix after which the fix counts as lost.
  public var fixLostAfter: Double = 5
  /// When refused fixes and flapping devices are reported.
  public var deviceWatch = DeviceWatchSettings()
  /// When GPS time is believed and becomes the board's wall clock; nil where the board's clock
  /// needs no correction (the simulated board runs on the ride's own time).
  public var gpsClock: GPSClockSettings? = nil
  /// The workout's zone configurations, at most one per quantity (heart rate, power): time in
  /// zone and zone-change events. Empty: none.
  public var zones: [ZoneConfiguration] = []
  /// The rider's functional threshold power, W, for IF and TSS and the FTP event.
  public var ftp: Double? = nil
  /// The rider's age, weight, sex and heart rates, recorded with each workout.
  public var rider = RiderProfile()
  /// Whether average power counts the seconds at 0 W.
  public var powerAveraging: PowerAveraging = .withZeros
  /// Target zone ranges for every workout (`[zones] heart_rate_target`, `power_target`);
  /// `workoutctl zones target` replaces one for a workout.
  public var targetZones: [TargetZone] = []
  /// A multisport workout's activities in order (a duathlon: running, cycling, running): a
  /// long press of lap goes on to the next. Fewer than two: that gesture does nothing.
  public var activityPlan: [ActivityType] = []
  /// Automatic laps: a lap closes each time the current one reaches this distance or timer
  /// time (a lap press starts the count again, as on a Garmin). nil: laps only when pressed.
  public var autoLap: AutoLap? = nil
  /// When a low battery warns and when it ends the ride.
  public var battery = BatterySettings()
  /// When a fall while riding sounds the incident alarm (`[imu]`); nil: never (no inertial
  /// sensor, or `incident = false`).
  public var incident: IncidentSettings? = nil
  /// A started session waits, prepared, for the board to move instead of counting down
  /// (`[imu] auto_start`); nil: the countdown.
  public var autoStart: AutoStartSettings? = nil

  public init(
    activity: ActivityType = .cycling, countdown: Double = 3,
    autoPause: AutoPauseSettings?? = .none, freshness: Freshness = Freshness(), seaLevelPressure: Double? = nil
  ) {
    self.activity = activity
    self.countdown = countdown
    self.autoPause = autoPause ?? activity.defaultAutoPause
    self.freshness = freshness
    self.seaLevelPressure = seaLevelPressure
  }
}

/// A live view of the engine, for `workoutctl status` and the LED.
public struct EngineStatus: Sendable, Hashable, Codable {
  public var state: SessionState
  public var sessionID: Int64?
  public var activity: ActivityType?
  public var pausedBySystem: Bool
  public var countdownRemaining: Double?
  public var elapsed: Double
  public var timer: Double
  public var distance: Double
  public var speed: Double?
  public var averageSpeed: Double?
  public var maxSpeed: Double?
  /// Seconds per kilometre, for activities that read pace.
  public var pace: Double?
  public var heartRate: Int?
  public var averageHeartRate: Double?
  public var maxHeartRate: Double?
  public var lap: Int?
  public var points: Int
  public var lastPoint: TrackPoint?
  public var ascent: Double = 0
  public var descent: Double = 0
  /// Barometric altitude if a barometer reports, else GPS altitude.
  public var altitude: Double?
  public var gps: GPSCondition = .none
  /// The GPS's condition in words, with its reason ("fixes arrive and are refused for 40 s:
  /// horizontal error 180 m > limit 100 m ...").
  public var gpsDetail: String?
  public var indicator: IndicatorPattern = .off
  /// The latest barometer reading while it is current, Pa, and the sea-level pressure its
  /// altitude is computed with ("standard" until calibrated, "gps" or "configured").
  public var pressure: Double?
  public var seaLevelPressure: Double?
  public var seaLevelSource: String?
  /// Relative humidity while a BME280 reports it, %RH.
  public var humidity: Double?
  /// Per zone configuration of the workout: the zone of the last sample and the time in each.
  public var zones: [ZoneStatus]?
  /// Average power so far, W, counted as `[metrics] average_power` says.
  public var averagePower: Double?
  /// In a multisport workout: the current activity's number (from 1), timer time and distance.
  public var activityNumber: Int?
  public var activityTimer: Double?
  public var activityDistance: Double?
  /// The workout's target zone ranges, and whether the rider is outside each.
  public var targetZones: [TargetZone]?
  /// Normalized power so far, W, and IF against the configured FTP.
  public var normalizedPower: Double?
  public var intensityFactor: Double?
  /// Rows of the session's record that a damaged file made unreadable, found when this run of
  /// the service resumed it: left out of its figures and exports (the `damagedRecord` event).
  public var unreadable: UnreadableRows?
  /// The board's battery; nil when no gauge has reported ("no battery information").
  public var battery: BatteryStatus?
  /// The incident alarm while it is on (a fall while riding): the phone page's full-screen
  /// alert and its countdown.
  public var incident: IncidentStatus?

  public struct ZoneStatus: Sendable, Hashable, Codable {
    public var quantity: ZoneQuantity
    /// From 1; nil while no sample is current.
    public var zone: Int?
    public var zoneCount: Int
    public var seconds: [Double]
    /// In a multisport workout, the current activity's.
    public var activitySeconds: [Double]? = nil
  }

  /// The keys of `workoutctl status --json`, which scripts read (`sessionId` since the first
  /// release).
  enum CodingKeys: String, CodingKey {
    case state, activity, pausedBySystem, countdownRemaining, elapsed, timer, distance, speed, averageSpeed
    case maxSpeed, pace, heartRate, averageHeartRate, maxHeartRate, lap, points, lastPoint, ascent, descent
    case altitude, gps, gpsDetail, indicator, pressure, seaLevelPressure, seaLevelSource, humidity
    case zones, averagePower, normalizedPower, intensityFactor, targetZones
    case activityNumber, activityTimer, activityDistance, unreadable, battery, incident
    case sessionID = "sessionId"
  }
}

/// "1 h 02 min 05 s" style, for log lines; a time no `Int` holds as it is ("1e+300 s"), never a trap.
public func formatSeconds(_ seconds: Double) -> String {
  guard convertsToInt(seconds) else { return "\(seconds) s" }
  let total = Int(seconds.rounded())
  let h = total / 3600
  let m = (total % 3600) / 60
  let s = total % 60
  if h > 0 { return "\(h) h \(m < 10 ? "0" : "")\(m) min" }
  if m > 0 { return "\(m) min \(s < 10 ? "0" : "")\(s) s" }
  if seconds < 10 && seconds != seconds.rounded() {
    return "\((seconds * 10).rounded() / 10) s"
  }
  return "\(s) s"
}
