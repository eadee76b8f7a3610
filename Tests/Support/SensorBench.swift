import Foundation
import Synchronization
import WorkoutCore

/// The sink of the sensor benchmarks (`strap-bench`, `ant-bench`, `imu-bench`): counts what it
/// was handed, by kind.
public final class SensorBenchSink: InputSink {
  public let counts = Mutex<[String: Int]>([:])

  public init() {}

  public func post(_ input: EngineInput) {
    let key: String
    switch input {
    case .reading(.heartRate): key = "heart_rate"
    case .reading(.rrIntervals(let values)):
      counts.withLock { $0["rr_values", default: 0] += values.count }
      key = "rr_batches"
    case .reading(.power): key = "power"
    case .reading(.cadence): key = "cadence"
    case .reading(.motion): key = "motion"
    case .fall: key = "fall"
    case .device(let status): key = "status_\(status.condition.rawValue)"
    default: key = "other"
    }
    counts.withLock { $0[key, default: 0] += 1 }
  }

  public func post(_ input: EngineInput, at moment: Moment) { post(input) }

  /// The benchmarks' line of key=value: over `elapsed` seconds, `count` of `unit` (a message, a
  /// notification) and the measured threads' `cpu` seconds and context `switches`; then what
  /// this sink was handed.
  public func line(elapsed: Double, count: Int, unit: String, cpu: Double, switches: Int) -> String {
    func f(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }
    let perUnit = count > 0 ? cpu / Double(count) * 1e6 : 0
    return "seconds=\(f(elapsed, 1)) \(unit)s=\(count) cpu_us_per_\(unit)=\(f(perUnit, 1)) "
      + "cpu_us_per_s=\(f(cpu / elapsed * 1e6, 1)) wakeups_per_s=\(f(Double(switches) / elapsed, 2)) " + summary
  }

  /// "key=count ..." in the keys' order.
  public var summary: String {
    let counts = counts.withLock { $0 }
    return counts.keys.sorted().map { "\($0)=\(counts[$0]!)" }.joined(separator: " ")
  }
}

/// CPU seconds and context switches (all, and the voluntary ones alone: the thread's own
/// sleeps, each a wake-up after) of this process's threads named one of `names` (a device's
/// thread is named after its DeviceKind): their /proc/self/task/TID/schedstat and status.
public func threadUsage(named names: Set<String>) -> (cpu: Double, switches: Int, voluntary: Int) {
  var cpu = 0.0
  var switches = 0
  var voluntary = 0
  let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
  for tid in tasks {
    let base = "/proc/self/task/\(tid)"
    guard let comm = try? String(contentsOfFile: base + "/comm", encoding: .utf8),
      names.contains(comm.trimmingCharacters(in: .whitespacesAndNewlines))
    else {
      continue
    }
    if let schedstat = try? String(contentsOfFile: base + "/schedstat", encoding: .utf8),
      let ns = Double(schedstat.split(separator: " ").first ?? "")
    {
      cpu += ns / 1e9
    }
    if let status = try? String(contentsOfFile: base + "/status", encoding: .utf8) {
      for line in status.split(separator: "\n") where line.contains("ctxt_switches") {
        let count = Int(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
        switches += count
        if line.hasPrefix("voluntary_") { voluntary += count }
      }
    }
  }
  return (cpu, switches, voluntary)
}
