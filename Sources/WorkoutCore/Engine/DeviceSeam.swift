/// Where devices deliver what they sense. The runtime stamps each input with the board clock
/// when it is posted and queues it for the engine; posting never blocks for long.
public protocol InputSink: Sendable {
  func post(_ input: EngineInput)
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
