import CBluetooth
import LinuxSupport
import SensorProtocols
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

public struct StrapSettings: Sendable, Hashable {
  public var address: BluetoothAddress
  /// The device it is reported as (a heart-rate strap).
  public var device: DeviceKind
  /// How long a connect may take before it is retried.
  public var connectTimeout: Double
  /// A connected sensor that sends nothing for this long is taken as gone, and reconnected.
  public var silenceLimit: Double
  public var backoff: Backoff
  /// Seconds before trying again when the controller is busy with another connection attempt
  /// (EBUSY: the kernel makes one LE connection at a time), instead of the backoff.
  public var busyRetry: Double
  /// Metres a wheel revolution covers (wheel speed from CSC or Cycling Power wheel data).
  public var wheelCircumference: Double
  /// The controller to connect from ("hci0" is 0), the one scans use; nil: the lowest-numbered
  /// one that is up.
  public var adapter: UInt16?

  public init(
    address: BluetoothAddress, device: DeviceKind = .heartRateStrap, connectTimeout: Double = 20,
    silenceLimit: Double = 15, backoff: Backoff = Backoff(initial: 1, maximum: 30), busyRetry: Double = 2,
    wheelCircumference: Double = StrapReadings.defaultWheelCircumference, adapter: UInt16? = nil
  ) {
    self.wheelCircumference = wheelCircumference
    self.adapter = adapter
    self.address = address
    self.device = device
    self.connectTimeout = connectTimeout
    self.silenceLimit = silenceLimit
    self.backoff = backoff
    self.busyRetry = busyRetry
  }
}

/// A BLE sensor (heart-rate strap, power meter, speed/cadence pod) on its own thread: connects
/// over an L2CAP LE socket, runs the GATT client, and posts what it measures. A sensor that
/// goes (out of range, battery out) is reported lost and reconnected after a doubling backoff;
/// it never holds up the engine or another sensor.
public final class StrapSource: DeviceSource, Sendable {
  public let settings: StrapSettings
  private let runner: DeviceRunner

  /// `connect` opens the bearer: the real L2CAP socket unless a test passes its own.
  public init(
    settings: StrapSettings,
    connect: @escaping @Sendable (StrapSettings, StopSignal) throws(SystemError) -> ATTBearer? = {
      settings, signal throws(SystemError) in
      // From the controller scans use, chosen again at each attempt (a dongle may come and go).
      let local = try LocalController.choose(settings.adapter)
      return try ATTBearer.connect(
        to: settings.address, from: local.address, timeout: settings.connectTimeout, signal: signal)
    }
  ) {
    self.settings = settings
    runner = DeviceRunner(name: "BLE sensor \(settings.address)", device: settings.device, backoff: settings.backoff) {
      { reporter, signal throws(DeviceProblem) in
        try StrapSession(settings: settings, signal: signal, connect: connect).run(&reporter)
      }
    }
  }

  public var name: String { runner.name }
  public func start(sink: any InputSink) { runner.start(sink: sink) }
  public func stop() { runner.stop() }
}

struct StrapSession {
  static let malformedLimit = 5
  /// Wheel or crank pairs refused in a row (100 km/h, 250 rpm; see `RevolutionRejection`)
  /// before the sensor is failing: one is a counter reset (a battery change), a run of them a
  /// broken counter that gives no speed or cadence at all.
  static let refusedPairLimit = 5
  let settings: StrapSettings
  let signal: StopSignal
  let connect: @Sendable (StrapSettings, StopSignal) throws(SystemError) -> ATTBearer?

  func run(_ reporter: inout DeviceReporter) throws(DeviceProblem) {
    let address = settings.address
    let bearer: ATTBearer
    do {
      guard let connected = try connect(settings, signal) else { return }
      bearer = connected
    } catch {
      if error.errno == EBUSY {
        // The kernel makes one LE connection at a time on a controller (another sensor's is
        // under way): not the sensor's fault, and over soon, so tried again shortly.
        throw DeviceProblem(
          condition: .absent,
          description: "cannot connect to \(address) yet: the Bluetooth controller is busy connecting another device",
          retryAfter: settings.busyRetry)
      }
      // Not reachable: off, out of range, or connected to another device (straps take one).
      throw DeviceProblem(condition: .absent, description: "cannot connect to \(address): \(error)")
    }
    var client = GATTClient()
    var readings = StrapReadings(wheelCircumference: settings.wheelCircumference)
    var lastHeard = SystemClocks.monotonic()
    var pending = client.start(now: lastHeard)
    var ready = false
    var malformed = 0
    var refusedPairs = 0
    var refusing = false
    /// Battery level, %, as last read or notified (shown in the sensor's status).
    var battery: Int?
    /// The status detail without the battery level, once ready.
    var described = "\(address)"
    /// What status says of it while available: its link, characteristics and battery.
    func availableDetail() -> String { described + (battery.map { "; battery \($0) %" } ?? "") + ")" }
    while true {
      for output in pending {
        switch output {
        case .send(let pdu):
          do { try bearer.send(pdu) } catch {
            throw DeviceProblem(condition: .lost, description: "\(address): \(error)")
          }
        case .ready(let summary):
          ready = true
          let kinds = summary.subscribed.keys.map(\.characteristic.description).sorted().joined(separator: ", ")
          described = "\(address) (ATT MTU \(summary.mtu); \(kinds)"
          reporter.available(availableDetail())
        case .value(let id, let value, _):
          let now = SystemClocks.monotonic()
          do {
            let result = try readings.update(id, value, at: now)
            for reading in result.readings { reporter.sink.post(.reading(reading)) }
            if !result.rrIntervals.isEmpty { reporter.sink.post(.reading(.rrIntervals(result.rrIntervals))) }
            if let percent = result.batteryPercent, percent != battery {
              battery = percent
              // A later level (notified, or read after the status) shows in status as it changes.
              if ready { reporter.availableDetail(availableDetail()) }
            }
            malformed = 0
            if let refused = result.refused {
              refusedPairs += 1
              if refusedPairs >= Self.refusedPairLimit, !refusing {
                refusing = true
                reporter.failing(
                  "\(address): \(refusedPairs) wheel or crank pairs in a row refused (\(refused)): no speed or cadence from it; its other values are recorded"
                )
              }
            } else if result.pairUsed {
              refusedPairs = 0
              if refusing {
                refusing = false
                reporter.recovered(availableDetail())
              }
            }
          } catch {
            // One bad value (malformed, or a heart rate or power no rider makes) is dropped, not
            // the sensor: the next one is usually fine. A run of them is a sensor this decoder
            // cannot read, or a faulty one, and a fault.
            malformed += 1
            if malformed >= Self.malformedLimit {
              throw DeviceProblem(
                condition: .failing, description: "\(address): \(malformed) unusable values in a row (\(error))")
            }
          }
        case .refused, .ignored:
          break
        case .failed(let error):
          throw DeviceProblem(condition: .failing, description: "\(address): \(error)")
        }
      }
      pending = []
      let now = SystemClocks.monotonic()
      if ready && now - lastHeard >= settings.silenceLimit {
        throw DeviceProblem(
          condition: .lost, description: "\(address) sent nothing for \(Int(settings.silenceLimit)) s")
      }
      // The silence limit counts once measurements flow; before that a request is outstanding
      // and its ATT timeout bounds the wait (a deadline left in the past would make poll spin).
      var deadline: Double? = ready ? lastHeard + settings.silenceLimit : nil
      if let transaction = client.deadline { deadline = min(deadline ?? transaction, transaction) }
      var descriptors = [pollfd(fd: bearer.descriptor, events: Int16(POLLIN), revents: 0)]
      do {
        if try signal.poll(&descriptors, until: deadline) { return }
      } catch {
        throw DeviceProblem(condition: .failing, description: "\(address): \(error)")
      }
      let woke = SystemClocks.monotonic()
      if descriptors[0].revents != 0 {
        do {
          while let pdu = try bearer.receive() {
            lastHeard = woke
            pending += client.received(pdu, now: woke)
          }
        } catch {
          throw DeviceProblem(condition: .lost, description: "\(address): link lost (\(error))")
        }
      }
      pending += client.timeElapsed(now: woke)
    }
  }
}

/// A Bluetooth controller of this machine, as the kernel's HCI device list gives it.
public struct LocalController: Sendable, Hashable {
  public var index: Int
  public var address: BluetoothAddress

  /// hci`index`, which must be up; nil: the lowest-numbered controller that is up. Sensors are
  /// connected from it, as scans run on it: bound to "any", the kernel would route a connection
  /// to the newest controller that is up (a USB dongle rather than the board's own, or, in the
  /// board VM, a sensor's own emulated controller).
  public static func choose(_ index: UInt16?) throws(SystemError) -> LocalController {
    var candidates: [Int]
    if let index {
      candidates = [Int(index)]
    } else {
      var indexes = [Int32](repeating: 0, count: 16)
      let count = wkd_hci_devices(&indexes, Int32(indexes.count))
      guard count >= 0 else { throw SystemError.last("ioctl HCIGETDEVLIST", "the Bluetooth controllers") }
      candidates = indexes.prefix(Int(count)).map(Int.init).sorted()
    }
    for candidate in candidates {
      var bytes = [UInt8](repeating: 0, count: 6)
      let up = wkd_hci_device(Int32(candidate), &bytes)
      if up < 0 {
        if index != nil { throw SystemError.last("ioctl HCIGETDEVINFO", "hci\(candidate)") }
        continue
      }
      if up == 1, let address = BluetoothAddress(bytes: bytes, kind: .public) {
        return LocalController(index: candidate, address: address)
      }
      if index != nil { throw SystemError("connect", errno: ENETDOWN, context: "hci\(candidate) is down") }
    }
    throw SystemError("connect", errno: ENODEV, context: "no Bluetooth controller is up")
  }
}
