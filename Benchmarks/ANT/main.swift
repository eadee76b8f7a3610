// ant-bench: what ANT+ sensors cost the service, per message and per second.
//
// One USB ANT stick with two sensors as riders have them, on the service's own ANTStickSource
// (its one thread: the stick's set-up, a channel per sensor, the decoders, the readings
// posted), behind the hardware seam: an ANTTransport over a stream socketpair, as usbfs gives
// the stick's bulk endpoints, with a scripted stick on the far end on a thread of its own
// (Tests/Support/ANTScriptedStick). It answers the set-up as a real stick does (Startup,
// Capabilities, a Channel Response to each command), then sends each channel's broadcast data
// messages with the sender's extended channel ID, at the channel's period, in real time:
// - a heart-rate strap (device type 120, 8070/32768 s, about 4.06 Hz): page 4, the previous
//   beat's time with each, about 140 bpm, the page toggle flipped every 4 messages;
// - a power meter (device type 11, 8182/32768 s, about 4.0 Hz): page 0x10, about 200 W at
//   about 90 rpm.
// It runs for the seconds asked (default 60), then prints one line of key=value: the CPU of the
// stick's thread only (its /proc/self/task/TID/schedstat, found by the name the service gives
// it, after its DeviceKind: "antStick"), per message received and per second, that thread's
// wake-ups (context switches) per second, and what the sink was handed.
//
// Usage: ant-bench [seconds]
import BoardLinux
import Foundation
import LinuxSupport
import SensorProtocols
import Synchronization
import WorkoutCore
import WorkoutTestSupport

#if canImport(Glibc)
  import Glibc
#endif

let seconds = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1]) ?? 60 : 60

let strapID = ANTChannelID(deviceNumber: 4242, deviceType: ANTProfile.heartRate.deviceType, transmissionType: 1)
let meterID = ANTChannelID(deviceNumber: 5151, deviceType: ANTProfile.bicyclePower.deviceType, transmissionType: 5)

/// The strap's n-th message: page 4, beats at 138-142 bpm, their times in 1/1024 s.
let strap = ANTScriptedStick.Sensor(
  channel: 0, id: strapID, period: Double(ANTProfile.heartRate.channelPeriod) / 32768
) { n in
  let t = Double(n) * Double(ANTProfile.heartRate.channelPeriod) / 32768
  let bpm = 140 + 2 * sin(t / 7)
  let beat = 60 / bpm
  let beats = Int(t / beat)
  func ticks(_ seconds: Double) -> UInt16 { UInt16(truncatingIfNeeded: Int((seconds * 1024).rounded())) }
  return ANTPages.heartRatePrevious(
    bpm: UInt8(bpm.rounded()), count: UInt8(truncatingIfNeeded: beats), time: ticks(Double(beats) * beat),
    previous: ticks(Double(beats - 1) * beat), toggle: (n / 4) % 2 == 1)
}

/// The meter's n-th message: page 0x10, 195-205 W, 88-92 rpm, one event a message.
let meter = ANTScriptedStick.Sensor(
  channel: 1, id: meterID, period: Double(ANTProfile.bicyclePower.channelPeriod) / 32768
) { n in
  let t = Double(n) * Double(ANTProfile.bicyclePower.channelPeriod) / 32768
  let watts = 200 + 5 * sin(t / 7)
  // The accumulated power of n events at about this power.
  let accumulated = UInt16(truncatingIfNeeded: Int((200 * Double(n)).rounded()) + Int(watts.rounded()) - 200)
  return ANTPages.powerOnly(
    count: UInt8(truncatingIfNeeded: n), accumulated: accumulated, watts: UInt16(watts.rounded()),
    rpm: UInt8((90 + 2 * sin(t / 5)).rounded()))
}

let sink = SensorBenchSink()
let sticks = Mutex<[ANTScriptedStick]>([])
let settings = ANTStickSettings(
  networkKey: ANTNetworkKey([1, 2, 3, 4, 5, 6, 7, 8])!,
  sensors: [
    ANTSensor(profile: .heartRate, deviceNumber: strapID.deviceNumber, transmissionType: strapID.transmissionType),
    ANTSensor(profile: .bicyclePower, deviceNumber: meterID.deviceNumber, transmissionType: meterID.transmissionType),
  ])
let source = ANTStickSource(settings: settings) { _ throws(SystemError) in
  let (stick, transport) = try ANTScriptedStick.plugIn([strap, meter])
  sticks.withLock { $0.append(stick) }
  return transport
} onPaired: { _ in
}

func sent() -> Int { sticks.withLock { $0.map { $0.sent.load(ordering: .relaxed) }.reduce(0, +) } }

source.start(sink: sink)
// Set up and both channels sending: the first second is the set-up, not counted.
usleep(1_500_000)
let before = threadUsage(named: ["antStick"])
let sentBefore = sent()
let started = SystemClocks.monotonic()
usleep(useconds_t(seconds * 1_000_000))
let after = threadUsage(named: ["antStick"])
let elapsed = SystemClocks.monotonic() - started
let messages = sent() - sentBefore
source.stop()
sticks.withLock { $0.forEach { $0.stop() } }

print(
  sink.line(
    elapsed: elapsed, count: messages, unit: "message", cpu: after.cpu - before.cpu,
    switches: after.switches - before.switches))
if messages == 0 || after.cpu == 0 {
  print("ant-bench: no message reached the stick's thread, or no thread named antStick was found")
  exit(1)
}
