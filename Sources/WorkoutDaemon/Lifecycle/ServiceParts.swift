import LinuxSupport
import WorkoutCore

/// The control socket as a part: its accept thread, and its clients' threads waited for.
extension ControlServer: ServicePart {
  var name: String { "control socket" }
}

/// The phone page's server as a part.
extension WebServer: ServicePart {
  var name: String { "web server" }
}

/// The chosen BLE sensors, started and stopped together with the devices.
extension SensorRoster: DeviceSource {
  var name: String { "BLE sensors" }
}

/// The exporter as a part: stopping it lets a pass under way finish, for `stopWaiting`
/// seconds at the most.
final class ExporterPart: ServicePart {
  let name = "exporter"
  let exporter: SessionExporter
  private let firstPass: Bool
  var stopWaiting = 10.0
  /// Whether the last pass ended before the stop stopped waiting.
  private(set) var finished = true

  init(_ exporter: SessionExporter, firstPass: Bool) {
    self.exporter = exporter
    self.firstPass = firstPass
  }

  func start() throws {
    try exporter.start(firstPass: firstPass)
  }

  func stop() {
    finished = exporter.finish(waiting: stopWaiting)
  }
}
