// strap-bench: what BLE sensors cost the service, per notification and per second.
//
// Two sensors as riders have them, each on its own StrapSource (the service's code: its thread,
// the GATT client, the decoders, the readings posted), behind the hardware seam: a socketpair
// of SOCK_SEQPACKET (one message one ATT PDU, as an L2CAP LE socket) with a scripted GATT peer
// on the far end (Tests/Support/GATTTestPeer), in this process on threads of their own:
// - a heart-rate strap notifying once a second (uint8 heart rate, contact, one or two RR
//   intervals), with battery level;
// - a power meter notifying four times a second (power and crank revolution data, as crank
//   meters do).
// It runs for the seconds asked (default 60) in real time, then prints one line of key=value:
// the CPU of the two StrapSource threads only (their /proc/self/task/TID/schedstat, found by
// the thread names the service gives them, after their DeviceKind), per notification and per second, the wake-ups
// (context switches) of those threads per second, and what the sink was handed.
//
// Then the engine's and the store's share: the session engine and the SQLite store (the
// service's, in a temporary directory, every second committed) record the same ride twice in
// fast forward, GPS alone and GPS with the strap's and the meter's readings (heart rate and an
// RR interval a second, power and cadence four times a second), and a second line gives the CPU
// of this thread and the bytes written per recorded second for both, and the difference per
// notification: what the sensors add to the recording path, against the figures without them.
//
// Usage: strap-bench [seconds] [recorded seconds]
import BoardLinux
import CLinuxShims
import Foundation
import LinuxSupport
import SensorProtocols
import Synchronization
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// The sensor's end of the link, on a thread of its own.
final class Peer: @unchecked Sendable {
  let descriptor: Int32
  var gatt: GATTTestPeer
  let interval: Double
  let measurement: BluetoothUUID
  let payload: @Sendable (Int) -> [UInt8]
  let stopped = Atomic<Bool>(false)
  let notified = Atomic<Int>(0)

  init(
    descriptor: Int32, gatt: GATTTestPeer, interval: Double, measurement: BluetoothUUID,
    payload: @escaping @Sendable (Int) -> [UInt8]
  ) {
    self.descriptor = descriptor
    self.gatt = gatt
    self.interval = interval
    self.measurement = measurement
    self.payload = payload
  }

  func run() {
    // Threads inherit their creator's name (the sensor's thread): renamed, so that the CPU
    // measured by name is the service's side only.
    shim_name_this_thread("gatt-peer")
    var buffer = [UInt8](repeating: 0, count: 600)
    var next = 0.0
    var count = 0
    while !stopped.load(ordering: .relaxed) {
      var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
      let now = SystemClocks.monotonic()
      let subscribed = gatt.configured.values.contains(1)
      let wait = subscribed ? max(0, Int32(((next - now) * 1000).rounded(.up))) : 50
      _ = poll(&fds, 1, wait)
      if fds[0].revents & Int16(POLLIN) != 0 {
        let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return }
        if let reply = gatt.answer(Array(buffer[..<n])) {
          _ = reply.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
      }
      if subscribed, SystemClocks.monotonic() >= next {
        if next == 0 { next = SystemClocks.monotonic() }
        let pdu = gatt.notification(measurement, payload(count))
        _ = pdu.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        count += 1
        notified.store(count, ordering: .relaxed)
        next += interval
      }
    }
  }
}

func powerMeter() -> GATTTestPeer {
  GATTTestPeer([
    .init(.genericAccess, [.init(BluetoothUUID(0x2A00), [.read], value: Array("meter".utf8))]),
    .init(
      .cyclingPowerService,
      [
        .init(.cyclingPowerMeasurement, [.notify]),
        .init(.cyclingPowerFeature, [.read], value: [0x08, 0, 0, 0]),
      ]),
    .init(.batteryService, [.init(.batteryLevel, [.read], value: [64])]),
  ])
}

let seconds = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1]) ?? 60 : 60
let sink = SensorBenchSink()
var peers: [Peer] = []
let peersLock = Mutex<[Peer]>([])

func connector(
  _ make: @escaping @Sendable (Int32) -> Peer
) -> @Sendable (StrapSettings, StopSignal) throws(SystemError) -> ATTBearer? {
  { _, _ throws(SystemError) in
    var pair: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
      throw SystemError.last("socketpair")
    }
    _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
    let peer = make(pair[1])
    peersLock.withLock { $0.append(peer) }
    Thread { peer.run() }.start()
    return ATTBearer(adopting: pair[0])
  }
}

let strap = StrapSource(
  settings: StrapSettings(address: BluetoothAddress("A0:9E:1A:12:34:56")!),
  connect: connector { fd in
    Peer(descriptor: fd, gatt: .heartRateStrap(), interval: 1, measurement: .heartRateMeasurement) { n in
      // Flags 0x16: uint8, contact detected, RR present; one RR most seconds, two every third.
      let bpm = UInt8(130 + n % 10)
      let rr = UInt16(60.0 / Double(bpm) * 1024)
      var value: [UInt8] = [0x16, bpm, UInt8(rr & 0xFF), UInt8(rr >> 8)]
      if n % 3 == 0 { value += [UInt8(rr & 0xFF), UInt8(rr >> 8)] }
      return value
    }
  })
var meterSettings = StrapSettings(address: BluetoothAddress("C1:00:00:00:00:01")!)
meterSettings.device = .powerMeter
let meter = StrapSource(
  settings: meterSettings,
  connect: connector { fd in
    Peer(descriptor: fd, gatt: powerMeter(), interval: 0.25, measurement: .cyclingPowerMeasurement) { n in
      // Flags 0x0020: crank revolution data; 250 W; 90 rpm (a revolution each 2/3 s).
      let revolutions = UInt16(truncatingIfNeeded: n * 3 / 8)
      let event = UInt16(truncatingIfNeeded: Int(Double(revolutions) * 2.0 / 3.0 * 1024))
      return [
        0x20, 0x00, 0xFA, 0x00, UInt8(revolutions & 0xFF), UInt8(revolutions >> 8), UInt8(event & 0xFF),
        UInt8(event >> 8),
      ]
    }
  })

strap.start(sink: sink)
meter.start(sink: sink)
// Connected and subscribed: the first second is discovery, not counted.
usleep(1_500_000)
let before = threadUsage(named: ["heartRateStrap", "powerMeter"])
let notifiedBefore = peersLock.withLock { $0.map { $0.notified.load(ordering: .relaxed) }.reduce(0, +) }
let started = SystemClocks.monotonic()
usleep(useconds_t(seconds * 1_000_000))
let after = threadUsage(named: ["heartRateStrap", "powerMeter"])
let elapsed = SystemClocks.monotonic() - started
let notified = peersLock.withLock { $0.map { $0.notified.load(ordering: .relaxed) }.reduce(0, +) } - notifiedBefore
strap.stop()
meter.stop()
peersLock.withLock { $0.forEach { $0.stopped.store(true, ordering: .relaxed) } }

print(
  sink.line(
    elapsed: elapsed, count: notified, unit: "notification", cpu: after.cpu - before.cpu,
    switches: after.switches - before.switches))

// MARK: - The engine's and the store's share

/// Bytes this process has had written to storage (/proc/self/io write_bytes).
func bytesWritten() -> Double {
  let io = (try? String(contentsOfFile: "/proc/self/io", encoding: .utf8)) ?? ""
  for line in io.split(separator: "\n") where line.hasPrefix("write_bytes:") {
    return Double(line.split(separator: " ").last ?? "") ?? 0
  }
  return 0
}

func threadCPU() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Records `seconds` of a ride (a 1 Hz fix, and with `sensors` the strap's and the meter's
/// readings) through the engine into a fresh store; CPU seconds and bytes written per recorded
/// second, and the sensor notifications it was handed.
func recordingShare(seconds: Int, sensors: Bool) throws -> (cpu: Double, bytes: Double, notifications: Int) {
  let directory = NSTemporaryDirectory() + "strap-bench-\(getpid())-\(sensors)"
  try? FileManager.default.removeItem(atPath: directory)
  try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(atPath: directory) }
  let (store, _) = try WorkoutStore.open(at: directory + "/workoutd.db", wallNow: 1_700_000_000)
  var engine = SessionEngine(settings: EngineSettings(), nextSessionID: 1)
  var now = Moment(monotonic: 1000, wall: 1_700_000_000)
  func clock() -> ClockStamp { ClockStamp(epoch: "bench", moment: now, wallTrusted: true) }
  func send(_ input: EngineInput) throws -> [EngineCommand] { engine.handle(input, at: now).commands }
  try store.write(try send(.request(.start, .gpio)), clock: clock())
  now = now.advanced(by: engine.settings.countdown)
  try store.write(try send(.wakeup), clock: clock())
  var position = GeoPoint(latitude: 45.5, longitude: 7.2)
  var notifications = 0
  let cpuBefore = threadCPU()
  let bytesBefore = bytesWritten()
  for second in 0..<seconds {
    var commands: [EngineCommand] = []
    if sensors {
      // The meter four times a second, the strap once.
      for quarter in 0..<4 {
        now = now.advanced(by: 0.25)
        commands += try send(.reading(.power(watts: 240 + (second + quarter) % 20)))
        commands += try send(.reading(.cadence(rpm: 90)))
        notifications += 1
      }
      commands += try send(.reading(.heartRate(bpm: 130 + second % 10)))
      commands += try send(.reading(.rrIntervals([UInt16(60.0 / Double(130 + second % 10) * 1024)])))
      notifications += 1
    } else {
      now = now.advanced(by: 1)
    }
    position = position.moved(eastBy: 8)
    commands += try send(
      .reading(
        .gps(
          GPSFix(
            dimension: .threeD, latitude: position.latitude, longitude: position.longitude, altitude: 300,
            speed: 8, horizontalError: 3))))
    commands += try send(.tick)
    try store.write(commands, clock: clock())
  }
  let cpu = threadCPU() - cpuBefore
  let bytes = bytesWritten() - bytesBefore
  return (cpu / Double(seconds), bytes / Double(seconds), notifications)
}

let recorded = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 600 : 600
do {
  // Once each to warm up (page cache, the first statements prepared), then measured.
  _ = try recordingShare(seconds: 30, sensors: false)
  _ = try recordingShare(seconds: 30, sensors: true)
  let without = try recordingShare(seconds: recorded, sensors: false)
  let with = try recordingShare(seconds: recorded, sensors: true)
  let perNotification =
    with.notifications > 0 ? (with.cpu - without.cpu) * Double(recorded) / Double(with.notifications) : 0
  print(
    String(
      format:
        "recorded_seconds=%d engine_store_us_per_s_gps_only=%.1f engine_store_us_per_s_with_sensors=%.1f "
        + "engine_store_us_per_notification=%.1f bytes_per_s_gps_only=%.0f bytes_per_s_with_sensors=%.0f",
      recorded, without.cpu * 1e6, with.cpu * 1e6, perNotification * 1e6, without.bytes, with.bytes))
} catch {
  print("strap-bench: the recording share could not be measured: \(error)")
  exit(1)
}
