import BoardLinux
import LinuxSupport
import Logging
import SensorProtocols
import WorkoutControl
import WorkoutCore

/// The Linux board's USB ANT stick, for the sensor roster: its source for the ANT+ sensors
/// chosen, and `sensors scan`'s look at the ANT+ sensors in range. The network key is read from
/// `[ant] network_key_file` each time, so a key put right is used at the next change or scan.
struct ANTStickParts: Sendable {
  let keyFile: String
  let wheelCircumference: Double
  let log: Logger
  /// Opens the stick: the first known one plugged in (tests pass their own).
  var open: @Sendable (StopSignal) throws(SystemError) -> (any ANTTransport)? = { _ throws(SystemError) in
    try ANTUSBStick.open()
  }

  private func settings(_ sensors: [ANTSensor]) throws(PrivateFile.Problem) -> ANTStickSettings {
    var settings = ANTStickSettings(networkKey: try ANTNetworkKeyFile(path: keyFile).load(), sensors: sensors)
    settings.wheelCircumference = wheelCircumference
    return settings
  }

  /// The stick's source; without a usable key, a device that says why (status, the LED).
  func source(_ sensors: [ANTSensor], paired: @escaping @Sendable (ANTSensor) -> Void) -> any DeviceSource {
    do {
      return ANTStickSource(settings: try settings(sensors), open: open, onPaired: paired)
    } catch {
      log(.error, "the ANT+ sensors cannot be received: \(error)")
      return UnusableDevice(
        name: "ANT stick", status: DeviceStatus(device: .antStick, condition: .failing, detail: "\(error)"))
    }
  }

  /// The ANT+ sensors heard in `seconds`, as `sensors scan` lists them; the stick must not be
  /// in use (the roster stops its source meanwhile).
  func scan(seconds: Double, signal: StopSignal) -> Result<[SensorScanReport.Device], ANTScanError> {
    do {
      let settings = try settings([])
      guard let transport = try open(signal) else {
        return .failure(ANTScanError(description: "no ANT stick (0fcf:1008 or 0fcf:1009) is plugged in"))
      }
      let found = try ANTStickScan.run(settings: settings, transport: transport, seconds: seconds, signal: signal)
      return .success(found.map(Self.report))
    } catch let error as ANTScanError {
      return .failure(error)
    } catch {
      return .failure(ANTScanError(description: "\(error)"))
    }
  }

  /// As `sensors add` and `[sensors]` take it: with its profile, so no role need be given.
  static func report(_ sensor: ANTSensor) -> SensorScanReport.Device {
    let what =
      switch sensor.profile {
      case .heartRate: SensorService.heartRate.rawValue
      case .bicyclePower: SensorService.cyclingPower.rawValue
      case .speedCadence: SensorService.speedAndCadence.rawValue
      case .speed: "speed"
      case .cadence: "cadence"
      }
    return SensorScanReport.Device(
      address: sensor.textWithProfile, addressType: "ant+", name: nil, rssi: nil, sensors: [what],
      services: [])
  }
}

/// A device that cannot run, and says so once when started: its condition in status, events
/// and the LED, as any device's.
final class UnusableDevice: DeviceSource, Sendable {
  let name: String
  let status: DeviceStatus

  init(name: String, status: DeviceStatus) {
    self.name = name
    self.status = status
  }

  func start(sink: any InputSink) { sink.post(.device(status)) }
  func stop() {}
}
