import Foundation
import Testing
import WorkoutStore

@testable import WorkoutExport

@Suite("TCX activities of stored rides")
struct TCXTests {
  static let schemas = ["GarminTrainingCenterDatabase_v2.xsd", "ActivityExtensionv2.xsd"]

  @Test("the name is the start in UTC and the session's short UUID; again, the same bytes; no temporary file left")
  func fileIsStable() throws {
    try checkStableFile(.tcx)
  }

  @Test("valid against TCX v2 and Garmin's ActivityExtension v2 (xmllint), which do check the extension")
  func schemaValid() throws {
    let directory = ExportDirectory()
    let written = try exportRide(.tcx, into: directory)
    let run = try validate(written.path, schema: "tcx2-activityextension2.xsd", needs: Self.schemas, in: directory)
    #expect(run.status == 0, "\(run.errors)")
    // The same file with a negative power (ActivityExtension v2: unsignedShort) fails: the
    // extension's content is checked, not skipped as TCX alone would.
    let text = try String(contentsOfFile: written.path, encoding: .utf8)
    let broken = directory.path + "/broken.tcx"
    let first = try #require(text.range(of: "<ns3:Watts>"))
    let end = try #require(text.range(of: "</ns3:Watts>", range: first.upperBound..<text.endIndex))
    try text.replacingCharacters(in: first.upperBound..<end.lowerBound, with: "-1")
      .write(toFile: broken, atomically: true, encoding: .utf8)
    let rejected = try validate(broken, schema: "tcx2-activityextension2.xsd", needs: Self.schemas, in: directory)
    #expect(rejected.status != 0 && rejected.errors.contains("Watts"), "\(rejected.errors)")
  }

  @Test("GPSBabel reads every point back: position, heart rate, cadence, power")
  func gpsbabelReadsIt() throws {
    let directory = ExportDirectory()
    let written = try exportRide(.tcx, into: directory)
    let stored = try written.store.points(sessionID: 1)
    #expect(stored.count > 80 && written.points == stored.count)
    let rows = try gpsbabelRows(written.path, format: "gtrnctr", in: directory)
    #expect(rows.count == stored.count)
    for (row, point) in zip(rows, stored) {
      #expect(row["Heartrate"].flatMap { Int($0) } == point.hr)
      #expect(row["Cadence"].flatMap { Int($0) } == point.cadence.map { Int($0.rounded()) })
      #expect(row["Power"].flatMap { Double($0) }.map { Int($0) } == point.power)
      #expect(row["Latitude"].flatMap { Double($0) }.map { abs($0 - point.lat!) < 1e-6 } == true)
    }
  }

  @Test("one Lap per stored lap with its time and distance; a pause starts a new Track in its lap")
  func lapsAndTracks() throws {
    let directory = ExportDirectory()
    let written = try exportRide(.tcx, into: directory)
    let laps = try written.store.laps(sessionID: 1)
    #expect(laps.count == 2)
    let text = try String(contentsOfFile: written.path, encoding: .utf8)
    #expect(text.contains("<Activity Sport=\"Biking\">"))
    let lapTexts = Array(text.components(separatedBy: "<Lap StartTime=\"").dropFirst())
    #expect(lapTexts.count == laps.count)
    let parse = ISO8601DateFormatter()
    parse.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    let parseWhole = ISO8601DateFormatter()
    func unix(_ text: String) -> Double? {
      (parse.date(from: text) ?? parseWhole.date(from: text))?.timeIntervalSince1970
    }
    for (lapText, lap) in zip(lapTexts, laps) {
      let start = lapText.prefix { $0 != "\"" }
      #expect(unix(String(start)).map { abs($0 - lap.startWall) < 0.001 } == true)
      let time = try #require(elements("TotalTimeSeconds", in: lapText).first.flatMap { Double($0) })
      #expect(abs(time - lap.timer) <= 0.0005)
      let distance = try #require(elements("DistanceMeters", in: lapText).first.flatMap { Double($0) })
      #expect(abs(distance - lap.distance) <= 0.005)
      #expect(elements("TriggerMethod", in: lapText) == ["Manual"])
      // Every point of the lap lies within it.
      let times = elements("Time", in: lapText).compactMap(unix)
      #expect(!times.isEmpty && times.allSatisfy { $0 >= lap.startWall && $0 <= lap.endWall })
    }
    // The pause is in the first lap: two tracks there, one in the second.
    #expect(lapTexts.map { occurrences("<Track>", in: $0) } == [2, 1])
    #expect(occurrences("<Trackpoint>", in: text) == written.points)
    let session = try #require(try written.store.session(id: 1))
    let serial = ExportedSession(session: session, summary: nil, laps: [], events: []).serial
    #expect(elements("UnitId", in: text) == ["\(serial)"])
  }

  @Test("a point without a position is a Trackpoint without Position, still valid")
  func pointWithoutPosition() throws {
    let directory = ExportDirectory()
    let store = try FITActivityTests.ride(into: directory)
    let session = try ExportedSession.load(try #require(try store.session(id: 1)), from: store)
    var points = try store.points(sessionID: 1)
    points[5].lat = nil
    points[5].lon = nil
    let tcx = encode(.tcx, session, points)
    #expect(tcx.points == points.count)
    let trackpoints = elements("Trackpoint", in: tcx.text)
    #expect(trackpoints.count == points.count)
    #expect(!trackpoints[5].contains("<Position>") && trackpoints[6].contains("<Position>"))
    #expect(occurrences("<Position>", in: tcx.text) == points.count - 1)
    let file = directory.path + "/no-position.tcx"
    try tcx.text.write(toFile: file, atomically: true, encoding: .utf8)
    let run = try validate(file, schema: "tcx2-activityextension2.xsd", needs: Self.schemas, in: directory)
    #expect(run.status == 0, "\(run.errors)")
  }

  @Test("an activity the schema has no sport for is Other; a session without laps gets one lap")
  func otherSportAndNoLaps() throws {
    let directory = ExportDirectory()
    let store = try FITActivityTests.ride(into: directory)
    var session = try ExportedSession.load(try #require(try store.session(id: 1)), from: store)
    session.session.activity = "</Id>&\"'"
    session.laps = []
    let tcx = encode(.tcx, session, try store.points(sessionID: 1))
    #expect(tcx.text.contains("<Activity Sport=\"Other\">"))
    #expect(occurrences("<Lap StartTime=", in: tcx.text) == 1)
    #expect(
      elements("TotalTimeSeconds", in: tcx.text).first.flatMap { Double($0) }.map {
        abs($0 - session.session.timer) <= 0.0005
      } == true)
    let file = directory.path + "/other.tcx"
    try tcx.text.write(toFile: file, atomically: true, encoding: .utf8)
    let run = try validate(file, schema: "tcx2-activityextension2.xsd", needs: Self.schemas, in: directory)
    #expect(run.status == 0, "\(run.errors)")
  }
}
