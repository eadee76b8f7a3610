import Foundation
import LinuxSupport
import Testing
import WorkoutCore

@testable import BoardLinux

/// `IMUSource` as the service runs it, on the IIO tree of `IIOInertialDeviceTests` (a BMI160's
/// sysfs with a FIFO in its node's place): its condition, one `MotionSecond` a second, a fall.
struct IMUSourceTests {
  /// ±16 g: 2048 LSB a g (BMI160 datasheet, ACC_RANGE 0x0C; in_accel_scale 0.004788).
  static let lsbPerG = 2048.0

  /// The service's device for the BMI160 of `tree`, started into a collecting sink.
  func started(on tree: IIOInertialDeviceTests) -> (IMUSource, Collector) {
    var settings = IMUSettings(device: "bmi160")
    (settings.devices, settings.nodes) = (tree.devices, tree.nodes)
    let source = IMUSource(settings: settings)
    let sink = Collector()
    source.start(sink: sink)
    return (source, sink)
  }

  @Test func noSensorIsAbsentSayingWhoSetsItUp() throws {
    let tree = try IIOInertialDeviceTests()
    let (source, sink) = started(on: tree)
    defer { source.stop() }
    #expect(sink.wait { !$0.statuses.isEmpty })
    let status = try #require(sink.statuses.first)
    #expect(status.device == .imu && status.condition == .absent)
    #expect(status.detail.contains("workoutd-imu@.service"), "\(status.detail)")
  }

  @Test func secondsOfMotionThenAFallReachTheEngine() throws {
    let tree = try IIOInertialDeviceTests()
    try tree.device(0, name: "bmi160", enabled: IIOInertialDeviceTests.everything)
    try tree.write(tree.devices + "/iio:device0/in_accel_scale", "\(MotionSample.gravity / Self.lsbPerG)")
    let (source, sink) = started(on: tree)
    defer { source.stop() }
    #expect(sink.wait { $0.statuses.contains { $0.condition == .available } })
    #expect(sink.statuses.first?.detail.contains("accelerometer and gyroscope") == true)

    // 3 s upright with the road's buzz, a 6 g jolt, then 11 s on its side.
    var records: [UInt8] = []
    var step: Int64 = 0
    var start = Int64((SystemClocks.monotonic() - 10) * 1e9)
    func hold(_ seconds: Int, _ down: (Double, Double, Double), buzz: Double) {
      for _ in 0..<(seconds * 100) {
        let wobble = buzz * (step % 2 == 0 ? 1 : -1)
        let accel = [down.0, down.1, down.2].map { Int16((($0 + wobble) * Self.lsbPerG).rounded()) }
        records += IIOInertialDeviceTests.record(gyro: [0, 0, 0], accel: accel, nanoseconds: start + step * 10_000_000)
        step += 1
      }
    }
    // On CLOCK_MONOTONIC, as the set-up asks: first 2 s of a buffer filled 10 s ago (left out),
    // then now.
    hold(2, (0, 0, 1), buzz: 0.5)
    start = Int64(SystemClocks.monotonic() * 1e9)
    step = 0
    hold(3, (0, 0, 1), buzz: 0.1)
    for _ in 0..<3 {
      let accel = [0.6 * 6, 0, 0.8 * 6].map { Int16(($0 * Self.lsbPerG).rounded()) }
      records += IIOInertialDeviceTests.record(
        gyro: [4000, 0, 0], accel: accel, nanoseconds: start + step * 10_000_000)
      step += 1
    }
    hold(11, (1, 0, 0), buzz: 0.005)
    let writer = try FileDescriptor.open(tree.nodes + "/iio:device0", O_WRONLY)
    defer { try? writer.close() }
    try records.withUnsafeBytes { try writer.writeAll($0) }

    #expect(sink.wait { inputs in inputs.all.contains { if case .fall = $0 { true } else { false } } })
    let seconds = sink.all.compactMap { if case .reading(.motion(let second)) = $0 { second } else { nil } }
    #expect(seconds.count >= 13 && seconds.count <= 15, "one a second, none of the stale: \(seconds.count)")
    #expect(abs(seconds[1].vibration - 0.1 * MotionSample.gravity) < 0.3, "the buzz: \(seconds[1].vibration)")
    #expect(seconds[3].peak > 5.5 * MotionSample.gravity, "the jolt's second: \(seconds[3].peak)")
    let falls = sink.all.compactMap { if case .fall(let fall) = $0 { fall } else { nil } }
    #expect(falls.count == 1)
    #expect(abs((falls.first?.impactAt ?? 0) - (Double(start) / 1e9 + 3)) < 0.05)
    #expect((falls.first?.tilt ?? 0) > 80)
  }
}
