import Foundation
import LinuxSupport

#if canImport(Glibc)
  import Glibc
#endif

/// Sets up an inertial device's buffer for the service to read, as root does it once a device
/// appears (sysfs-bus-iio, sysfs-bus-iio-trigger and Documentation/iio/iio_configfs.rst): a
/// trigger at the sampling rate (the driver's own if it has one, its data-ready interrupt;
/// else an hrtimer trigger made in configfs), the accelerometer, the gyroscope and the
/// timestamp in the buffer, timestamps on CLOCK_MONOTONIC (the service's clock), a buffer of
/// `length` records that wakes its reader every `watermark`, and the buffer on.
public struct IIOBufferSetup: Sendable {
  public var devices = "/sys/bus/iio/devices"
  public var configfs = "/sys/kernel/config"
  /// Samples a second.
  public var rate = 100
  /// Records the buffer holds: 2.5 s at 100 Hz, room for a reader held up.
  public var length = 256
  /// Records that wake the reader: a quarter of a second's at 100 Hz.
  public var watermark = 25

  public init() {}

  /// The driver's name of IIO device `kernelName` (`iio:device0`), nil when it has none.
  public func driverName(of kernelName: String) -> String? {
    (try? IIOSysfsDevice(devices + "/" + kernelName))?.name
  }

  /// What was done, a line a step, for the unit's journal.
  public func run(device kernelName: String) throws(IIODeviceError) -> [String] {
    let directory = devices + "/" + kernelName
    var done: [String] = []
    let device: IIOSysfsDevice
    do {
      device = try IIOSysfsDevice(directory)
    } catch {
      throw IIODeviceError("no IIO device \(kernelName) (\(directory): \(error.reason))")
    }
    guard let name = device.name else { throw IIODeviceError("\(kernelName) has no name") }
    let sysfs = device.attributes
    func write(_ attribute: String, _ value: String) throws(IIODeviceError) {
      do {
        try Self.put(value, at: directory + "/" + attribute)
      } catch {
        throw IIODeviceError("\(name): writing \(value) to \(attribute): \(error.reason)")
      }
    }
    // The buffer off while it is changed: a running buffer refuses changes (EBUSY).
    if case .value("1") = sysfs.attribute("buffer/enable") { try write("buffer/enable", "0") }
    for kind in ["accel", "anglvel"] {
      for attribute in ["in_\(kind)_sampling_frequency", "sampling_frequency"] {
        guard case .value = sysfs.attribute(attribute) else { continue }
        try write(attribute, "\(rate)")
        done.append("\(attribute) \(rate)")
        break
      }
    }
    let trigger = try self.trigger(for: kernelName, name: name, sysfs: sysfs)
    if sysfs.attribute("trigger/current_trigger") != .value(trigger) { try write("trigger/current_trigger", trigger) }
    done.append("trigger \(trigger)")
    let channels = try device.scanChannels()
    var enabled: [String] = []
    for channel in channels {
      let wanted = channel.hasPrefix("accel_") || channel.hasPrefix("anglvel_") || channel == "timestamp"
      try write("scan_elements/in_\(channel)_en", wanted ? "1" : "0")
      if wanted { enabled.append(channel) }
    }
    guard ["accel_x", "accel_y", "accel_z"].allSatisfy(enabled.contains) else {
      throw IIODeviceError("\(name) has no accelerometer x, y and z in its buffer (channels: \(channels))")
    }
    done.append("channels \(enabled.joined(separator: " "))")
    if case .value = sysfs.attribute("current_timestamp_clock") { try write("current_timestamp_clock", "monotonic") }
    try write("buffer/length", "\(length)")
    if case .value = sysfs.attribute("buffer/watermark") { try write("buffer/watermark", "\(watermark)") }
    try write("buffer/enable", "1")
    done.append("buffer of \(length), woken every \(watermark), on")
    return done
  }

  /// The trigger the buffer runs on: the one the driver set (its data-ready interrupt), else an
  /// hrtimer trigger of our own, `workoutd-<kernel name>`, made in configfs at `rate`.
  private func trigger(for kernelName: String, name: String, sysfs: SysfsDirectory) throws(IIODeviceError) -> String {
    let ours = "workoutd-" + kernelName.replacingOccurrences(of: ":", with: "-")
    if case .value(let current) = sysfs.attribute("trigger/current_trigger"), !current.isEmpty, current != ours {
      return current
    }
    let made = configfs + "/iio/triggers/hrtimer/" + ours
    if mkdir(made, 0o755) != 0, errno != EEXIST {
      let reason = String(cString: strerror(errno))
      throw IIODeviceError(
        "\(name) has no trigger of its own, and an hrtimer trigger cannot be made at \(made): \(reason) (is iio-trig-hrtimer loaded and configfs mounted?)"
      )
    }
    guard let appeared = IIOSysfsDevice.first(named: ours, in: devices, prefix: "trigger") else {
      throw IIODeviceError("the hrtimer trigger \(ours) was made but is not among the IIO devices")
    }
    do {
      try Self.put("\(rate)", at: appeared.directory + "/sampling_frequency")
    } catch {
      throw IIODeviceError("the trigger \(ours): setting \(rate) Hz: \(error.reason)")
    }
    return ours
  }

  /// Writes a sysfs attribute: the value and a newline, in one write (sysfs takes a store
  /// whole, from the start of the file).
  static func put(_ value: String, at path: String) throws(SystemError) {
    let file = try FileDescriptor.open(path, O_WRONLY | O_TRUNC)
    defer { try? file.close() }
    let bytes = Array((value + "\n").utf8)
    let written = bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try file.writeAll(raw) } }
    try written.get()
  }
}
