import Foundation
import LinuxSupport
import Synchronization
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// Collects what a source posts (the device tests' sink).
final class Collector: InputSink, Sendable {
  private let inputs = Mutex<[EngineInput]>([])
  func post(_ input: EngineInput) { inputs.withLock { $0.append(input) } }
  var all: [EngineInput] { inputs.withLock { $0 } }
  var heartRates: [Int] { all.compactMap { if case .reading(.heartRate(let bpm)) = $0 { bpm } else { nil } } }
  var statuses: [DeviceStatus] { all.compactMap { if case .device(let s) = $0 { s } else { nil } } }
  var wheelSpeeds: [Double] {
    all.compactMap { if case .reading(.wheelSpeed(let speed, _)) = $0 { speed } else { nil } }
  }

  /// Waits up to `seconds` for `condition` to hold.
  func wait(_ seconds: Double = 10, until condition: (Collector) -> Bool) -> Bool {
    let deadline = SystemClocks.monotonic() + seconds
    while SystemClocks.monotonic() < deadline {
      if condition(self) { return true }
      usleep(5_000)
    }
    return condition(self)
  }
}
