/// What the devices tell the engine beside their readings: the GPS fix kept or lost, GPS time
/// for the board's clock, the stick copier's reports, and the device watch's notices.
extension SessionEngine {
  mutating func noteFixChanges(_ changes: [FixMonitorEvent], at now: Moment, into step: inout EngineStep) {
    for change in changes {
      switch change {
      case .lost(let lastFixAt, let detectedAt):
        record(
          SessionEvent(
            kind: .fixLost, moment: now, detail: "no GPS fix for \(formatSeconds(detectedAt - lastFixAt))",
            value: detectedAt - lastFixAt), into: &step)
        step.commands.append(.log(.warning, "GPS fix lost (none for \(formatSeconds(detectedAt - lastFixAt)))"))
      case .regained(_, let lostFor):
        record(
          SessionEvent(kind: .fixRegained, moment: now, detail: "after \(formatSeconds(lostFor))", value: lostFor),
          into: &step)
        step.commands.append(.log(.notice, "GPS fix regained after \(formatSeconds(lostFor))"))
      }
    }
  }

  /// Offers an accepted fix's time to the GPS clock; once trusted (or moved), the board's clock
  /// is corrected from this moment on and what the session already wrote with it is shifted.
  mutating func observeTime(of fix: GPSFix, at now: Moment, into step: inout EngineStep) -> Bool {
    let observation = gpsClock?.observe(fix, at: now, systemClockTrusted: systemClockTrusted)
    switch observation {
    case .established(let correction)?, .corrected(from: _, to: let correction)?:
      step.commands.append(.correctBoardClock(correction))
      return correctClock(correction, at: now, into: &step)
    default:
      return false
    }
  }

  /// GPS time is trusted: record how far off the wall clock was, and correct what the live
  /// session wrote with it in this run of the service.
  mutating func correctClock(
    _ correction: GPSClockCorrection, at now: Moment, into step: inout EngineStep
  ) -> Bool {
    let offset = correction.systemOffset
    step.commands.append(
      .log(
        .notice,
        "GPS time trusted: the board's wall clock was off by \(formatSeconds(abs(offset)))\(offset < 0 ? " (ahead)" : "")"
      ))
    var changed = false
    if var current = session, current.state.isUnfinished, abs(offset) >= 0.5 {
      if current.openedThisRun { current.openedAt.wall += offset }
      current.builder.shiftWallTimes(by: offset)
      current.lastMoment.wall += offset
      session = current
      step.commands.append(
        .correctWallTimes(
          sessionID: current.id, seconds: offset, firstPoint: current.epochFirstPoint,
          firstLap: current.epochFirstLap))
      if var point = lastPoint { point.moment.wall += offset; lastPoint = point }
      changed = true
    }
    record(
      SessionEvent(
        kind: .clockCorrected, moment: Moment(monotonic: now.monotonic, wall: now.wall + offset),
        detail: "GPS time \(correction.gpsTime)", value: offset), into: &step)
    return changed
  }

  /// The stick copier's report becomes the `usbStick` device's condition (`StickCopies`): the
  /// LED shows a copy under way between rides, a long chirp says a whole copy is unmounted
  /// (safe to pull), a failure is a fault.
  mutating func noteStickCopy(_ report: StickCopyReport, at now: Moment, into step: inout EngineStep) {
    let outcome = stickCopies.take(report)
    if watch.conditions[.usbStick]?.condition == outcome.status.condition, let line = outcome.logLine {
      step.commands.append(.log(line.level, line.text))
    }
    if outcome.safeToRemove { step.commands.append(.chirp(.long)) }
    note(watch.deviceReported(outcome.status, at: now.monotonic), at: now, into: &step)
  }

  /// Records what the device watch noticed: an event each, and its log line.
  mutating func note(_ notices: [DeviceWatch.Notice], at now: Moment, into step: inout EngineStep) {
    for notice in notices {
      record(SessionEvent(kind: notice.kind, moment: now, detail: notice.eventDetail, value: notice.value), into: &step)
      step.commands.append(.log(notice.level, notice.logLine))
    }
  }
}
