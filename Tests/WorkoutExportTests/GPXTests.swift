import Foundation
import Testing
import WorkoutStore

@testable import WorkoutExport

@Suite("XML text: numbers, times and escaping the same everywhere")
struct XMLTextTests {
  @Test("decimals have a fixed count of places and a '.', round half away from zero, never '-0'")
  func decimals() {
    #expect(XMLText.decimal(45.5, places: 7) == "45.5000000")
    #expect(XMLText.decimal(-7.123456789, places: 7) == "-7.1234568")
    #expect(XMLText.decimal(-0.00000001, places: 7) == "0.0000000")
    #expect(XMLText.decimal(0.05, places: 1) == "0.1")
    #expect(XMLText.decimal(1234.5, places: 0) == "1235")
    #expect(XMLText.decimal(.nan, places: 2) == nil)
    #expect(XMLText.decimal(.infinity, places: 2) == nil)
  }

  @Test("integers outside a schema's range are left out")
  func integers() {
    #expect(XMLText.integer(85.4, in: 0...254) == "85")
    #expect(XMLText.integer(254.6, in: 0...254) == nil)
    #expect(XMLText.integer(0, in: 1...255) == nil)
  }

  @Test("times in UTC with Z; milliseconds only when there is a fraction")
  func times() {
    #expect(XMLText.time(1_700_000_003) == "2023-11-14T22:13:23Z")
    #expect(XMLText.time(1_700_000_003.25) == "2023-11-14T22:13:23.250Z")
    #expect(XMLText.time(1_700_000_003.9996) == "2023-11-14T22:13:24Z")
    #expect(XMLText.time(0) == "1970-01-01T00:00:00Z")
  }

  @Test("the five reserved characters become entities; control characters XML forbids are dropped")
  func escaping() {
    #expect(XMLText.escaped("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&apos;")
    #expect(XMLText.escaped("x\u{1}y\tz é") == "xy\tz é")
  }
}

@Suite("GPX tracks of stored rides")
struct GPXTests {
  @Test("the name is the start in UTC and the session's short UUID; again, the same bytes; no temporary file left")
  func fileIsStable() throws {
    try checkStableFile(.gpx)
  }

  @Test("valid against GPX 1.1 and Garmin's TrackPointExtension v1 (xmllint), which do check the extension")
  func schemaValid() throws {
    let directory = ExportDirectory()
    let written = try exportRide(.gpx, into: directory)
    let needs = ["Topografix_gpx11.xsd", "TrackPointExtensionv1.xsd"]
    let run = try validate(written.path, schema: "gpx11-trackpointextension1.xsd", needs: needs, in: directory)
    #expect(run.status == 0, "\(run.errors)")
    // The same file with a heart rate of 0 (TrackPointExtension v1: 1…255) fails: the
    // extension's content is checked, not skipped as GPX alone would.
    let text = try String(contentsOfFile: written.path, encoding: .utf8)
    let broken = directory.path + "/broken.gpx"
    let first = try #require(text.range(of: "<gpxtpx:hr>"))
    let end = try #require(text.range(of: "</gpxtpx:hr>", range: first.upperBound..<text.endIndex))
    try text.replacingCharacters(in: first.upperBound..<end.lowerBound, with: "0")
      .write(toFile: broken, atomically: true, encoding: .utf8)
    let rejected = try validate(broken, schema: "gpx11-trackpointextension1.xsd", needs: needs, in: directory)
    #expect(rejected.status != 0 && rejected.errors.contains("hr"), "\(rejected.errors)")
  }

  @Test("GPSBabel reads every point back: position, altitude, heart rate, cadence, temperature; power is there")
  func gpsbabelReadsIt() throws {
    let directory = ExportDirectory()
    let written = try exportRide(.gpx, into: directory)
    let stored = try written.store.points(sessionID: 1).filter { $0.lat != nil && $0.lon != nil }
    #expect(stored.count > 80 && written.points == stored.count)
    let rows = try gpsbabelRows(written.path, format: "gpx", in: directory)
    #expect(rows.count == stored.count)
    for (row, point) in zip(rows, stored) {
      #expect(row["Heartrate"].flatMap { Int($0) } == point.hr)
      #expect(row["Cadence"].flatMap { Int($0) } == point.cadence.map { Int($0.rounded()) })
      #expect(row["Temperature"].flatMap { Double($0) }.map { abs($0 - point.temperature!) <= 0.05 + 1e-9 } == true)
      #expect(row["Latitude"].flatMap { Double($0) }.map { abs($0 - point.lat!) < 1e-6 } == true)
      #expect(row["Longitude"].flatMap { Double($0) }.map { abs($0 - point.lon!) < 1e-6 } == true)
      let altitude = try #require(point.altBaro ?? point.altGPS)
      #expect(row["Altitude"].flatMap { Double($0) }.map { abs($0 - altitude) <= 0.05 + 1e-9 } == true)
    }
    // GPSBabel keeps no power from GPX: read from Garmin's PowerExtension element directly.
    let text = try String(contentsOfFile: written.path, encoding: .utf8)
    #expect(elements("pwr:PowerInWatts", in: text).map { Int($0) } == stored.map(\.power))
  }

  @Test("a pause splits the track: one segment before it, one from the resume on")
  func pauseSplitsSegments() throws {
    let directory = ExportDirectory()
    let written = try exportRide(.gpx, into: directory)
    let session = try #require(try written.store.session(id: 1))
    let exported = try ExportedSession.load(session, from: written.store)
    let resume = try #require(exported.timerEvents.filter(\.start).dropFirst().first?.wall)
    let text = try String(contentsOfFile: written.path, encoding: .utf8)
    let segments = elements("trkseg", in: text)
    #expect(segments.count == 2)
    let parse = ISO8601DateFormatter()
    let times = segments.map { elements("time", in: $0).compactMap { parse.date(from: $0)?.timeIntervalSince1970 } }
    #expect(times.count == 2 && times.allSatisfy { !$0.isEmpty })
    #expect(times.first?.allSatisfy { $0 < resume } == true)
    #expect(times.last?.allSatisfy { $0 >= resume } == true)
    #expect(times.map(\.count).reduce(0, +) == written.points)

    // A point recorded while paused (with a position) stays in the segment the pause ends.
    let pause = try #require(exported.timerEvents.first { !$0.start }?.wall)
    var points = try written.store.points(sessionID: 1)
    let before = try #require(points.lastIndex { $0.wall <= pause })
    var paused = points[before]
    paused.wall = (pause + resume) / 2
    points.insert(paused, at: before + 1)
    let gpx = encode(.gpx, exported, points)
    let pausedSegments = elements("trkseg", in: gpx.text)
    #expect(pausedSegments.count == 2)
    #expect(pausedSegments.first?.contains(XMLText.time(paused.wall)) == true)
  }

  @Test("a point without a position is no track point, and is not counted")
  func pointWithoutPosition() throws {
    let directory = ExportDirectory()
    let store = try FITActivityTests.ride(into: directory)
    let session = try ExportedSession.load(try #require(try store.session(id: 1)), from: store)
    var points = try store.points(sessionID: 1)
    points[5].lat = nil
    points[5].lon = nil
    let gpx = encode(.gpx, session, points)
    #expect(gpx.points == points.count - 1)
    #expect(occurrences("<trkpt ", in: gpx.text) == points.count - 1)
    #expect(!elements("time", in: gpx.text).contains(XMLText.time(points[5].wall)))
    #expect(elements("time", in: gpx.text).contains(XMLText.time(points[6].wall)))
  }

  @Test("text from the data is escaped, and the track's type is a fixed word")
  func escapesData() throws {
    let directory = ExportDirectory()
    let store = try FITActivityTests.ride(into: directory)
    var session = try ExportedSession.load(try #require(try store.session(id: 1)), from: store)
    session.session.activity = "</name><x>&\"'"
    let gpx = encode(.gpx, session, try store.points(sessionID: 1))
    #expect(gpx.text.contains("<name>workoutd session 1 (&lt;/name&gt;&lt;x&gt;&amp;&quot;&apos;)</name>"))
    #expect(elements("type", in: gpx.text) == ["other"])
    let file = directory.path + "/escaped.gpx"
    try gpx.text.write(toFile: file, atomically: true, encoding: .utf8)
    let run = try validate(
      file, schema: "gpx11-trackpointextension1.xsd", needs: ["Topografix_gpx11.xsd", "TrackPointExtensionv1.xsd"],
      in: directory)
    #expect(run.status == 0, "\(run.errors)")
  }
}
