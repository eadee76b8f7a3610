import LinuxSupport
import SensorProtocols
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// An inertial sensor as the kernel's IIO subsystem gives it (Documentation/ABI/testing/
/// sysfs-bus-iio): its directory under /sys/bus/iio/devices, the channels its buffer was set
/// up with (`scan_elements/*_en`, `*_index`, `*_type`), their scales, and the character device
/// the buffer is read from. The buffer's set-up (a trigger, the channels, the length) is root's,
/// done before the service reads it.
struct IIOInertialDevice: Sendable {
  let directory: String
  let name: String
  /// `/dev/iio:deviceN`.
  let node: String
  let layout: IIOScanLayout
  /// m/s² per LSB of each accelerometer axis, and rad/s per LSB of each gyroscope axis.
  let accelerationScale: [Double]
  let rotationScale: [Double]?

  static let axes = ["x", "y", "z"]

  /// Reads the device at `directory`; its node is `/dev` (or `nodes`) and its directory's name.
  init(directory: String, nodes: String = "/dev") throws(IIODeviceError) {
    let device: IIOSysfsDevice
    do {
      device = try IIOSysfsDevice(directory)
    } catch {
      throw IIODeviceError("cannot open \(directory): \(error.reason)")
    }
    try self.init(device, nodes: nodes)
  }

  /// Reads `device`, its directory opened; its node is `/dev` (or `nodes`) and its directory's name.
  init(_ device: IIOSysfsDevice, nodes: String = "/dev") throws(IIODeviceError) {
    let directory = device.directory
    self.directory = directory
    let sysfs = device.attributes
    guard let name = device.name else { throw IIODeviceError("\(directory) has no name") }
    self.name = name
    node = nodes + "/" + (directory.split(separator: "/").last.map(String.init) ?? "")
    let elements: [String]
    do {
      elements = try device.scanChannels()
    } catch {
      throw IIODeviceError("\(name) has no buffer (\(directory)/scan_elements: \(error.reason))")
    }
    var channels: [IIOScanChannel] = []
    for channel in elements {
      guard case .value("1") = sysfs.attribute("scan_elements/in_\(channel)_en") else { continue }
      guard case .value(let indexText) = sysfs.attribute("scan_elements/in_\(channel)_index"),
        let index = Int(indexText), case .value(let typeText) = sysfs.attribute("scan_elements/in_\(channel)_type")
      else { throw IIODeviceError("\(name): channel \(channel) has no index or type") }
      do {
        channels.append(IIOScanChannel(name: channel, index: index, format: try IIOScanFormat(parsing: typeText)))
      } catch {
        throw IIODeviceError("\(name): \(error)")
      }
    }
    layout = IIOScanLayout(channels)
    let enabled = Set(channels.map(\.name))
    guard Self.axes.allSatisfy({ enabled.contains("accel_\($0)") }) else {
      throw IIODeviceError(
        "\(name): its buffer does not carry the accelerometer's x, y and z (set up: \(enabled.sorted()))")
    }
    func scales(_ kind: String) throws(IIODeviceError) -> [Double] {
      try Self.axes.map { axis throws(IIODeviceError) in
        for attribute in ["in_\(kind)_\(axis)_scale", "in_\(kind)_scale"] {
          if case .value(let text) = sysfs.attribute(attribute), let scale = Double(text), scale > 0 { return scale }
        }
        throw IIODeviceError("\(name): no scale for \(kind) \(axis)")
      }
    }
    accelerationScale = try scales("accel")
    rotationScale = Self.axes.allSatisfy { enabled.contains("anglvel_\($0)") } ? try scales("anglvel") : nil
  }

  /// The inertial devices under `devices` (/sys/bus/iio/devices): `named` (the driver's name,
  /// `name`), or the first with an accelerometer in its buffer.
  static func find(
    named: String?, devices: String = "/sys/bus/iio/devices", nodes: String = "/dev"
  )
    throws(IIODeviceError) -> IIOInertialDevice
  {
    let entries: [String]
    do {
      entries = try IIOSysfsDevice.kernelNames(in: devices, prefix: "iio:device")
    } catch {
      throw IIODeviceError("no IIO devices (\(devices): \(error.reason))")
    }
    var problems: [String] = []
    for entry in entries {
      let directory = devices + "/" + entry
      let device: IIOSysfsDevice
      do {
        device = try IIOSysfsDevice(directory)
      } catch {
        // One asked for by name is only one that can be opened and has that name.
        if named == nil { problems.append("cannot open \(directory): \(error.reason)") }
        continue
      }
      if let named, device.name != named { continue }
      do {
        return try IIOInertialDevice(device, nodes: nodes)
      } catch {
        problems.append(error.description)
      }
    }
    let wanted = named.map { "IIO device named \($0)" } ?? "IIO accelerometer"
    throw IIODeviceError(
      "no \(wanted) with its buffer set up" + (problems.isEmpty ? "" : ": " + problems.joined(separator: "; ")))
  }

  /// The sample a record holds: scaled, stamped with its `timestamp` channel (nanoseconds of
  /// the device's `current_timestamp_clock`, set to monotonic) or else `readAt`.
  func sample(_ record: [UInt8], readAt: Double) -> MotionSample? {
    func axes(_ kind: String, _ scale: [Double]) -> Vector3? {
      var values: [Double] = []
      for (axis, factor) in zip(Self.axes, scale) {
        guard let raw = layout.value("\(kind)_\(axis)", in: record) else { return nil }
        values.append(Double(raw) * factor)
      }
      return Vector3(values[0], values[1], values[2])
    }
    guard let acceleration = axes("accel", accelerationScale) else { return nil }
    let time = layout.value("timestamp", in: record).map { Double($0) / 1e9 } ?? readAt
    return MotionSample(time: time, acceleration: acceleration, rotation: rotationScale.flatMap { axes("anglvel", $0) })
  }
}

/// Why an IIO device cannot be read or set up, in words for the log and the status.
public struct IIODeviceError: Error, Sendable, Hashable, CustomStringConvertible {
  public var description: String
  init(_ description: String) { self.description = description }
}
