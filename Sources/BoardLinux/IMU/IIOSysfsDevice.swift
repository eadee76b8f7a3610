import LinuxSupport

/// An IIO device's directory under /sys/bus/iio/devices (Documentation/ABI/testing/
/// sysfs-bus-iio), opened, and its `name`: the driver's name for an `iio:deviceN`, the
/// trigger's for a `triggerN`. Read the one way for the service and for its buffer's set-up.
struct IIOSysfsDevice {
  /// `/sys/bus/iio/devices/<kernel name>`.
  let directory: String
  let attributes: SysfsDirectory
  /// Its `name` attribute, nil when it has none.
  let name: String?

  /// Opens `directory` and reads its name; throws what opening it gave (ENOENT: not there).
  init(_ directory: String) throws(SystemError) {
    self.directory = directory
    attributes = try SysfsDirectory(directory)
    if case .value(let name) = attributes.attribute("name") { self.name = name } else { name = nil }
  }

  /// The kernel names under `devices` that begin `prefix` (`iio:device`, `trigger`), in order.
  static func kernelNames(in devices: String, prefix: String) throws(SystemError) -> [String] {
    try directoryEntries(devices).filter { $0.hasPrefix(prefix) }.sorted()
  }

  /// The first device under `devices` whose kernel name begins `prefix` and whose name is
  /// `name`; nil when there is none (or `devices` cannot be read).
  static func first(named name: String, in devices: String, prefix: String) -> IIOSysfsDevice? {
    for entry in (try? kernelNames(in: devices, prefix: prefix)) ?? [] {
      if let device = try? IIOSysfsDevice(devices + "/" + entry), device.name == name { return device }
    }
    return nil
  }

  /// The channels its buffer can carry, each a `scan_elements/in_<channel>_en`, in order; a
  /// device with no buffer (no `scan_elements`) is an error that names it.
  func scanChannels() throws(IIODeviceError) -> [String] {
    do {
      return try directoryEntries(directory + "/scan_elements")
        .filter { $0.hasPrefix("in_") && $0.hasSuffix("_en") }
        .map { String($0.dropFirst(3).dropLast(3)) }
        .sorted()
    } catch {
      throw IIODeviceError("\(name ?? directory) has no buffer (\(directory)/scan_elements: \(error.reason))")
    }
  }
}
