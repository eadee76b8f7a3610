import CLinuxShims

#if canImport(Glibc)
  import Glibc
#endif

/// Delivery of termination signals to one waiting thread (`sigwait(3)`), instead of
/// asynchronous handlers: the service reacts to SIGTERM in ordinary code.
public enum TerminationSignals {
  public static let handled: [Int32] = [SIGTERM, SIGINT, SIGHUP]

  /// Blocks the signals in the calling thread and every thread it starts afterwards. Call
  /// first thing in `main`, before any thread exists.
  public static func block() {
    var set = signalSet()
    pthread_sigmask(SIG_BLOCK, &set, nil)
    // A write to a control client that went away must be an error, not a death.
    signal(SIGPIPE, SIG_IGN)
  }

  /// Waits for the next blocked termination signal and returns its number.
  public static func wait() -> Int32 {
    var set = signalSet()
    var received: Int32 = 0
    while sigwait(&set, &received) != 0 {}
    return received
  }

  /// Waits for the next blocked termination signal, or for `stop`; nil when stopped first.
  /// A signalfd(2) is polled beside the stop request, so the waiting thread can be joined.
  /// Where the kernel refuses a signalfd, it waits in `sigtimedwait(2)`, looking at `stop`
  /// every `StopSignal.fallbackInterval`.
  public static func wait(until stop: StopSignal) -> Int32? {
    var set = signalSet()
    let opened = shim_signal_open(&set)
    let signals = opened >= 0 ? FileDescriptor(owning: opened) : nil
    defer { try? signals?.close() }
    while !stop.isStopRequested {
      guard let signals else {
        var interval = timespec(tv_sec: 0, tv_nsec: Int(StopSignal.fallbackInterval * 1e9))
        let received = sigtimedwait(&set, nil, &interval)
        if received > 0 { return received }
        continue
      }
      var watched = [pollfd(fd: signals.rawValue, events: Int16(POLLIN), revents: 0)]
      let stopped: Bool
      do {
        stopped = try stop.poll(&watched, until: nil)
      } catch {
        stopped = stop.wait(seconds: StopSignal.fallbackInterval)
      }
      if stopped { return nil }
      let received = shim_signal_take(signals.rawValue)
      if received > 0 { return received }
    }
    return nil
  }

  public static func name(_ signal: Int32) -> String {
    switch signal {
    case SIGTERM: "SIGTERM"
    case SIGINT: "SIGINT"
    case SIGHUP: "SIGHUP"
    default: "signal \(signal)"
    }
  }

  private static func signalSet() -> sigset_t {
    var set = sigset_t()
    sigemptyset(&set)
    for signal in handled { sigaddset(&set, signal) }
    return set
  }
}
