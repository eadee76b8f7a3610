import BoardLinux
import Foundation
import LinuxSupport
import SensorProtocols
import Synchronization
import Testing
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// The host's end of a stream socketpair, as the usbfs transport is the stick's bulk
/// endpoints: reads may split or join messages; end of file is the stick unplugged (ENODEV).
private final class SocketTransport: ANTTransport {
  let descriptor: Int32

  init(descriptor: Int32) { self.descriptor = descriptor }
  deinit { close(descriptor) }

  func receive(until deadline: Double?, signal: StopSignal) throws(SystemError) -> [UInt8]? {
    var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
    if try signal.poll(&descriptors, until: deadline) { return nil }
    guard descriptors[0].revents != 0 else { return [] }
    var buffer = [UInt8](repeating: 0, count: 64)
    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    if count < 0 { throw SystemError.last("read", "the test stick") }
    if count == 0 { throw SystemError("read", errno: ENODEV, context: "the test stick") }
    return Array(buffer[..<count])
  }

  func send(_ bytes: [UInt8]) throws(SystemError) {
    let count = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    if count != bytes.count { throw SystemError.last("send", "the test stick") }
  }
}

/// A stick on the far end of the socketpair, on its own thread: answers commands as
/// `ANTTestStick` does and, once a channel is open, sends its sensor's heart-rate pages every
/// 20 ms; after `vanishAfter` pages it closes its end (unplugged).
private final class ScriptedStick: @unchecked Sendable {
  private let descriptor: Int32
  private var stick = ANTTestStick()
  private let sensor: ANTChannelID
  private let vanishAfter: Int?
  private let stopped = Atomic<Bool>(false)

  private init(descriptor: Int32, sensor: ANTChannelID, vanishAfter: Int?) {
    self.descriptor = descriptor
    self.sensor = sensor
    self.vanishAfter = vanishAfter
  }

  /// A stick plugged in: serving on its thread, and the host's transport to it.
  static func plugIn(sensor: ANTChannelID, vanishAfter: Int?) throws(SystemError) -> (ScriptedStick, SocketTransport) {
    var pair: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
      throw SystemError.last("socketpair")
    }
    let stick = ScriptedStick(descriptor: pair[1], sensor: sensor, vanishAfter: vanishAfter)
    Thread { [stick] in stick.serve() }.start()
    return (stick, SocketTransport(descriptor: pair[0]))
  }

  func stop() { stopped.store(true, ordering: .relaxed) }

  private func serve() {
    defer { close(descriptor) }
    var reader = ANTFrameReader()
    var buffer = [UInt8](repeating: 0, count: 256)
    var pages = 0
    var last = 0.0
    while !stopped.load(ordering: .relaxed) {
      var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
      _ = poll(&descriptors, 1, 5)
      if descriptors[0].revents != 0 {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count <= 0 { return }
        reader.append(buffer[..<count])
        while let output = reader.next() {
          guard case .message(let command) = output else { continue }
          for answer in stick.answer(command) { write(answer.bytes) }
        }
      }
      let now = SystemClocks.monotonic()
      guard stick.open.contains(0), now - last >= 0.02 else { continue }
      last = now
      pages += 1
      if let vanishAfter, pages > vanishAfter { return }
      let page = ANTPages.heartRate(
        bpm: 60 + UInt8(pages % 60), count: UInt8(pages & 0xFF), time: UInt16(pages * 1000 & 0xFFFF))
      // Split in two writes, as a USB read may end mid-message.
      let bytes = stick.broadcast(page, on: 0, from: sensor).bytes
      write(Array(bytes[..<5]))
      write(Array(bytes[5...]))
    }
  }

  private func write(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  }
}

/// Hands out transports, each with a fresh scripted stick behind it, or none (unplugged).
private final class StickFactory: @unchecked Sendable {
  private let sticks = Mutex<[ScriptedStick]>([])
  let opens = Atomic<Int>(0)
  private let plan: @Sendable (Int) -> Int??
  let sensor = ANTChannelID(deviceNumber: 4242, deviceType: 120, transmissionType: 1)

  /// `plan(attempt)`: nil no stick, .some(nil) a stick that stays, .some(n) one that vanishes
  /// after n pages.
  init(_ plan: @escaping @Sendable (Int) -> Int??) { self.plan = plan }

  func open() throws(SystemError) -> (any ANTTransport)? {
    let attempt = opens.add(1, ordering: .relaxed).newValue
    guard let vanishAfter = plan(attempt) else { return nil }
    let (stick, transport) = try ScriptedStick.plugIn(sensor: sensor, vanishAfter: vanishAfter)
    sticks.withLock { $0.append(stick) }
    return transport
  }

  func stopAll() { sticks.withLock { $0.forEach { $0.stop() } } }
}

@Suite("ANT stick source: the link over a transport, the stick and its sensors' conditions")
struct ANTStickSourceTests {
  private func withStick(
    _ factory: StickFactory, sensors: [ANTSensor] = [ANTSensor(profile: .heartRate)],
    _ body: (Collector, _ paired: () -> [ANTSensor]) throws -> Void
  ) rethrows {
    var settings = ANTStickSettings(networkKey: ANTNetworkKey([1, 2, 3, 4, 5, 6, 7, 8])!, sensors: sensors)
    settings.backoff = Backoff(initial: 0.05, maximum: 0.2)
    let paired = Mutex<[ANTSensor]>([])
    let source = ANTStickSource(settings: settings) { _ throws(SystemError) in
      try factory.open()
    } onPaired: { sensor in
      paired.withLock { $0.append(sensor) }
    }
    let sink = Collector()
    source.start(sink: sink)
    defer {
      source.stop()
      factory.stopAll()
    }
    try body(sink) { paired.withLock { $0 } }
  }

  @Test func aStickThatVanishesTakesItsSensorAndBothComeBack() {
    let factory = StickFactory { attempt in attempt == 1 ? .some(10) : .some(nil) }
    withStick(factory) { sink, paired in
      #expect(sink.wait { $0.conditions(of: .heartRateStrap) == [.available, .lost, .available] })
      #expect(sink.conditions(of: .antStick) == [.available, .lost, .available])
      let lost = sink.statuses.first { $0.device == .antStick && $0.condition == .lost }
      #expect(lost?.detail.contains("the ANT stick is gone") == true, "\(lost?.detail ?? "")")
      let strap = sink.statuses.filter { $0.device == .heartRateStrap }
      #expect(strap.first?.detail == "ANT+ heart rate 4242")
      #expect(strap[1].detail.contains("ANT+ heart rate 4242: the ANT stick is gone"), "\(strap[1].detail)")
      #expect(sink.heartRates.count >= 10)
      #expect(sink.heartRates.allSatisfy { (60..<120).contains($0) })
      // The wildcard's find, told once though found again on the second stick.
      #expect(paired() == [ANTSensor(profile: .heartRate, deviceNumber: 4242, transmissionType: 1)])
      #expect(factory.opens.load(ordering: .relaxed) == 2)
    }
  }

  @Test func aScanListsTheSensorItHearsOnce() throws {
    let (stick, transport) = try ScriptedStick.plugIn(
      sensor: ANTChannelID(deviceNumber: 4243, deviceType: 120, transmissionType: 1), vanishAfter: nil)
    defer { stick.stop() }
    let settings = ANTStickSettings(networkKey: ANTNetworkKey([1, 2, 3, 4, 5, 6, 7, 8])!, sensors: [])
    let found = try ANTStickScan.run(settings: settings, transport: transport, seconds: 0.3, signal: StopSignal())
    #expect(found == [ANTSensor(profile: .heartRate, deviceNumber: 4243, transmissionType: 1)])
  }

  @Test func noStickIsAbsentAndSoAreItsSensorsOnceEach() {
    let factory = StickFactory { _ in nil }
    withStick(factory) { sink, _ in
      #expect(sink.wait { $0.statuses.count >= 2 })
      #expect(sink.wait { _ in factory.opens.load(ordering: .relaxed) >= 3 })
      let statuses = sink.statuses
      #expect(statuses.count == 2, "once a change: \(statuses)")
      #expect(
        statuses.first { $0.device == .antStick }?.detail
          == "no ANT stick (0fcf:1008 or 0fcf:1009) is plugged in; retrying")
      #expect(statuses.first { $0.device == .heartRateStrap }?.condition == .absent)
    }
  }
}

extension Collector {
  fileprivate func conditions(of device: DeviceKind) -> [DeviceStatus.Condition] {
    statuses.filter { $0.device == device }.map(\.condition)
  }
}
