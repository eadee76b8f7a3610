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

  /// A device whose record has nothing at offset 0 of an axis: a u8 (say a temperature)
  /// first, the accelerometer as the ADXL345 family gives it (big-endian, 12 bits shifted by
  /// 4, the low bits not data), the gyroscope in le:s32, the timestamp: 32 bytes.
  func mixedDevice() throws -> IIOInertialDevice {
    let directory = devices + "/iio:device0"
    try write(directory + "/name", "mixed")
    for (axis, scale) in zip(["x", "y", "z"], ["0.0383", "0.0384", "0.0385"]) {
      try write(directory + "/in_accel_\(axis)_scale", scale)
    }
    try write(directory + "/in_anglvel_scale", "\(Self.rotationScale)")
    let channels = [
      ("temp", "le:u8/8>>0"), ("accel_x", "be:s12/16>>4"), ("accel_y", "be:s12/16>>4"), ("accel_z", "be:s12/16>>4"),
      ("anglvel_x", "le:s32/32>>0"), ("anglvel_y", "le:s32/32>>0"), ("anglvel_z", "le:s32/32>>0"),
      ("timestamp", "le:s64/64>>0"),
    ]
    for (index, (channel, type)) in channels.enumerated() {
      let elements = directory + "/scan_elements/in_\(channel)"
      try write(elements + "_en", "1")
      try write(elements + "_index", "\(index)")
      try write(elements + "_type", type)
    }
    guard mkfifo(nodes + "/iio:device0", 0o600) == 0 else { throw SystemError.last("mkfifo") }
    return try IIOInertialDevice.find(named: "mixed", devices: devices, nodes: nodes)
  }

  static func mixedRecord(accel: [Int16], gyro: [Int32], nanoseconds: Int64) -> [UInt8] {
    var bytes: [UInt8] = [0xAB, 0]
    for value in accel {
      // 12 bits of data over 4 that are not: ones, which the shift drops.
      withUnsafeBytes(of: (UInt16(bitPattern: value << 4) | 0xF).bigEndian) { bytes += $0 }
    }
    for value in gyro { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    bytes += [0, 0, 0, 0]
    withUnsafeBytes(of: nanoseconds.littleEndian) { bytes += $0 }
    return bytes
  }

  /// A record's sample as it was decoded before the channels were resolved once: each looked
  /// up by its name in the layout.
  static func byName(_ device: IIOInertialDevice, _ record: [UInt8], readAt: Double) -> MotionSample? {
    func axes(_ kind: String, _ scale: [Double]) -> Vector3? {
      var values: [Double] = []
      for (axis, factor) in zip(IIOInertialDevice.axes, scale) {
        guard let raw = device.layout.value("\(kind)_\(axis)", in: record) else { return nil }
        values.append(Double(raw) * factor)
      }
      return Vector3(values[0], values[1], values[2])
    }
    guard let acceleration = axes("accel", device.accelerationScale) else { return nil }
    let time = device.layout.value("timestamp", in: record).map { Double($0) / 1e9 } ?? readAt
    return MotionSample(
      time: time, acceleration: acceleration, rotation: device.rotationScale.flatMap { axes("anglvel", $0) })
  }

  /// Records several to a read, one split across reads, a byte at a time: each decoded where it
  /// lies gives the sample it gave looked up by name, whatever the reads' sizes.
  @Test func recordsAcrossAndWithinReadsDecodeAsByName() throws {
    let found = try mixedDevice()
    #expect(found.layout.recordSize == 32)
    #expect(found.layout.channels.map(\.offset) == [0, 2, 4, 6, 8, 12, 16, 24])
    var records: [[UInt8]] = []
    for step in 0..<7 {
      let accel: [Int16] = [-2048 + Int16(step), 2047 - Int16(step), Int16(step) * 100 - 300]
      let gyro: [Int32] = [-70_000 * Int32(step), 1, Int32.max - Int32(step)]
      records.append(Self.mixedRecord(accel: accel, gyro: gyro, nanoseconds: 1_000_000_007 * Int64(step + 1)))
    }
    let expected = try records.map { try #require(Self.byName(found, $0, readAt: 0)) }
    #expect(expected[0].acceleration.x == -2048 * 0.0383 && expected[0].acceleration.z == -300 * 0.0385)
    #expect(expected[2].rotation?.x == -140_000 * Self.rotationScale && expected[6].time == 7.000000049)
    #expect(try records.map { try #require(found.sample($0, readAt: 0)) } == expected, "a record alone")
    let stream = Array(records.joined())
    for chunk in [1, 5, 31, 32, 33, 64, 70, 100, stream.count] {
      var reads = IIORecords(device: found)
      var samples: [MotionSample] = []
      var clockReads = 0
      func clock() -> Double {
        clockReads += 1
        return 0
      }
      var start = 0
      while start < stream.count {
        let end = min(start + chunk, stream.count)
        stream[start..<end].withUnsafeBytes { samples += reads.samples(from: $0, readAt: clock()) }
        start = end
      }
      #expect(samples == expected, "reads of \(chunk) bytes")
      // The clock is read once for each read that ends a record (the read its last byte is in).
      let ending = Set((1...records.count).map { ($0 * 32 + chunk - 1) / chunk })
      #expect(clockReads == ending.count, "reads of \(chunk) bytes")
    }
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
