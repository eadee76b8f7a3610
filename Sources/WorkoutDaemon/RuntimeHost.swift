import LinuxSupport

/// The host's side of the engine loop: its CLOCK_MONOTONIC and the wait for the next message.
/// The service's is the system's; a test's is a manual clock that moves to each deadline the
/// loop asks for, so the real `ServiceRuntime` runs through minutes of a ride with no sleep
/// (as NIO's `EmbeddedEventLoop` runs a channel's real handlers).
protocol RuntimeHost {
  /// The host's monotonic time, seconds.
  func monotonic() -> Double
  /// Waits until `queue` has a message or `deadline` (host time; nil: no deadline) comes.
  /// False when the loop should return instead (a manual host at the end of its run).
  func wait(for queue: InputQueue<RuntimeMessage>, until deadline: Double?) -> Bool
}

/// The system's clock and a blocking wait on the queue.
struct SystemHost: RuntimeHost {
  func monotonic() -> Double { SystemClocks.monotonic() }

  func wait(for queue: InputQueue<RuntimeMessage>, until deadline: Double?) -> Bool {
    _ = queue.wait(until: deadline)
    return true
  }
}
