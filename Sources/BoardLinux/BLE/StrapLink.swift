import SensorProtocols
import WorkoutCore

/// A connected BLE sensor's protocol: the GATT client (`GATTClient`), what its values mean
/// (`StrapReadings`) and when the link is over, as a value that takes PDUs and time and returns
/// actions. It does no I/O and reads no clock: `StrapSession` owns the L2CAP bearer and the
/// thread, sends what it is told, reports and posts, and ends the link when told.
struct StrapLink {
  enum Action: Sendable, Hashable {
    /// An ATT PDU for the sensor.
    case send([UInt8])
    /// What it measured, for the engine.
    case post(EngineInput)
    /// Its condition (`DeviceReporter`'s calls of the same names).
    case available(String)
    case availableDetail(String)
    case failing(String)
    case recovered(String)
    /// The link is over: report it and connect again after the backoff.
    case end(DeviceProblem)
  }

  static let malformedLimit = 5
  /// Wheel or crank pairs refused in a row (100 km/h, 250 rpm; see `RevolutionRejection`)
  /// before the sensor is failing: one is a counter reset (a battery change), a run of them a
  /// broken counter that gives no speed or cadence at all.
  static let refusedPairLimit = 5

  let settings: StrapSettings
  private var client = GATTClient()
  private var readings: StrapReadings
  /// When a PDU last came (the silence limit counts from it once measurements flow).
  private var lastHeard = 0.0
  private var ready = false
  private var malformed = 0
  private var refusedPairs = 0
  private var refusing = false
  /// Battery level, %, as last read or notified (shown in the sensor's status).
  private var battery: Int?
  /// The status detail without the battery level, once ready.
  private var described: String

  init(settings: StrapSettings) {
    self.settings = settings
    readings = StrapReadings(wheelCircumference: settings.wheelCircumference)
    described = "\(settings.address)"
  }

  /// The link is up at `now`: the client's first requests.
  mutating func start(now: Double) -> [Action] {
    lastHeard = now
    return perform(client.start(now: now), now: now)
  }

  /// A PDU from the sensor, received at `now`.
  mutating func received(_ pdu: [UInt8], now: Double) -> [Action] {
    lastHeard = now
    return perform(client.received(pdu, now: now), now: now)
  }

  /// Time has passed (the wait for `deadline` ended, or PDUs came): a request's timeout, or the
  /// silence of a sensor that measured and stopped.
  mutating func timeElapsed(now: Double) -> [Action] {
    var actions = perform(client.timeElapsed(now: now), now: now)
    if ready, now >= lastHeard + settings.silenceLimit {
      actions.append(
        .end(
          DeviceProblem(
            condition: .lost, description: "\(settings.address) sent nothing for \(Int(settings.silenceLimit)) s")))
    }
    return actions
  }

  /// When `timeElapsed` must be called if no PDU comes: the silence limit once measurements
  /// flow (before that a request is outstanding and its ATT timeout bounds the wait).
  var deadline: Double? {
    let silence = ready ? lastHeard + settings.silenceLimit : nil
    guard let transaction = client.deadline else { return silence }
    return min(silence ?? transaction, transaction)
  }

  /// What status says of it while available: its link, characteristics and battery.
  private var availableDetail: String { described + (battery.map { "; battery \($0) %" } ?? "") + ")" }

  private mutating func perform(_ outputs: [GATTClient.Output], now: Double) -> [Action] {
    var actions: [Action] = []
    let address = settings.address
    for output in outputs {
      switch output {
      case .send(let pdu):
        actions.append(.send(pdu))
      case .ready(let summary):
        ready = true
        let kinds = summary.subscribed.keys.map(\.characteristic.description).sorted().joined(separator: ", ")
        described = "\(address) (ATT MTU \(summary.mtu); \(kinds)"
        actions.append(.available(availableDetail))
      case .value(let id, let value, _):
        do {
          let result = try readings.update(id, value, at: now)
          for reading in result.readings { actions.append(.post(.reading(reading))) }
          if !result.rrIntervals.isEmpty { actions.append(.post(.reading(.rrIntervals(result.rrIntervals)))) }
          if let percent = result.batteryPercent, percent != battery {
            battery = percent
            // A later level (notified, or read after the status) shows in status as it changes.
            if ready { actions.append(.availableDetail(availableDetail)) }
          }
          malformed = 0
          if let refused = result.refused {
            refusedPairs += 1
            if refusedPairs >= Self.refusedPairLimit, !refusing {
              refusing = true
              actions.append(
                .failing(
                  "\(address): \(refusedPairs) wheel or crank pairs in a row refused (\(refused)): no speed or cadence from it; its other values are recorded"
                ))
            }
          } else if result.pairUsed {
            refusedPairs = 0
            if refusing {
              refusing = false
              actions.append(.recovered(availableDetail))
            }
          }
        } catch {
          // One bad value (malformed, or a heart rate or power no rider makes) is dropped, not
          // the sensor: the next one is usually fine. A run of them is a sensor this decoder
          // cannot read, or a faulty one, and a fault.
          malformed += 1
          if malformed >= Self.malformedLimit {
            actions.append(
              .end(
                DeviceProblem(
                  condition: .failing, description: "\(address): \(malformed) unusable values in a row (\(error))")))
            return actions
          }
        }
      case .refused, .ignored:
        break
      case .failed(let error):
        actions.append(.end(DeviceProblem(condition: .failing, description: "\(address): \(error)")))
        return actions
      }
    }
    return actions
  }
}
