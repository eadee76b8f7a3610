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

/// A scripted sensor on the far end of a SOCK_SEQPACKET socketpair (each message one ATT PDU,
/// as on an L2CAP LE socket), answering on its own thread, like a strap over the air.
private final class ScriptedSensor: @unchecked Sendable {
  enum Behaviour {
    /// Answers discovery, then notifies `payloads` once every `interval` seconds, round and round.
    case notify([[UInt8]], interval: Double)
    /// Answers discovery, notifies `payloads` once, then closes the link (out of range).
    case notifyThenVanish([[UInt8]])
    /// As `notify`, and a battery level notification of each of `levels`, one a round.
    case notifyWithBattery([[UInt8]], levels: [UInt8], interval: Double)
  }

  private let descriptor: Int32
  private var peer: GATTTestPeer
  private let behaviour: Behaviour
  /// The characteristic the payloads are notified on.
  private let measurement: BluetoothUUID
  private let stopped = Atomic<Bool>(false)
  private var thread: Thread?

  init(descriptor: Int32, peer: GATTTestPeer, behaviour: Behaviour, measurement: BluetoothUUID) {
    self.descriptor = descriptor
    self.peer = peer
    self.behaviour = behaviour
    self.measurement = measurement
  }

  func start() {
    let thread = Thread { [self] in self.serve() }
    self.thread = thread
    thread.start()
  }

  func stop() { stopped.store(true, ordering: .relaxed) }

  private func serve() {
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: 1024)
    var subscribedAt: Double?
    var next = 0
    var lastNotification = 0.0
    while !stopped.load(ordering: .relaxed) {
      var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
      _ = poll(&fds, 1, 10)
      if fds[0].revents & Int16(POLLIN) != 0 {
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count <= 0 { return }
        if let reply = peer.answer(Array(buffer[..<count])) {
          _ = reply.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        // Measurements once the client has written both CCCDs (heart rate, battery): done.
        if subscribedAt == nil, peer.configured.count == 2 {
          subscribedAt = SystemClocks.monotonic()
        }
      }
      guard subscribedAt != nil else { continue }
      let now = SystemClocks.monotonic()
      switch behaviour {
      case .notify(let payloads, let interval):
        if now - lastNotification >= interval {
          lastNotification = now
          notify(payloads[next % payloads.count])
          next += 1
        }
      case .notifyThenVanish(let payloads):
        for payload in payloads { notify(payload) }
        usleep(50_000)
        return
      case .notifyWithBattery(let payloads, let levels, let interval):
        if now - lastNotification >= interval {
          lastNotification = now
          notify(payloads[next % payloads.count])
          if next < levels.count {
            let pdu = peer.notification(.batteryLevel, [levels[next]])
            _ = pdu.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
          }
          next += 1
        }
      }
    }
  }

  private func notify(_ payload: [UInt8]) {
    let pdu = peer.notification(measurement, payload)
    _ = pdu.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  }
}

/// Hands out connected bearers, each with a fresh scripted sensor behind it.
private final class SensorFactory: @unchecked Sendable {
  private let lock = Mutex<[ScriptedSensor]>([])
  private let makeBehaviour: @Sendable (Int) -> ScriptedSensor.Behaviour
  private let peer: @Sendable () -> GATTTestPeer
  private let measurement: BluetoothUUID
  let connects = Atomic<Int>(0)

  /// Sensors like `peer` (a heart-rate strap unless said), notifying on `measurement`.
  init(
    peer: @escaping @Sendable () -> GATTTestPeer = { .heartRateStrap() },
    measurement: BluetoothUUID = .heartRateMeasurement,
    _ makeBehaviour: @escaping @Sendable (Int) -> ScriptedSensor.Behaviour
  ) {
    self.peer = peer
    self.measurement = measurement
    self.makeBehaviour = makeBehaviour
  }

  func connect() throws(SystemError) -> ATTBearer? {
    var pair: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
      throw SystemError.last("socketpair")
    }
    _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
    let attempt = connects.add(1, ordering: .relaxed).newValue
    let sensor = ScriptedSensor(
      descriptor: pair[1], peer: peer(), behaviour: makeBehaviour(attempt), measurement: measurement)
    lock.withLock { $0.append(sensor) }
    sensor.start()
    return ATTBearer(adopting: pair[0])
  }

  func stopAll() { lock.withLock { $0.forEach { $0.stop() } } }
}

@Suite("BLE sensor source: GATT over a seqpacket socket, reconnects, faults")
struct StrapSourceTests {
  let address = BluetoothAddress("A0:9E:1A:12:34:56")!

  private func source(_ factory: SensorFactory, silence: Double = 15) -> StrapSource {
    var settings = StrapSettings(address: address)
    settings.silenceLimit = silence
    settings.backoff = Backoff(initial: 0.05, maximum: 0.2)
    return StrapSource(settings: settings) { _, _ throws(SystemError) in try factory.connect() }
  }

  /// Runs a source on `factory`'s sensors while `body` looks at what it posted; stops both.
  private func withStrap(
    _ factory: SensorFactory, silence: Double = 15, _ body: (Collector) throws -> Void
  ) rethrows {
    let sink = Collector()
    let strap = source(factory, silence: silence)
    strap.start(sink: sink)
    defer {
      strap.stop()
      factory.stopAll()
    }
    try body(sink)
  }

  @Test func aStrapIsDiscoveredAndItsHeartRateArrives() {
    // 72 then 75 bpm, each uint8 with contact detected and one RR interval (flags 0x16).
    let factory = SensorFactory { _ in .notify([[0x16, 72, 0x00, 0x04], [0x16, 75, 0xF0, 0x03]], interval: 0.02) }
    withStrap(factory) { sink in
      #expect(sink.wait { $0.heartRates.count >= 4 })
      #expect(Array(sink.heartRates.prefix(4)) == [72, 75, 72, 75])
      // Every RR interval, as sent: 0x0400 and 0x03F0 in 1/1024 s.
      let rr = sink.all.compactMap { if case .reading(.rrIntervals(let r)) = $0 { r } else { nil } }
      #expect(Array(rr.prefix(2)) == [[0x0400], [0x03F0]])
      let available = sink.statuses.first
      #expect(available?.device == .heartRateStrap && available?.condition == .available)
      #expect(available?.detail.contains("A0:9E:1A:12:34:56") == true)
      #expect(available?.detail.contains("0x2A37") == true)
      #expect(available?.detail.contains("battery 87 %") == true, "\(available?.detail ?? "")")
      #expect(factory.connects.load(ordering: .relaxed) == 1)
    }
  }

  @Test func aBatteryLevelThatChangesAfterConnectingShowsInStatusWithoutAnotherEvent() {
    let factory = SensorFactory { _ in .notifyWithBattery([[0x00, 70]], levels: [86, 86, 85], interval: 0.02) }
    withStrap(factory) { sink in
      #expect(sink.wait { $0.statuses.contains { $0.detail.contains("battery 85 %") } })
      let statuses = sink.statuses
      #expect(statuses.allSatisfy { $0.condition == .available })
      // 87 read at discovery, then 86 and 85 notified: one status each (the repeat of 86 none).
      #expect(statuses.map { $0.detail.contains("battery 87 %") } == [true, false, false], "\(statuses.map(\.detail))")
      #expect(statuses[1].detail.hasSuffix("; battery 86 %)"))
    }
  }

  @Test func aControllerBusyWithAnotherConnectionIsTriedAgainSoonNotAfterTheBackoff() {
    let factory = SensorFactory { _ in .notify([[0x00, 77]], interval: 0.02) }
    let attempts = Atomic<Int>(0)
    var settings = StrapSettings(address: address)
    settings.backoff = Backoff(initial: 30, maximum: 30)
    settings.busyRetry = 0.05
    let strap = StrapSource(settings: settings) { _, _ throws(SystemError) in
      if attempts.add(1, ordering: .relaxed).newValue <= 3 { throw SystemError("connect", errno: EBUSY) }
      return try factory.connect()
    }
    let sink = Collector()
    strap.start(sink: sink)
    defer {
      strap.stop()
      factory.stopAll()
    }
    #expect(
      sink.wait { $0.heartRates.contains(77) }, "connected after three busy attempts, well inside the 30 s backoff")
    #expect(attempts.load(ordering: .relaxed) == 4)
    #expect(sink.statuses.map(\.condition) == [.absent, .available])
    #expect(sink.statuses.first?.detail.contains("busy connecting another device") == true)
  }

  @Test func aStrapWithoutSkinContactGivesNoHeartRate() {
    // Contact supported (bit 2) but not detected (bit 1 clear): 60 is no one's heart rate.
    let factory = SensorFactory { _ in .notify([[0x04, 60], [0x06, 61]], interval: 0.02) }
    withStrap(factory) { sink in
      #expect(sink.wait { $0.heartRates.count >= 3 })
      #expect(Set(sink.heartRates) == [61])
    }
  }

  @Test func aVanishedStrapIsReportedLostAndReconnected() {
    let factory = SensorFactory { attempt in
      attempt == 1 ? .notifyThenVanish([[0x00, 80]]) : .notify([[0x00, 81]], interval: 0.02)
    }
    withStrap(factory) { sink in
      #expect(sink.wait { $0.heartRates.contains(81) })
      let conditions = sink.statuses.map(\.condition)
      #expect(Array(conditions.prefix(3)) == [.available, .lost, .available])
      #expect(sink.statuses[1].detail.contains("link lost"))
      #expect(sink.heartRates.first == 80)
    }
  }

  @Test func aSilentStrapIsLostAfterTheSilenceLimit() {
    // Discovery answered, then nothing: after 0.3 s of silence the link is dropped and retried.
    let factory = SensorFactory { _ in .notify([[0x00, 90]], interval: 3600) }
    withStrap(factory, silence: 0.3) { sink in
      #expect(sink.wait { $0.statuses.contains { $0.condition == .lost } })
      #expect(sink.statuses.first { $0.condition == .lost }?.detail.contains("sent nothing") == true)
      #expect(sink.wait { $0.connects() >= 2 })
    }
  }

  @Test func malformedMeasurementsInARowAreAFault() {
    // A uint16 heart rate with one byte: the layout is broken every time.
    let factory = SensorFactory { _ in .notify([[0x01, 70]], interval: 0.01) }
    withStrap(factory) { sink in
      #expect(sink.wait { $0.statuses.contains { $0.condition == .failing } })
      let failing = sink.statuses.first { $0.condition == .failing }
      #expect(failing?.detail.contains("5 unusable values in a row") == true)
      #expect(sink.heartRates.isEmpty)
    }
  }

  @Test func aStrapSendingAHeartRateNoHeartBeatsIsAFaultAndNoneOfItIsRecorded() {
    // uint16 form, contact detected: 60,000 bpm, and once 150 bpm among them (taken).
    let absurd: [UInt8] = [0x07, 0x60, 0xEA]
    let factory = SensorFactory { _ in
      .notify([absurd, absurd, [0x07, 150, 0x00]] + Array(repeating: absurd, count: 5), interval: 0.01)
    }
    withStrap(factory) { sink in
      #expect(sink.wait { $0.statuses.contains { $0.condition == .failing } })
      let failing = sink.statuses.first { $0.condition == .failing }
      #expect(failing?.detail.contains("5 unusable values in a row") == true, "\(failing?.detail ?? "")")
      #expect(failing?.detail.contains("60000 bpm") == true, "\(failing?.detail ?? "")")
      #expect(sink.heartRates.first == 150)
      #expect(Set(sink.heartRates) == [150])
    }
  }

  /// A speed sensor whose wheel counter is broken: every pair is a jump of half the counter's
  /// range, refused (a speed of millions of km/h), and it gave no speed and no word. Five in a
  /// row make it failing, while it stays connected; plausible pairs make it available again.
  @Test func aSpeedSensorWhoseEveryPairIsRefusedIsFailingUntilItsPairsAreGoodAgain() {
    func wheel(_ revolutions: UInt32, _ eventTime: UInt16) -> [UInt8] {
      let r = revolutions
      let t = eventTime
      let bytes: [UInt8] = [
        0x01, UInt8(r & 0xFF), UInt8(r >> 8 & 0xFF), UInt8(r >> 16 & 0xFF), UInt8(r >> 24), UInt8(t & 0xFF),
        UInt8(t >> 8),
      ]
      return bytes
    }
    // One second (1024/1024 s) apart: half the counter in a second, five times after the first
    // (a reference), then one revolution a second (2.105 m/s).
    var broken: [[UInt8]] = []
    for n in 0..<6 {
      let revolutions: UInt32 = n % 2 == 0 ? 0 : 0x8000_0000
      broken.append(wheel(revolutions, UInt16(1024 * (n + 1))))
    }
    var good: [[UInt8]] = []
    for n in 1...3 {
      good.append(wheel(0x8000_0000 + UInt32(n), UInt16(1024 * (6 + n))))
    }
    let payloads = broken + good
    let factory = SensorFactory(
      peer: {
        GATTTestPeer([
          GATTTestPeer.Service(
            .cyclingSpeedAndCadenceService, [GATTTestPeer.Characteristic(.cscMeasurement, [.notify])]),
          GATTTestPeer.Service(
            .batteryService, [GATTTestPeer.Characteristic(.batteryLevel, [.read, .notify], value: [90])]),
        ])
      }, measurement: .cscMeasurement
    ) { _ in .notify(payloads, interval: 0.02) }
    let sink = Collector()
    var settings = StrapSettings(address: address)
    settings.device = .speedCadenceSensor
    settings.backoff = Backoff(initial: 0.05, maximum: 0.2)
    let sensor = StrapSource(settings: settings) { _, _ throws(SystemError) in try factory.connect() }
    sensor.start(sink: sink)
    defer {
      sensor.stop()
      factory.stopAll()
    }
    #expect(sink.wait { $0.statuses.filter { $0.condition == .available }.count >= 2 })
    let statuses = sink.statuses
    #expect(Array(statuses.map(\.condition).prefix(3)) == [.available, .failing, .available], "\(statuses)")
    // Never disconnected: the first is a connection, the third the same connection good again.
    #expect(Array(statuses.map(\.sameConnection).prefix(3)) == [nil, nil, true], "\(statuses)")
    let failing = statuses.first { $0.condition == .failing }
    #expect(
      failing?.detail.contains("5 wheel or crank pairs in a row refused (a wheel pair of ") == true,
      "\(failing?.detail ?? "")")
    #expect(failing?.detail.contains("(at most 100 km/h)): no speed or cadence from it") == true)
    #expect(failing?.device == .speedCadenceSensor)
    #expect(factory.connects.load(ordering: .relaxed) == 1, "still connected: its other values count")
    #expect(sink.wheelSpeeds.allSatisfy { abs($0 - 2.105) < 1e-9 }, "\(sink.wheelSpeeds)")
    #expect(!sink.wheelSpeeds.isEmpty)
  }

  @Test func aStrapThatCannotBeReachedIsAbsent() {
    let sink = Collector()
    var settings = StrapSettings(address: address)
    settings.backoff = Backoff(initial: 0.05, maximum: 0.1)
    let strap = StrapSource(settings: settings) { _, _ throws(SystemError) in
      throw SystemError("connect", errno: EHOSTDOWN)
    }
    strap.start(sink: sink)
    defer { strap.stop() }
    #expect(sink.wait { !$0.statuses.isEmpty })
    #expect(sink.statuses.first?.condition == .absent)
    #expect(sink.statuses.first?.detail.contains("cannot connect to A0:9E:1A:12:34:56") == true)
    // Once a change: retries do not repeat it.
    usleep(300_000)
    #expect(sink.statuses.count == 1)
  }
}

@Suite("L2CAP LE ATT socket on this machine")
struct ATTBearerTests {
  @Test func connectingNamesTheCallAndThePeerWhenItFails() {
    // This build machine has no Bluetooth adapter (often no AF_BLUETOOTH at all); the board VM
    // connects to a real one. Either way a failure names the call and the peer, and a stop
    // ends the wait.
    let signal = StopSignal()
    let address = BluetoothAddress("C0:11:22:33:44:55")!
    #expect(address.kind == .random)
    do {
      let bearer = try ATTBearer.connect(to: address, timeout: 1, signal: signal)
      Issue.record("connected to a sensor that does not exist: \(String(describing: bearer))")
    } catch {
      #expect(error.description.contains("C0:11:22:33:44:55"))
      #expect(error.call == "socket/connect" || error.call == "connect")
    }
  }
}

extension Collector {
  fileprivate func connects() -> Int { statuses.filter { $0.condition == .available }.count }
}
