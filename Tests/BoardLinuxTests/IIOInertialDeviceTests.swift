import Foundation
import LinuxSupport
import Testing
import WorkoutCore

@testable import BoardLinux

/// `IIOInertialDevice` and `IIOBufferReader` on a tree laid out as /sys/bus/iio/devices is for
/// a BMI160 whose buffer was set up (gyroscope, accelerometer and timestamp enabled), with a
/// FIFO in the character device's place: the hardware seam. The kernel's own driver behind it
/// is the board VM's to run.
final class IIOInertialDeviceTests {
  let root: String
  var devices: String { root + "/devices" }
  var nodes: String { root + "/dev" }
  /// The BMI160's scales at ±2 g and ±2000 °/s (in_accel_scale, in_anglvel_scale).
  static let accelScale = 0.000598
  static let rotationScale = 0.001065

  init() throws {
    var template = Array((NSTemporaryDirectory() + "/iio-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
    root = String(cString: made)
    try FileManager.default.createDirectory(atPath: nodes, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(atPath: root) }

  func write(_ path: String, _ value: String) throws {
    let url = URL(fileURLWithPath: path)
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try (value + "\n").write(to: url, atomically: false, encoding: .utf8)
  }

  /// A device `iio:deviceN` named `name`; `enabled` are the channels its buffer carries.
  func device(_ number: Int, name: String, enabled: Set<String>, gyro: Bool = true) throws {
    let directory = devices + "/iio:device\(number)"
    try write(directory + "/name", name)
    try write(directory + "/in_accel_scale", "\(Self.accelScale)")
    try write(directory + "/in_anglvel_scale", "\(Self.rotationScale)")
    var channels = ["accel_x", "accel_y", "accel_z"]
    if gyro { channels = ["anglvel_x", "anglvel_y", "anglvel_z"] + channels }
    for (index, channel) in (channels + ["timestamp"]).enumerated() {
      let elements = directory + "/scan_elements/in_\(channel)"
      try write(elements + "_en", enabled.contains(channel) ? "1" : "0")
      try write(elements + "_index", channel == "timestamp" ? "13" : "\(gyro ? index : index + 3)")
      try write(elements + "_type", channel == "timestamp" ? "le:s64/64>>0" : "le:s16/16>>0")
    }
    guard mkfifo(nodes + "/iio:device\(number)", 0o600) == 0 else { throw SystemError.last("mkfifo") }
  }

  static let everything: Set<String> = [
    "anglvel_x", "anglvel_y", "anglvel_z", "accel_x", "accel_y", "accel_z", "timestamp",
  ]

  /// A BMI160 record: gyro, accel (raw LSBs), padding, the timestamp in nanoseconds.
  static func record(gyro: [Int16], accel: [Int16], nanoseconds: Int64) -> [UInt8] {
    var bytes: [UInt8] = []
    for value in gyro + accel { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    bytes += [0, 0, 0, 0]
    withUnsafeBytes(of: nanoseconds.littleEndian) { bytes += $0 }
    return bytes
  }

  @Test func theDeviceIsFoundByItsNameWithItsBufferAndScales() throws {
    try device(0, name: "bmp280", enabled: [])
    try device(1, name: "bmi160", enabled: Self.everything)
    let found = try IIOInertialDevice.find(named: "bmi160", devices: devices, nodes: nodes)
    #expect(found.name == "bmi160")
    #expect(found.node == nodes + "/iio:device1")
    #expect(found.layout.recordSize == 24)
    #expect(found.accelerationScale == [Self.accelScale, Self.accelScale, Self.accelScale])
    #expect(found.rotationScale?.first == Self.rotationScale)
    let unnamed = try IIOInertialDevice.find(named: nil, devices: devices, nodes: nodes)
    #expect(unnamed.name == "bmi160", "the first with an accelerometer in its buffer")
    let sample = try #require(
      found.sample(Self.record(gyro: [1000, 0, -1000], accel: [0, 0, 16384], nanoseconds: 2_500_000_000), readAt: 0))
    #expect(sample.time == 2.5)
    #expect(abs(sample.acceleration.z - 16384 * Self.accelScale) < 1e-9)
    #expect(abs((sample.rotation?.x ?? 0) - 1.065) < 1e-9 && abs((sample.rotation?.z ?? 0) + 1.065) < 1e-9)
  }

  @Test func aBufferNotSetUpOrNoDeviceIsAnErrorSayingSo() throws {
    #expect(throws: IIODeviceError.self) { try IIOInertialDevice.find(named: nil, devices: devices, nodes: nodes) }
    try device(0, name: "bmi160", enabled: ["timestamp"])
    do {
      _ = try IIOInertialDevice.find(named: "bmi160", devices: devices, nodes: nodes)
      Issue.record("found a device whose buffer carries no accelerometer")
    } catch {
      #expect(error.description.contains("does not carry the accelerometer"), "\(error)")
    }
    do {
      _ = try IIOInertialDevice.find(named: "lsm6dsx", devices: devices, nodes: nodes)
      Issue.record("found a device by another name")
    } catch {
      #expect(error.description == "no IIO device named lsm6dsx with its buffer set up", "\(error)")
    }
  }

  @Test func anAccelerometerWithoutAGyroscopeHasNoRotation() throws {
    try device(0, name: "adxl345", enabled: ["accel_x", "accel_y", "accel_z"], gyro: false)
    let found = try IIOInertialDevice.find(named: nil, devices: devices, nodes: nodes)
    #expect(found.rotationScale == nil)
    #expect(found.layout.recordSize == 6)
    var record: [UInt8] = []
    for value: Int16 in [0, 0, 16384] { withUnsafeBytes(of: value.littleEndian) { record += $0 } }
    let sample = try #require(found.sample(record, readAt: 7))
    #expect(sample.time == 7, "no timestamp channel: the time it was read")
    #expect(sample.rotation == nil)
  }

  /// Records written as the kernel gives them (and split across writes, as a pipe may), read
  /// and decoded in order; a stop ends the reader at once; the writer gone is the device gone.
  @Test func theReaderDeliversEveryRecordAndEndsWhenTheDeviceGoes() throws {
    try device(0, name: "bmi160", enabled: Self.everything)
    let found = try IIOInertialDevice.find(named: "bmi160", devices: devices, nodes: nodes)
    let stop = StopSignal()
    let collected = Collected()
    let finished = Collected()
    let thread = try DeviceThread.start(name: "iio-test") {
      do {
        try IIOBufferReader(device: found).run(stop: stop) { collected.add($0) }
        finished.note("stopped")
      } catch {
        finished.note("\(error)")
      }
    }
    let writer = try FileDescriptor.open(found.node, O_WRONLY)
    var bytes: [UInt8] = []
    for step in 0..<100 {
      bytes += Self.record(gyro: [0, 0, 0], accel: [0, Int16(step), 16384], nanoseconds: Int64(step) * 10_000_000)
    }
    try bytes.prefix(100).withUnsafeBytes { try writer.writeAll($0) }
    usleep(20_000)
    try bytes.dropFirst(100).withUnsafeBytes { try writer.writeAll($0) }
    for _ in 0..<200 where collected.samples.count < 100 { usleep(10_000) }
    #expect(collected.samples.count == 100)
    #expect(collected.samples.map { Int(($0.acceleration.y / Self.accelScale).rounded()) } == Array(0..<100))
    #expect(collected.samples.last?.time == 0.99)
    try writer.close()
    thread.join()
    #expect(finished.notes.first?.contains("went away") == true, "\(finished.notes)")
  }

  @Test func aStopEndsTheReaderAsleepInPoll() throws {
    try device(0, name: "bmi160", enabled: Self.everything)
    let found = try IIOInertialDevice.find(named: "bmi160", devices: devices, nodes: nodes)
    let stop = StopSignal()
    let finished = Collected()
    // A FIFO's reader opens at once with O_NONBLOCK; a writer held open keeps it from ending.
    let thread = try DeviceThread.start(name: "iio-test") {
      do {
        try IIOBufferReader(device: found).run(stop: stop) { _ in }
        finished.note("stopped")
      } catch {
        finished.note("\(error)")
      }
    }
    usleep(50_000)
    let writer = try FileDescriptor.open(found.node, O_WRONLY)
    stop.stop()
    thread.join()
    try writer.close()
    #expect(finished.notes == ["stopped"])
  }
}

/// What the reader's thread hands over, read from the test's.
final class Collected: @unchecked Sendable {
  private let lock = NSLock()
  private var all: [MotionSample] = []
  private var said: [String] = []
  func add(_ batch: [MotionSample]) { lock.withLock { all += batch } }
  func note(_ text: String) { lock.withLock { said.append(text) } }
  var samples: [MotionSample] { lock.withLock { all } }
  var notes: [String] { lock.withLock { said } }
}
