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
  /// Where the record holds each accelerometer axis, each gyroscope axis (when all three are
  /// there) and the timestamp: resolved from `layout` once, for the records, 100 a second, to
  /// be read without looking a channel up by its name.
  private let accelerationSlots: [Slot]
  private let rotationSlots: [Slot]?
  private let timestampSlot: Slot?

  static let axes = ["x", "y", "z"]

  /// A channel's offset in the record and its format.
  private struct Slot: Sendable {
    let offset: Int
    let format: IIOScanFormat

    init(_ placed: IIOScanLayout.Placed) {
      offset = placed.offset
      format = placed.channel.format
    }

    /// Its raw value in the record that begins at `start` of `bytes`.
    func value(in bytes: UnsafeRawBufferPointer, record start: Int) -> Int64 {
      format.value(in: bytes, at: start + offset)
    }
  }

  /// Reads `device`, its directory opened; its node is `/dev` (or `nodes`) and its directory's name.
  init(_ device: IIOSysfsDevice, nodes: String = "/dev") throws(IIODeviceError) {
    let directory = device.directory
    self.directory = directory
    let sysfs = device.attributes
    guard let name = device.name else { throw IIODeviceError("\(directory) has no name") }
    self.name = name
    node = nodes + "/" + (directory.split(separator: "/").last.map(String.init) ?? "")
    let elements = try device.scanChannels()
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
    let layout = IIOScanLayout(channels)
    self.layout = layout
    func slots(_ kind: String) -> [Slot]? {
      let placed = Self.axes.compactMap { layout.placed("\(kind)_\($0)") }
      return placed.count == Self.axes.count ? placed.map(Slot.init) : nil
    }
    guard let accelerationSlots = slots("accel") else {
      throw IIODeviceError(
        "\(name): its buffer does not carry the accelerometer's x, y and z (set up: \(channels.map(\.name).sorted()))")
    }
    self.accelerationSlots = accelerationSlots
    rotationSlots = slots("anglvel")
    timestampSlot = layout.placed("timestamp").map(Slot.init)
    func scales(_ kind: String) throws(IIODeviceError) -> [Double] {
      try Self.axes.map { axis throws(IIODeviceError) in
        for attribute in ["in_\(kind)_\(axis)_scale", "in_\(kind)_scale"] {
          if case .value(let text) = sysfs.attribute(attribute), let scale = Double(text), scale > 0 { return scale }
        }
        throw IIODeviceError("\(name): no scale for \(kind) \(axis)")
      }
    }
    accelerationScale = try scales("accel")
    rotationScale = rotationSlots == nil ? nil : try scales("anglvel")
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
  /// the device's `current_timestamp_clock`, set to monotonic) or else `readAt`; nil when the
  /// record is short.
  func sample(_ record: [UInt8], readAt: Double) -> MotionSample? {
    record.withUnsafeBytes { sample(in: $0, at: 0, readAt: readAt) }
  }

  /// The sample of the record that begins at `start` of `bytes` (a read's records one after
  /// another), read in place; nil when `bytes` holds less than a record from `start`.
  func sample(in bytes: UnsafeRawBufferPointer, at start: Int, readAt: Double) -> MotionSample? {
    guard start >= 0, bytes.count - start >= layout.recordSize else { return nil }
    func axes(_ slots: [Slot], _ scale: [Double]) -> Vector3 {
      Vector3(
        Double(slots[0].value(in: bytes, record: start)) * scale[0],
        Double(slots[1].value(in: bytes, record: start)) * scale[1],
        Double(slots[2].value(in: bytes, record: start)) * scale[2])
    }
    let acceleration = axes(accelerationSlots, accelerationScale)
    let time = timestampSlot.map { Double($0.value(in: bytes, record: start)) / 1e9 } ?? readAt
    var rotation: Vector3?
    if let rotationSlots, let rotationScale { rotation = axes(rotationSlots, rotationScale) }
    return MotionSample(time: time, acceleration: acceleration, rotation: rotation)
  }
}

/// Why an IIO device cannot be read or set up, in words for the log and the status.
public struct IIODeviceError: Error, Sendable, Hashable, CustomStringConvertible {
  public var description: String
  init(_ description: String) { self.description = description }
}
