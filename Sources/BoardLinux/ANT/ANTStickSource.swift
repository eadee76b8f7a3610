import LinuxSupport
import SensorProtocols
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// A USB ANT stick and the ANT+ sensors it receives, on its own thread: the stick is the
/// `antStick` device, each sensor the device of its profile (as a BLE sensor in that role).
/// A stick that goes takes its sensors with it; it is opened again after a doubling backoff.
public typealias ANTStickSource = BoardDevice<ANTStickSettings>

extension BoardDevice where Settings == ANTStickSettings {
  /// `open` opens the stick's transport (nil or ENODEV: none is plugged in); `onPaired` is
  /// told of a sensor a wildcard channel found, once, so that it is kept.
  public convenience init(
    settings: ANTStickSettings,
    open: @escaping @Sendable (StopSignal) throws(SystemError) -> (any ANTTransport)?,
    onPaired: @escaping @Sendable (ANTSensor) -> Void
  ) {
    self.init(settings: settings, name: "ANT stick", device: .antStick) {
      let session = ANTStickSession(open: open, onPaired: onPaired)
      return { settings, signal, reporter throws(DeviceProblem) in
        try session.run(settings, signal: signal, &reporter)
      }
    }
  }
}

/// The stick's attempts on the runner's thread: opens the transport, then carries out what
/// its `ANTStickLink` says and feeds it the messages received and the time, until the link
/// ends, the transport fails (the stick is gone) or a stop. Each sensor channel has its own
/// reporter, kept from one attempt to the next so that its conditions are posted once.
final class ANTStickSession {
  static let noStick = "no ANT stick (0fcf:1008 or 0fcf:1009) is plugged in"

  let open: @Sendable (StopSignal) throws(SystemError) -> (any ANTTransport)?
  let onPaired: @Sendable (ANTSensor) -> Void
  private var sensors: [DeviceReporter] = []
  /// Each channel's last find reported to `onPaired`.
  private var paired: [ANTSensor?] = []

  init(
    open: @escaping @Sendable (StopSignal) throws(SystemError) -> (any ANTTransport)?,
    onPaired: @escaping @Sendable (ANTSensor) -> Void
  ) {
    self.open = open
    self.onPaired = onPaired
  }

  func run(_ settings: ANTStickSettings, signal: StopSignal, _ reporter: inout DeviceReporter) throws(DeviceProblem) {
    if sensors.isEmpty {
      sensors = settings.sensors.map { DeviceReporter(device: $0.profile.device, sink: reporter.sink) }
      paired = Array(repeating: nil, count: settings.sensors.count)
    }
    do {
      try attempt(settings, signal: signal, &reporter)
    } catch {
      // The sensors came through the stick: none is received now (lost if it was, else absent).
      for (index, sensor) in settings.sensors.enumerated() {
        let label = ANTSensorChannel.label(paired[index] ?? sensor)
        sensors[index].problem(DeviceProblem(condition: .absent, description: "\(label): \(error.description)"))
      }
      throw error
    }
  }

  private func attempt(
    _ settings: ANTStickSettings, signal: StopSignal, _ reporter: inout DeviceReporter
  ) throws(DeviceProblem) {
    let opened: (any ANTTransport)?
    do { opened = try open(signal) } catch {
      if error.errno == ENODEV { throw DeviceProblem(condition: .absent, description: Self.noStick) }
      throw DeviceProblem(condition: .failing, description: "cannot open the ANT stick: \(error)")
    }
    guard let transport = opened else {
      if signal.isStopRequested { return }
      throw DeviceProblem(condition: .absent, description: Self.noStick)
    }
    var link = ANTStickLink(settings: settings)
    try Self.drive(&link, over: transport, signal: signal) { actions throws(DeviceProblem) in
      try perform(actions, on: transport, &reporter)
    }
  }

  /// Runs `link` over `transport` until `end` (monotonic seconds), a stop, or the link's end
  /// (thrown): feeds it the messages `ANTFrameReader` finds and the time, and hands each
  /// batch of actions to `perform`, which carries out all but the sends' failures.
  static func drive(
    _ link: inout ANTStickLink, over transport: any ANTTransport, signal: StopSignal, until end: Double? = nil,
    perform: ([ANTStickLink.Action]) throws(DeviceProblem) -> Void
  ) throws(DeviceProblem) {
    var reader = ANTFrameReader()
    var actions = link.start(now: SystemClocks.monotonic())
    while true {
      try perform(actions)
      let deadline = [link.deadline, end].compactMap { $0 }.min()
      let bytes: [UInt8]
      do {
        guard let received = try transport.receive(until: deadline, signal: signal) else { return }
        bytes = received
      } catch {
        throw gone(error)
      }
      let now = SystemClocks.monotonic()
      if let end, now >= end { return }
      actions = []
      reader.append(bytes)
      while let output = reader.next() {
        switch output {
        case .message(let message): actions += link.received(message, now: now)
        case .skipped(let error): actions += link.skipped(error)
        }
      }
      actions += link.timeElapsed(now: now)
    }
  }

  private func perform(
    _ actions: [ANTStickLink.Action], on transport: any ANTTransport, _ reporter: inout DeviceReporter
  ) throws(DeviceProblem) {
    for action in actions {
      switch action {
      case .send(let bytes): try Self.send(bytes, to: transport)
      case .post(let input): reporter.sink.post(input)
      case .stick(let report): Self.apply(report, to: &reporter)
      case .sensor(let channel, let report): Self.apply(report, to: &sensors[channel])
      case .paired(let channel, let sensor):
        guard paired[channel] != sensor else { continue }
        paired[channel] = sensor
        onPaired(sensor)
      case .found:
        // Only a scan's link hears sensors it was not set up for.
        continue
      case .end(let problem): throw problem
      }
    }
  }

  static func send(_ bytes: [UInt8], to transport: any ANTTransport) throws(DeviceProblem) {
    do { try transport.send(bytes) } catch { throw gone(error) }
  }

  /// The transport failed: the stick was unplugged, or its USB device went away.
  private static func gone(_ error: SystemError) -> DeviceProblem {
    DeviceProblem(condition: .lost, description: "the ANT stick is gone (\(error))")
  }

  private static func apply(_ report: ANTStickLink.Report, to reporter: inout DeviceReporter) {
    switch report {
    case .available(let detail): reporter.available(detail)
    case .availableDetail(let detail): reporter.availableDetail(detail)
    case .failing(let detail): reporter.failing(detail)
    case .recovered(let detail): reporter.recovered(detail)
    case .problem(let problem): reporter.problem(problem)
    }
  }
}
