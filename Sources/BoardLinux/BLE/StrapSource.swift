import CBluetooth
import LinuxSupport
import SensorProtocols
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

public struct StrapSettings: DeviceSettings, Hashable {
  public var address: BluetoothAddress
  /// The device it is reported as.
  public var device = DeviceKind.heartRateStrap
  /// How long a connect may take before it is retried.
  public var connectTimeout = 20.0
  /// A connected sensor that sends nothing for this long is taken as gone, and reconnected.
  public var silenceLimit = 15.0
  public var backoff = Backoff(initial: 1, maximum: 30)
  /// Seconds before trying again when the controller is busy with another connection attempt
  /// (EBUSY: the kernel makes one LE connection at a time), instead of the backoff.
  public var busyRetry = 2.0
  /// Metres a wheel revolution covers (wheel speed from CSC or Cycling Power wheel data).
  public var wheelCircumference = StrapReadings.defaultWheelCircumference
  /// The controller to connect from ("hci0" is 0), the one scans use; nil: the lowest-numbered
  /// one that is up.
  public var adapter: UInt16?

  public init(address: BluetoothAddress) { self.address = address }
}

/// A BLE sensor (heart-rate strap, power meter, speed/cadence pod) on its own thread: connects
/// over an L2CAP LE socket, runs the GATT client, and posts what it measures. A sensor that
/// goes (out of range, battery out) is reported lost and reconnected after a doubling backoff;
/// it never holds up the engine or another sensor.
public typealias StrapSource = BoardDevice<StrapSettings>

extension BoardDevice where Settings == StrapSettings {
  /// `connect` opens the bearer: the real L2CAP socket unless a test passes its own.
  public convenience init(
    settings: StrapSettings,
    connect: @escaping @Sendable (StrapSettings, StopSignal) throws(SystemError) -> ATTBearer? = {
      settings, signal throws(SystemError) in
      // From the controller scans use, chosen again at each attempt (a dongle may come and go).
      let local = try LocalController.choose(settings.adapter)
      return try ATTBearer.connect(
        to: settings.address, from: local.address, timeout: settings.connectTimeout, signal: signal)
    }
  ) {
    self.init(settings: settings, name: "BLE sensor \(settings.address)", device: settings.device) {
      settings, signal, reporter throws(DeviceProblem) in
      try StrapSession(settings: settings, signal: signal, connect: connect).run(&reporter)
    }
  }
}

/// One connection to a BLE sensor on the runner's thread: connects, then carries out what its
/// `StrapLink` says (sends, reports, posts) and feeds it what the bearer receives and the time,
/// until the link ends (a `DeviceProblem`: the runner reports it and backs off) or a stop.
struct StrapSession {
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
    var link = StrapLink(settings: settings)
    var actions = link.start(now: SystemClocks.monotonic())
    while true {
      try perform(actions, on: bearer, &reporter)
      var descriptors = [pollfd(fd: bearer.descriptor, events: Int16(POLLIN), revents: 0)]
      do {
        if try signal.poll(&descriptors, until: link.deadline) { return }
      } catch {
        throw DeviceProblem(condition: .failing, description: "\(address): \(error)")
      }
      let woke = SystemClocks.monotonic()
      actions = []
      if descriptors[0].revents != 0 {
        do {
          while let pdu = try bearer.receive() { actions += link.received(pdu, now: woke) }
        } catch {
          throw DeviceProblem(condition: .lost, description: "\(address): link lost (\(error))")
        }
      }
      actions += link.timeElapsed(now: woke)
    }
  }

  private func perform(
    _ actions: [StrapLink.Action], on bearer: ATTBearer, _ reporter: inout DeviceReporter
  ) throws(DeviceProblem) {
    for action in actions {
      switch action {
      case .send(let pdu):
        do { try bearer.send(pdu) } catch {
          throw DeviceProblem(condition: .lost, description: "\(settings.address): \(error)")
        }
      case .post(let input): reporter.sink.post(input)
      case .available(let detail): reporter.available(detail)
      case .availableDetail(let detail): reporter.availableDetail(detail)
      case .failing(let detail): reporter.failing(detail)
      case .recovered(let detail): reporter.recovered(detail)
      case .end(let problem): throw problem
      }
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
