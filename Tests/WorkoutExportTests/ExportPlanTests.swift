import Foundation
import Testing
import WorkoutStore

@testable import WorkoutExport

/// The one export plan of the service's exporter and `workoutctl export`: what is not yet in a
/// destination, each session's formats in a row, and what became of each file.
@Suite("the export plan")
struct ExportPlanTests {
  struct Stop: Error {}

  @Test func listsEachSessionsMissingFormatsTogether() throws {
    let directory = ExportDirectory()
    let store = try FITActivityTests.ride(into: directory)
    var plan = ExportPlan.notExported(formats: [.fit, .gpx, .csv], destination: "/x", in: store)
    #expect(plan.jobs == [ExportPlan.Job(sessionID: 1, formats: [.fit, .gpx, .csv])])
    #expect(plan.unlisted.isEmpty)
    try store.recordExport(
      ExportRecord(
        sessionID: 1, format: "gpx", destination: "/x", name: "a.gpx", bytes: 1, points: 1, writtenWall: 0,
        sourceEventID: try store.latestEventID(sessionID: 1)))
    plan = ExportPlan.notExported(formats: [.fit, .gpx, .csv], destination: "/x", in: store)
    #expect(plan.jobs == [ExportPlan.Job(sessionID: 1, formats: [.fit, .csv])])
    #expect(ExportPlan.notExported(formats: [.gpx], destination: "/x", in: store).jobs.isEmpty)
    #expect(ExportPlan.notExported(formats: [.gpx], destination: "/y", in: store).jobs.count == 1)
  }

  @Test func writesEachFileWithItsRowAndPassesOverASessionThatIsGone() throws {
    let directory = ExportDirectory()
    let store = try FITActivityTests.ride(into: directory)
    var told: [(ExportFile.Written, ExportRecord)] = []
    ExportPlan(sessionIDs: [1, 99], formats: [.fit, .csv]).write(
      from: store, into: directory.path, destination: "/x", wallNow: { 1_800_000_000 }
    ) {
      guard case .written(let file, let entry) = $0 else {
        Issue.record("\($0)")
        return
      }
      told.append((file, entry))
    }
    #expect(told.map(\.1.format) == ["fit", "csv"])
    for (file, entry) in told {
      #expect(FileManager.default.fileExists(atPath: file.path))
      #expect(entry.sessionID == 1 && entry.destination == "/x" && entry.writtenWall == 1_800_000_000)
      #expect(entry.name == file.name && entry.bytes == file.bytes && entry.points == file.points)
      #expect(entry.sourceEventID == (try store.latestEventID(sessionID: 1)))
    }
  }

  @Test func aFailureIsToldForEachFileAndStopsTheRunOnlyWhenThrown() throws {
    let directory = ExportDirectory()
    let store = try FITActivityTests.ride(into: directory)
    let missing = directory.path + "/not-made"
    let plan = ExportPlan(sessionIDs: [1], formats: [.fit, .gpx])
    var failed: [ExportFormat] = []
    plan.write(from: store, into: missing, destination: "/x", wallNow: { 0 }) {
      guard case .failed(let sessionID, let format, _) = $0 else {
        Issue.record("\($0)")
        return
      }
      #expect(sessionID == 1)
      failed.append(format)
    }
    #expect(failed == [.fit, .gpx], "the run goes on past a failure")
    var told = 0
    #expect(throws: Stop.self) {
      try plan.write(from: store, into: missing, destination: "/x", wallNow: { 0 }) { _ in
        told += 1
        throw Stop()
      }
    }
    #expect(told == 1, "a failure thrown ends the run")
  }
}
