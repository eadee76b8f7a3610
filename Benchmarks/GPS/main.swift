// gps-bench: our per-fix cost on a gpsd replay, to compare with gpxlogger's on the same replay.
//
// Connects to gpsd like GPSDSource does (GPSDConnection: a non-blocking socket, polled) and,
// for every report, does what the board does for a fix: decode the TPV (GPSDJSON), map it
// (GPSDMapping), judge it (FixQualityFilter), and run the accepted ones through the Kalman filter and the distance accumulator (GPSTrack). It exits when gpsd closes
// the connection and prints one line of `key=value` pairs:
// - process_cpu_s: the whole process's CPU time (getrusage), what gpxlogger is compared on;
// - connected_cpu_s: the same from the moment it connected (without start-up and retries);
// - pure_us_per_fix: our own code alone (mapping + acceptance + Kalman + distance), timed by
//   running the reports of this replay through it again, 50 times, after the replay.
// (Timing each report with a thread CPU clock would cost more than the work on a machine where
// that clock is a system call.)
//
// Usage: gps-bench [host] [port]        (Benchmarks/GPS/bench.py runs it against gpsfake)
import BoardLinux
import SensorProtocols
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

func clock(_ id: clockid_t) -> Double {
  var ts = timespec()
  clock_gettime(id, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func processCPU() -> Double {
  var usage = rusage()
  getrusage(RUSAGE_SELF.rawValue, &usage)
  return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// What the board does with one TPV; returns whether a fix was accepted.
@inline(never)
func handle(
  _ snapshot: TPVSnapshot, filter: inout FixQualityFilter, track: inout GPSTrack, at monotonic: Double
) -> Bool {
  guard case .fix(let fix) = GPSDMapping.report(from: snapshot),
    case .accepted(let clean) = filter.evaluate(fix)
  else { return false }
  track.add(clean, at: monotonic)
  return true
}

let arguments = CommandLine.arguments
let host = arguments.count > 1 ? arguments[1] : "127.0.0.1"
let port = arguments.count > 2 ? arguments[2] : "2947"

let connection = GPSDConnection()
// gpsd may not be listening yet: retry for up to 10 s.
var connected = false
for _ in 0..<500 {
  do {
    try connection.open(host: host, port: port)
    connected = true
    break
  } catch {
    usleep(20_000)
  }
}
guard connected else {
  print("gps-bench: cannot connect to gpsd at \(host):\(port)")
  exit(2)
}
let cpuAtConnect = processCPU()

var filter = FixQualityFilter()
var track = GPSTrack()
var reports = 0
var snapshots: [TPVSnapshot] = []
snapshots.reserveCapacity(8_192)
var accepted = 0
var lastReport = clock(CLOCK_MONOTONIC)

while true {
  let message: GPSDMessage?
  do {
    message = try connection.read()
  } catch {
    break
  }
  let now = clock(CLOCK_MONOTONIC)
  guard let message else {
    if now - lastReport > 5 { break }
    // Nothing buffered: wait for gpsd (the socket is non-blocking), as the service does.
    var socket = pollfd(fd: connection.fileDescriptor, events: Int16(POLLIN), revents: 0)
    _ = poll(&socket, 1, 250)
    continue
  }
  lastReport = now
  reports += 1
  if case .tpv(let snapshot) = message {
    snapshots.append(snapshot)
    if handle(snapshot, filter: &filter, track: &track, at: now) { accepted += 1 }
  }
}
let cpuAtEnd = processCPU()

// Our own code alone, on this replay's reports, many times over.
let rounds = 50
var pureAccepted = 0
let pureStart = clock(CLOCK_PROCESS_CPUTIME_ID)
for _ in 0..<rounds {
  var f = FixQualityFilter()
  var t = GPSTrack()
  for (i, snapshot) in snapshots.enumerated() where handle(snapshot, filter: &f, track: &t, at: Double(i) * 0.1) {
    pureAccepted += 1
  }
}
let pureSeconds = clock(CLOCK_PROCESS_CPUTIME_ID) - pureStart
let positions = snapshots.filter { $0.mode >= 2 }.count

print(
  "reports=\(reports) tpv=\(snapshots.count) position_reports=\(positions) accepted=\(accepted)"
    + " process_cpu_s=\(cpuAtEnd) connected_cpu_s=\(cpuAtEnd - cpuAtConnect)"
    + " pure_us_per_fix=\(positions > 0 ? pureSeconds / Double(rounds * positions) * 1e6 : 0)"
    + " pure_accepted=\(pureAccepted / rounds) distance_m=\(track.distance)")
