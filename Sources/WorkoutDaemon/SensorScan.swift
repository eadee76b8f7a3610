import BoardLinux
import LinuxSupport
import SensorProtocols
import WorkoutControl

/// `workoutctl sensors scan` on the Linux board: an LE discovery through the kernel's
/// management channel (`SensorScanner`), its devices as the control reply lists them.
struct SensorScanService: Sendable {
  /// The controller index ("hci0" is 0) from `[sensors] adapter`; nil: the lowest-numbered powered one.
  var adapter: UInt16?

  func scan(_ request: ControlRequest, stop: StopSignal) -> (ControlReply, ScanOutcome?) {
    let socket: ManagementSocket
    do {
      socket = try ManagementSocket.open()
    } catch {
      return (
        ControlReply(
          ok: false,
          message:
            "cannot open the Bluetooth management channel: \(error) (no Bluetooth in this kernel, or the service lacks AF_BLUETOOTH)"
        ), nil
      )
    }
    let seconds = request.scanSeconds
    do {
      let outcome = try SensorScanner(socket: socket, controller: adapter).run(seconds: seconds, signal: stop)
      return (
        ControlReply(ok: true, scan: Self.report(outcome, seconds: seconds, all: request.allDevices ?? false)), outcome
      )
    } catch {
      return (ControlReply(ok: false, message: "sensor scan: \(error)"), nil)
    }
  }

  static func report(_ outcome: ScanOutcome, seconds: Double, all: Bool) -> SensorScanReport {
    let devices = outcome.devices.filter { all || !$0.sensorServices.isEmpty }.map { device in
      SensorScanReport.Device(
        address: device.address.description, addressType: device.address.kind.rawValue, name: device.name,
        rssi: device.rssi, sensors: device.sensorServices.map(\.rawValue),
        services: device.services.map { $0.uuid16.map(hex4) ?? $0.description })
    }
    return SensorScanReport(
      controller: outcome.controller, seconds: seconds, sharedDiscovery: outcome.sharedDiscovery, devices: devices)
  }
}

/// "180D" for 0x180D.
private func hex4(_ value: UInt16) -> String {
  let digits = String(value, radix: 16, uppercase: true)
  return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
