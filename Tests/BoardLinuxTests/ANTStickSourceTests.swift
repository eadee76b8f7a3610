import BoardLinux
import Foundation
import LinuxSupport
import SensorProtocols
import Synchronization
import Testing
import WorkoutCore
import WorkoutTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A stick whose sensor, a heart-rate strap, sends a page every 20 ms on channel 0, each in two
/// writes; after `vanishAfter` pages it is unplugged.
private func plugIn(
  sensor: ANTChannelID, vanishAfter: Int?
) throws(SystemError) -> (
  ANTScriptedStick, ANTSocketTransport
) {
  let strap = ANTScriptedStick.Sensor(channel: 0, id: sensor, period: 0.02) { n in
    ANTPages.heartRate(bpm: 60 + UInt8(n % 60), count: UInt8(n & 0xFF), time: UInt16(n * 1000 & 0xFFFF))
  }
  return try ANTScriptedStick.plugIn([strap], vanishAfter: vanishAfter, splitWrites: true)
}

/// Hands out transports, each with a fresh scripted stick behind it, or none (unplugged).
private final class StickFactory: @unchecked Sendable {
  private let sticks = Mutex<[ANTScriptedStick]>([])
  let opens = Atomic<Int>(0)
  private let plan: @Sendable (Int) -> Int??
  let sensor = ANTChannelID(deviceNumber: 4242, deviceType: 120, transmissionType: 1)

  /// `plan(attempt)`: nil no stick, .some(nil) a stick that stays, .some(n) one that vanishes
  /// after n pages.
  init(_ plan: @escaping @Sendable (Int) -> Int??) { self.plan = plan }

  func open() throws(SystemError) -> (any ANTTransport)? {
    let attempt = opens.add(1, ordering: .relaxed).newValue
    guard let vanishAfter = plan(attempt) else { return nil }
    let (stick, transport) = try plugIn(sensor: sensor, vanishAfter: vanishAfter)
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
    let (stick, transport) = try plugIn(
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
