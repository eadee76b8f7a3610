import LinuxSupport
import Logging
import WorkoutCore

/// The one contract of every long-lived part of the service (a device, a server, the exporter,
/// the signal watch): `start` starts its threads and returns; `stop` asks them to end and
/// returns once each has ended. swift-service-lifecycle's `Service`, without async: the service
/// is threads, and a device's blocking calls stay off any shared pool.
protocol ServicePart: AnyObject {
  /// A short name for the log ("control socket", "gpsd localhost:2947").
  var name: String { get }
  func start() throws
  func stop()
}

/// The service's parts in the order they started; stopped in reverse, as swift-service-
/// lifecycle's `ServiceGroup` does: what was started last (the exporter, the devices) stops
/// first, and what the others lean on (the control socket, the signal watch) stops last.
final class ServiceGroup {
  private let log: Logger
  private var started: [any ServicePart] = []
  private var stopped = false

  init(log: Logger) {
    self.log = log
  }

  /// Starts `part`; a part that cannot start is not stopped later, and `failed` says why
  /// (each part's failure means something else: a web page off, exports at the next start).
  func start(_ part: any ServicePart, ifItFails failed: (any Error) -> Void) {
    do {
      try part.start()
      started.append(part)
      log(.info, "part started: \(part.name)")
    } catch {
      failed(error)
    }
  }

  func isRunning(_ part: any ServicePart) -> Bool {
    started.contains { $0 === part }
  }

  /// Stops every part, the last started first, and says which threads are left (none, unless a
  /// part could not end in time: then the next start completes its work).
  @discardableResult
  func stopAll() -> [String] {
    guard !stopped else { return DeviceThread.running }
    stopped = true
    while let part = started.popLast() {
      log(.info, "part stopping: \(part.name)")
      part.stop()
    }
    let left = DeviceThread.running
    if left.isEmpty {
      log(.info, "stopped: every part's threads have ended")
    } else {
      log(.notice, "stopped, with threads still running: \(left.joined(separator: ", "))")
    }
    return left
  }
}

/// A device behind the engine's seam, as a part: started with the sink it reports through.
final class DevicePart: ServicePart {
  let device: any DeviceSource
  private let sink: any InputSink

  init(_ device: any DeviceSource, sink: any InputSink) {
    self.device = device
    self.sink = sink
  }

  var name: String { device.name }
  func start() { device.start(sink: sink) }
  func stop() { device.stop() }
}

/// Waits for SIGTERM, SIGINT or SIGHUP (blocked in every thread by `main`) and hands it to the
/// engine loop, which stops the service.
final class SignalWatch: ServicePart {
  let name = "signal watch"
  private let queue: InputQueue<RuntimeMessage>
  private let stopping = StopSignal()
  private var thread: DeviceThread?

  init(queue: InputQueue<RuntimeMessage>) {
    self.queue = queue
  }

  func start() throws {
    thread = try DeviceThread.start(name: "signals") { [queue, stopping] in
      if let signal = TerminationSignals.wait(until: stopping) {
        queue.post(.terminate(signal: signal))
      }
    }
  }

  func stop() {
    stopping.stop()
    thread?.join()
    thread = nil
  }
}
