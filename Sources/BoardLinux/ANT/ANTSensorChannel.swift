import SensorProtocols
import WorkoutCore

/// One sensor channel of an `ANTStickLink`: the sensor it was set up for and the one it found,
/// whether that one is sending, and its pages made into readings by the profile's aggregator.
struct ANTSensorChannel {
  let sensor: ANTSensor
  let wheelCircumference: Double
  /// The sensor the channel receives, once its ID is known (the configured one if not a
  /// wildcard).
  var found: ANTSensor?
  /// Receiving: data came and no loss since.
  var available = false
  var lastHeard = 0.0
  /// Request Message 0x51 was sent for a wildcard's find (sticks without extended messages).
  var idRequested = false
  private var aggregator: ANTReadingsAggregator
  private var battery: String?
  private var malformed = 0
  private var refusedPairs = 0
  private var failing = false

  init(sensor: ANTSensor, wheelCircumference: Double) {
    self.sensor = sensor
    self.wheelCircumference = wheelCircumference
    found = sensor.isWildcard ? nil : sensor
    aggregator = ANTReadingsAggregator(sensor.profile, wheelCircumference: wheelCircumference)
  }

  /// "ANT+ heart rate 4242", or "ANT+ heart rate (any)" until a wildcard's find is known.
  var label: String { Self.label(found ?? sensor) }

  static func label(_ sensor: ANTSensor) -> String {
    let name =
      switch sensor.profile {
      case .heartRate: "heart rate"
      case .bicyclePower: "power meter"
      case .speedCadence: "speed and cadence"
      case .speed: "speed"
      case .cadence: "cadence"
      }
    return sensor.isWildcard ? "ANT+ \(name) (any)" : "ANT+ \(name) \(sensor.deviceNumber)"
  }

  /// What status says of it while available.
  var detail: String { label + (battery.map { ", \($0)" } ?? "") }

  /// The sensor went (out of range, silent, closed): the next data starts afresh, as a
  /// sensor's counters may have restarted meanwhile.
  mutating func lose() {
    available = false
    aggregator = ANTReadingsAggregator(sensor.profile, wheelCircumference: wheelCircumference)
    malformed = 0
    refusedPairs = 0
    failing = false
  }

  /// The channel closed: a wildcard's next search may find another sensor.
  mutating func forgetFind() {
    guard sensor.isWildcard else { return }
    found = nil
    idRequested = false
  }

  /// One page received at `now`: its readings as posts, and the sensor's condition as it
  /// changes (battery, a run of unusable pages or refused pairs), for `channel`.
  mutating func readings(of payload: [UInt8], at now: Double, channel: Int) -> [ANTStickLink.Action] {
    var actions: [ANTStickLink.Action] = []
    let result: StrapReadings.Result
    do {
      result = try aggregator.update(payload, at: now)
    } catch {
      // One bad page is dropped, not the sensor; a run of them is a fault (as `StrapLink`).
      malformed += 1
      if malformed == ANTStickLink.malformedLimit, !failing {
        failing = true
        actions.append(.sensor(channel: channel, .failing("\(label): \(malformed) unusable pages in a row (\(error))")))
      }
      return actions
    }
    for reading in result.readings { actions.append(.post(.reading(reading))) }
    if !result.rrIntervals.isEmpty { actions.append(.post(.reading(.rrIntervals(result.rrIntervals)))) }
    if let text = Self.batteryText(result), text != battery {
      battery = text
      actions.append(.sensor(channel: channel, .availableDetail(detail)))
    }
    malformed = 0
    if let refused = result.refused {
      refusedPairs += 1
      if refusedPairs == ANTStickLink.refusedPairLimit, !failing {
        failing = true
        actions.append(
          .sensor(
            channel: channel,
            .failing(
              "\(label): \(refusedPairs) wheel or crank pairs in a row refused (\(refused)): no speed or cadence from it; its other values are recorded"
            )))
      }
      return actions
    }
    refusedPairs = 0
    if failing, result.pairUsed || !result.readings.isEmpty {
      failing = false
      actions.append(.sensor(channel: channel, .recovered(detail)))
    }
    return actions
  }

  /// "battery 80 %", or the status and voltage when the page has no percentage.
  private static func batteryText(_ result: StrapReadings.Result) -> String? {
    if let percent = result.batteryPercent ?? result.batteryStatus?.percent { return "battery \(percent) %" }
    guard let status = result.batteryStatus else { return nil }
    let level: String? =
      switch status.status {
      case .new: "new"
      case .good: "good"
      case .ok: "ok"
      case .low: "low"
      case .critical: "critical"
      case .invalid, nil: nil
      }
    let volts = status.voltage.map { "\(Double(Int(($0 * 100).rounded())) / 100) V" }
    let parts = [level, volts].compactMap { $0 }
    return parts.isEmpty ? nil : "battery " + parts.joined(separator: ", ")
  }
}

/// The readings aggregator of a channel's profile.
enum ANTReadingsAggregator {
  case heartRate(ANTHeartRateReadings)
  case power(ANTPowerReadings)
  case bike(ANTBikeSensorReadings)

  init(_ profile: ANTProfile, wheelCircumference: Double) {
    switch profile {
    case .heartRate: self = .heartRate(ANTHeartRateReadings())
    case .bicyclePower: self = .power(ANTPowerReadings(wheelCircumference: wheelCircumference))
    case .speedCadence:
      self = .bike(ANTBikeSensorReadings(type: .speedAndCadence, wheelCircumference: wheelCircumference))
    case .speed: self = .bike(ANTBikeSensorReadings(type: .speed, wheelCircumference: wheelCircumference))
    case .cadence: self = .bike(ANTBikeSensorReadings(type: .cadence, wheelCircumference: wheelCircumference))
    }
  }

  mutating func update(_ payload: [UInt8], at now: Double) throws(ANTDecodeError) -> StrapReadings.Result {
    switch self {
    case .heartRate(var readings):
      defer { self = .heartRate(readings) }
      return try readings.update(payload, at: now)
    case .power(var readings):
      defer { self = .power(readings) }
      return try readings.update(payload, at: now)
    case .bike(var readings):
      defer { self = .bike(readings) }
      return try readings.update(payload, at: now)
    }
  }
}
