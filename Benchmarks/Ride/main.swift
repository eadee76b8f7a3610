import Foundation
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

// make bench (Benchmarks/downloads.py): stores the downloads' test's 12-hour ride
// (`EngineHarness.twelveHourRide`) as session 1 of a new database in the state directory given,
// as the service's store writes it, for the release build to serve.
//
// Usage: ride-bench STATE_DIR
guard CommandLine.arguments.count == 2 else {
  FileHandle.standardError.write(Data("usage: ride-bench STATE_DIR\n".utf8))
  exit(2)
}
let database = CommandLine.arguments[1] + "/workoutd.db"
do {
  try FileManager.default.createDirectory(atPath: CommandLine.arguments[1], withIntermediateDirectories: true)
  let (store, _) = try WorkoutStore.open(at: database, wallNow: 0)
  try store.write(
    EngineHarness.twelveHourRide(),
    clock: ClockStamp(epoch: "t", moment: Moment(monotonic: 0, wall: 0), wallTrusted: true))
} catch {
  FileHandle.standardError.write(Data("ride-bench: \(error)\n".utf8))
  exit(1)
}
