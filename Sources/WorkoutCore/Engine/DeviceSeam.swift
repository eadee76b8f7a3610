/// Where devices deliver what they sense. The runtime stamps each input with the board clock
/// when it is posted and queues it for the engine; posting never blocks for long.
public protocol InputSink: Sendable {
  func post(_ input: EngineInput)
  /// Posts an input that happened at `moment` on the board clock (a device that knows when it
  /// sensed something, like the simulated world, even if it posts late on a busy host).
  func post(_ input: EngineInput, at moment: Moment)
}

/// One device behind the seam: a real one (gpsd, a GPIO chip, an I2C barometer) or the
/// simulated board's stand-in. It runs on its own thread and reports through the sink: readings
/// and button requests as they come, and its own condition as `DeviceStatus` (absent, lost,
/// available again), never by crashing the service.
public protocol DeviceSource: AnyObject, Sendable {
  /// A short name for logs ("gpsd localhost:2947").
  var name: String { get }
  /// Starts the device's thread; returns at once.
  func start(sink: any InputSink)
  /// Stops the thread and releases the device; returns when it has stopped.
  func stop()
}

/// A device the engine loop reads itself, when it wakes anyway: just before each tick while a
/// session records, and every few seconds otherwise. Reading it costs no wake-up of its own
/// (its thread, if it has one, only sets the device up and then sleeps).
public protocol EngineReadDevice: DeviceSource {
  /// Takes what has arrived, without blocking: `deliver` gets each input in order, with how
  /// many seconds before this call it arrived.
  func read(_ deliver: (EngineInput, _ age: Double) -> Void)
}

/// The board's clock: the time base every input is stamped with. The real board's is the
/// kernel's; the simulated board's runs at a chosen speed through a recorded world.
public protocol BoardClock: Sendable {
  /// Names the monotonic timeline (the boot id, or the simulated world's id).
  var epoch: String { get }
  func now() -> Moment
  /// Whether the wall clock can be believed (synchronised, or the simulated ride's own time).
  var wallTrusted: Bool { get }
  /// The host's CLOCK_MONOTONIC time at which the board's monotonic clock reaches `monotonic`,
  /// for waiting (a simulated board at 60× speed reaches a board second in 1/60 s).
  func hostDeadline(forBoardTime monotonic: Double) -> Double
}

extension InputSink {
  /// A sink that stamps inputs itself (a test's collector) ignores the device's moment.
  public func post(_ input: EngineInput, at moment: Moment) {
    post(input)
  }
}
