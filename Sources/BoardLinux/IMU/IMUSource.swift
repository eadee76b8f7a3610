import LinuxSupport
import WorkoutCore

/// Which inertial sensor to read, and what makes a fall.
public struct IMUSettings: DeviceSettings, Hashable {
  /// The IIO device's driver name (`bmi160`, `lsm6dso`); nil: the first with an accelerometer
  /// in its buffer.
  public var device: String?
  public var incident = IncidentSettings()
  /// Retries while the device is absent, or its buffer not yet set up by root's
  /// `workoutd-imu@.service`.
  public var backoff = Backoff(initial: 2, maximum: 60)
  /// Where IIO devices and their nodes are (a test's tree).
  public var devices = "/sys/bus/iio/devices"
  public var nodes = "/dev"

  public init(device: String? = nil) { self.device = device }
}

/// The board's inertial sensor through the kernel's IIO subsystem (Documentation/ABI/testing/
/// sysfs-bus-iio): its buffer, set up by root, read on this thread as the kernel fills it
/// (woken every watermark's worth of records, a quarter of a second at 100 Hz). The samples
/// stay here: `MotionTracker` makes one `MotionSecond` a second and the falls of them, and only
/// those go to the engine. A missing device or an unset buffer is reported once as the IMU's
/// condition and retried with a doubling backoff.
public typealias IMUSource = BoardDevice<IMUSettings>

extension BoardDevice where Settings == IMUSettings {
  public convenience init(settings: IMUSettings) {
    self.init(
      settings: settings, name: "inertial sensor \(settings.device ?? "(the first found)")", device: .imu,
      session: IMUSession.self)
  }
}

/// One opening of the sensor: find it, then read until stopped or until it fails or goes.
struct IMUSession: DeviceSession {
  let settings: IMUSettings
  let signal: StopSignal
  /// Seconds: a record older than this when read is left out (a full buffer's backlog).
  static let stalest = 2.0

  func run(_ reporter: inout DeviceReporter) throws(DeviceProblem) {
    let device: IIOInertialDevice
    do {
      device = try IIOInertialDevice.find(named: settings.device, devices: settings.devices, nodes: settings.nodes)
    } catch {
      throw DeviceProblem(
        condition: .absent,
        description: "\(error) (workoutd-imu@.service sets the buffer up when udev sees the sensor)")
    }
    reporter.available(
      "\(device.name) at \(device.node), accelerometer\(device.rotationScale == nil ? "" : " and gyroscope")")
    let sink = reporter.sink
    var tracker = MotionTracker(settings: settings.incident)
    do {
      try IIOBufferReader(device: device).run(stop: signal) { samples in
        // A buffer that filled while nobody read it holds its first records, not its last (the
        // kernel's kfifo drops what does not fit): those of long ago are no part of now.
        let oldest = SystemClocks.monotonic() - Self.stalest
        for sample in samples where sample.time >= oldest {
          let output = tracker.add(sample)
          if let second = output.second { sink.post(.reading(.motion(second))) }
          if let fall = output.fall { sink.post(.fall(fall)) }
        }
      }
    } catch {
      throw DeviceProblem(condition: .lost, description: error.description)
    }
  }
}
