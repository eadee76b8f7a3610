// imu-bench: what the inertial sensor at 100 Hz costs the service, per record and per second.
//
// The service's own IMUSource (its thread: IIOInertialDevice.find, IIOBufferReader, the
// MotionTracker, one MotionSecond a second and the falls posted) behind the hardware seam: a
// tree laid out as /sys/bus/iio/devices is for a BMI160 whose buffer root has set up (the
// gyroscope, the accelerometer and the timestamp enabled, ±2 g and ±2000 °/s: the driver's
// defaults, as Tests/BoardLinuxTests/IIOInertialDeviceTests.swift lays it out), with a FIFO in
// /dev/iio:device0's place. A thread of this process plays the kernel: every 250 ms (the
// set-up's watermark, 25 records at 100 Hz) it writes the 25 records whose times have passed,
// in one write, as the kernel wakes its reader once a watermark: 24 bytes each (3 × s16 gyro,
// 3 × s16 accel, 4 bytes of padding, the s64 timestamp in ns of CLOCK_MONOTONIC, 10 ms apart).
// They are a ride: the board upright on the bars (1 g), pedalling's sway, the road's buzz
// swelling and easing, a bump now and then, the sensor's noise; never near an impact.
// It runs for the seconds asked (default 30) in real time after a second and a half of set-up,
// then prints one line of key=value: the CPU of the sensor's thread only (its
// /proc/self/task/TID/schedstat, found by the name the service gives it, after its DeviceKind:
// "imu"), per record written and per second; its wake-ups a second (all its context switches,
// as strap-bench and ant-bench count them, and the voluntary ones alone); the seconds of motion
// and the falls posted in the window; and what the sink was handed in all.
//
// Usage: imu-bench [seconds]
import BoardLinux
import CLinuxShims
import Foundation
import LinuxSupport
import Synchronization
import WorkoutCore
import WorkoutTestSupport

#if canImport(Glibc)
  import Glibc
#endif

let seconds = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1]) ?? 30 : 30

/// The BMI160's scales at ±2 g and ±2000 °/s (in_accel_scale, in_anglvel_scale).
let accelScale = 0.000598
let rotationScale = 0.001065
/// Records a second, and records a wake-up (the set-up's `rate` and `watermark`).
let rate = 100
let watermark = 25

// MARK: - The sysfs tree and the node

func make(_ path: String, _ value: String) throws {
  let url = URL(fileURLWithPath: path)
  try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
  try (value + "\n").write(to: url, atomically: false, encoding: .utf8)
}

var template = Array((NSTemporaryDirectory() + "/imu-bench-XXXXXX").utf8CString)
guard let made = mkdtemp(&template) else {
  print("imu-bench: mkdtemp: \(String(cString: strerror(errno)))")
  exit(1)
}
let root = String(cString: made)
let devices = root + "/devices"
let nodes = root + "/dev"
let node = nodes + "/iio:device0"
do {
  let directory = devices + "/iio:device0"
  try make(directory + "/name", "bmi160")
  try make(directory + "/in_accel_scale", "\(accelScale)")
  try make(directory + "/in_anglvel_scale", "\(rotationScale)")
  let channels = ["anglvel_x", "anglvel_y", "anglvel_z", "accel_x", "accel_y", "accel_z"]
  for (index, channel) in (channels + ["timestamp"]).enumerated() {
    let elements = directory + "/scan_elements/in_\(channel)"
    try make(elements + "_en", "1")
    try make(elements + "_index", channel == "timestamp" ? "13" : "\(index)")
    try make(elements + "_type", channel == "timestamp" ? "le:s64/64>>0" : "le:s16/16>>0")
  }
  try FileManager.default.createDirectory(atPath: nodes, withIntermediateDirectories: true)
  guard mkfifo(node, 0o600) == 0 else { throw SystemError.last("mkfifo") }
} catch {
  print("imu-bench: the IIO tree could not be made in \(root): \(error)")
  exit(1)
}

// MARK: - The ride

/// The ride's records, one after another from `start` (monotonic ns), 10 ms apart.
struct Ride {
  let start: Int64
  var random = SeededRandom(seed: 61)
  var count = 0

  /// The next record: gyro, accel (raw LSBs), padding, the timestamp.
  mutating func next(into bytes: inout [UInt8]) {
    let t = Double(count) / Double(rate)
    let g = MotionSample.gravity
    // The road's roughness swells and eases over 20 s; its buzz is the frame's 23 and 41 Hz.
    let rough = 1 + 0.5 * sin(2 * .pi * t / 20)
    let buzz = rough * (0.12 * sin(2 * .pi * 23 * t) + 0.06 * sin(2 * .pi * 41 * t + 1))
    // A bump every 7 s: two records of a half-g jolt up.
    let bump = count % 700 < 2 ? 0.5 : 0
    // Pedalling at 90 rpm: the bars sway 1.5 times a second.
    let sway = sin(2 * .pi * 1.5 * t)
    let accel = [
      (0.04 * sway + 0.01 * random.gaussian()) * g,
      (0.09 + 0.01 * random.gaussian()) * g,  // tilted 5° forward
      (1 + buzz + bump + 0.01 * random.gaussian()) * g,
    ].map { raw($0 / accelScale) }
    let gyro = [
      0.15 * sway + 0.005 * random.gaussian(),
      0.02 * sin(2 * .pi * 23 * t) * rough + 0.005 * random.gaussian(),
      0.05 * sin(2 * .pi * t / 10) + 0.005 * random.gaussian(),  // the road's bends
    ].map { raw($0 / rotationScale) }
    for value in gyro + accel { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    bytes += [0, 0, 0, 0]
    withUnsafeBytes(of: (start + Int64(count) * 10_000_000).littleEndian) { bytes += $0 }
    count += 1
  }

  func raw(_ value: Double) -> Int16 { Int16(max(-32768, min(32767, value.rounded()))) }
}

// MARK: - The kernel's side

/// Writes the ride into the node as the kernel's buffer fills, a watermark's worth at a time,
/// until stopped: on a thread of its own (named `iio-kernel`, not the sensor's).
final class Kernel: @unchecked Sendable {
  let stopped = Atomic<Bool>(false)
  let written = Atomic<Int>(0)
  let failure = Mutex<String?>(nil)
  let finished = Mutex<Bool>(false)
  /// The writer's end, kept open after the writer stops until the sensor has: closed, it is the
  /// device gone.
  let descriptor = Atomic<Int32>(-1)

  func run() {
    shim_name_this_thread("iio-kernel")
    defer { finished.withLock { $0 = true } }
    // No reader yet: ENXIO until the sensor's thread has opened the node.
    var fd: Int32 = -1
    while fd < 0 {
      if stopped.load(ordering: .relaxed) { return }
      fd = open(node, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
      if fd < 0 {
        guard errno == ENXIO else {
          failure.withLock { $0 = "opening \(node): \(String(cString: strerror(errno)))" }
          return
        }
        usleep(10_000)
      }
    }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    descriptor.store(fd, ordering: .relaxed)
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let start = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    var ride = Ride(start: start)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(24 * watermark)
    var wake = start
    while !stopped.load(ordering: .relaxed) {
      wake += Int64(watermark) * 1_000_000_000 / Int64(rate)
      var at = timespec(tv_sec: Int(wake / 1_000_000_000), tv_nsec: Int(wake % 1_000_000_000))
      while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nil) == EINTR {}
      // The records whose times have passed: a watermark's worth.
      bytes.removeAll(keepingCapacity: true)
      while ride.start + Int64(ride.count) * 10_000_000 < wake { ride.next(into: &bytes) }
      let sent = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
      guard sent == bytes.count else {
        failure.withLock { $0 = "writing \(node): \(sent < 0 ? String(cString: strerror(errno)) : "short")" }
        return
      }
      written.add(bytes.count / 24, ordering: .relaxed)
    }
  }
}

// MARK: - The sink

/// Counts the seconds of motion and the falls, and their vibration, and hands all on to the
/// benches' sink.
final class MotionCount: InputSink {
  let counts = SensorBenchSink()
  let seconds = Atomic<Int>(0)
  let falls = Atomic<Int>(0)
  let vibration = Mutex<[Double]>([])

  func post(_ input: EngineInput) {
    switch input {
    case .reading(.motion(let second)):
      seconds.add(1, ordering: .relaxed)
      vibration.withLock { $0.append(second.vibration) }
    case .fall: falls.add(1, ordering: .relaxed)
    default: break
    }
    counts.post(input)
  }

  func post(_ input: EngineInput, at moment: Moment) { post(input) }
}

// MARK: - The run

signal(SIGPIPE, SIG_IGN)
var settings = IMUSettings(device: "bmi160")
(settings.devices, settings.nodes) = (devices, nodes)
let source = IMUSource(settings: settings)
let sink = MotionCount()
let kernel = Kernel()
let writer = Thread { kernel.run() }

source.start(sink: sink)
writer.start()
// Found, opened and the first records read: the first second and a half is the set-up, not
// counted.
usleep(1_500_000)
let before = threadUsage(named: ["imu"])
let writtenBefore = kernel.written.load(ordering: .relaxed)
let secondsBefore = sink.seconds.load(ordering: .relaxed)
let fallsBefore = sink.falls.load(ordering: .relaxed)
let vibrationBefore = sink.vibration.withLock { $0.count }
let started = SystemClocks.monotonic()
usleep(useconds_t(seconds * 1_000_000))
let after = threadUsage(named: ["imu"])
let elapsed = SystemClocks.monotonic() - started
let records = kernel.written.load(ordering: .relaxed) - writtenBefore
let motionSeconds = sink.seconds.load(ordering: .relaxed) - secondsBefore
let falls = sink.falls.load(ordering: .relaxed) - fallsBefore
let vibration = sink.vibration.withLock { Array($0[vibrationBefore...]) }
// The writer first, its end left open, so that the sensor does not see its device go.
kernel.stopped.store(true, ordering: .relaxed)
while !kernel.finished.withLock({ $0 }) { usleep(10_000) }
source.stop()
if kernel.descriptor.load(ordering: .relaxed) >= 0 { close(kernel.descriptor.load(ordering: .relaxed)) }
try? FileManager.default.removeItem(atPath: root)

let meanVibration = vibration.isEmpty ? 0 : vibration.reduce(0, +) / Double(vibration.count)
print(
  sink.counts.line(
    elapsed: elapsed, count: records, unit: "record", cpu: after.cpu - before.cpu,
    switches: after.switches - before.switches)
    + String(
      format: " voluntary_wakeups_per_s=%.2f motion_seconds=%d falls=%d vibration_m_s2=%.2f",
      Double(after.voluntary - before.voluntary) / elapsed, motionSeconds, falls, meanVibration))
if let failure = kernel.failure.withLock({ $0 }) {
  print("imu-bench: the kernel's side failed: \(failure)")
  exit(1)
}
if records == 0 || after.cpu == 0 || motionSeconds == 0 {
  print("imu-bench: no record reached the sensor's thread, or no thread named imu was found")
  exit(1)
}
