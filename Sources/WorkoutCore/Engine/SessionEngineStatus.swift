/// What `workoutctl status`, the phone page and the LED's caller see of the engine.
extension SessionEngine {
  public func status(at now: Moment) -> EngineStatus {
    guard let session else {
      var status = EngineStatus(
        state: .notStarted, pausedBySystem: false, elapsed: 0, timer: 0, distance: 0, points: 0, gps: gps,
        gpsDetail: watch.gpsDetail(gps, now: now.monotonic), indicator: indicator)
      status.battery = batteryStatus(at: now)
      status.incident = incidentStatus(at: now)
      return status
    }
    // Timer and elapsed as of now: the engine has no tick while paused or idle.
    var builder = session.builder
    builder.advance(to: now, in: session.state)
    let live = session.state == .running || session.state == .paused
    let speed = live ? builder.currentSpeed(at: now) : nil
    var pace: Double?
    if session.activity.showsPace { pace = GPSTrack.pace(forSpeed: speed) }
    var status = EngineStatus(
      state: session.state, sessionID: session.id, activity: session.currentActivity ?? session.activity,
      pausedBySystem: session.machine.pausedBySystem,
      countdownRemaining: session.countdownDeadline.map { max(0, $0 - now.monotonic) },
      elapsed: builder.totals.elapsed, timer: builder.totals.timer,
      distance: builder.totals.distance, speed: speed, averageSpeed: builder.totals.averageSpeed,
      maxSpeed: builder.totals.maxSpeed, pace: pace,
      heartRate: live ? builder.currentHeartRate(at: now) : nil,
      averageHeartRate: builder.totals.heartRate.mean, maxHeartRate: builder.totals.heartRate.maximum,
      lap: live ? builder.lapNumber : nil, points: builder.pointCount,
      lastPoint: lastPoint)
    // The speed shown while running is the one the next point records (a fix after the last
    // point): the maximum shown counts it already, so speed never reads above the maximum.
    if session.state == .running, let speed, speed > status.maxSpeed ?? -.infinity { status.maxSpeed = speed }
    status.ascent = builder.totals.ascent
    status.descent = builder.totals.descent
    status.altitude =
      builder.elevation.source(at: now.monotonic) == .barometer
      ? builder.elevation.barometricAltitude : builder.latest.fix?.altitude
    status.gps = gps
    status.gpsDetail = watch.gpsDetail(gps, now: now.monotonic)
    status.indicator = indicator
    if builder.elevation.source(at: now.monotonic) == .barometer {
      status.pressure = builder.elevation.pressure
      status.seaLevelPressure = builder.elevation.calibrator.seaLevelPressure
      status.seaLevelSource =
        switch builder.elevation.calibrator.source {
        case .standard: "standard"
        case .configured: "configured"
        case .gps: "gps"
        }
    }
    status.humidity = builder.currentHumidity(at: now)
    if live, var trackers = builder.zoneTrackers {
      status.zones = trackers.indices.map { index in
        trackers[index].count(to: builder.totals.timer)
        let tracker = trackers[index]
        var zone = EngineStatus.ZoneStatus(
          quantity: tracker.configuration.quantity, zone: tracker.zone.map { $0 + 1 },
          zoneCount: tracker.configuration.zones.count, seconds: tracker.workout.seconds)
        if session.activityNumber != nil { zone.activitySeconds = tracker.activity.seconds }
        return zone
      }
    }
    status.averagePower = builder.metrics?.averagePower(settings.powerAveraging)
    status.targetZones = session.targetZones
    if let number = session.activityNumber {
      status.activityNumber = number
      if let start = session.activityStart {
        status.activityTimer = builder.totals.timer - start.timer
        status.activityDistance = builder.totals.distance - start.distance
      }
    }
    status.normalizedPower = builder.metrics?.normalizedPower
    status.intensityFactor = settings.ftp.flatMap { builder.metrics?.intensityFactor(ftp: $0) }
    if let found = unreadableAtResume, found.sessionID == session.id { status.unreadable = found.rows }
    status.battery = batteryStatus(at: now)
    status.incident = incidentStatus(at: now)
    return status
  }
}
