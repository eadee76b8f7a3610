import Foundation
import Testing
import WorkoutCore
import WorkoutExport
import WorkoutStore

@Suite("CSV of stored rides")
struct CSVTests {
  @Test("ISO 8601 times in UTC, to the second or the millisecond, before 1970 too")
  func times() {
    #expect(ExportTime.iso8601(1_700_000_003.25) == "2023-11-14T22:13:23Z")
    #expect(ExportTime.iso8601(1_700_000_003.25, milliseconds: true) == "2023-11-14T22:13:23.250Z")
    #expect(ExportTime.iso8601(-0.5, milliseconds: true) == "1969-12-31T23:59:59.500Z")
  }

  @Test("a header with units, a row per point with its values, every RR interval; the same bytes again")
  func rowsAreThePoints() throws {
    let directory = ExportDirectory()
    let store = try FITActivityTests.ride(into: directory)
    let session = try #require(try store.session(id: 1))
    let written = try ExportFile.write(session, from: store, format: .csv, into: directory.path)
    #expect(written.name.hasSuffix("-\(session.uuid.prefix(8)).csv"))
    let bytes = try Data(contentsOf: URL(fileURLWithPath: written.path))
    let text = String(decoding: bytes, as: UTF8.self)
    #expect(text.hasSuffix("\r\n"))
    let lines = text.components(separatedBy: "\r\n").dropLast()
    #expect(lines.first == CSVActivityWriter.columns.joined(separator: ","))
    let units = ["_s", "_m", "_deg", "_m_s", "_pa", "_c", "_pct", "_bpm", "_ms", "_rpm", "_w", "_m_s2"]
    let unitless = CSVActivityWriter.columns.filter { name in !units.contains { name.hasSuffix($0) } }
    #expect(unitless == ["time_utc", "fix"], "a unit in every name but the time's and the fix's")
    let points = try store.points(sessionID: 1)
    #expect(lines.count == points.count + 1 && written.points == points.count)
    #expect(points.contains { $0.vibration != nil && $0.peakAcceleration != nil })
    let column = Dictionary(uniqueKeysWithValues: CSVActivityWriter.columns.enumerated().map { ($1, $0) })
    var intervals: [Double] = []
    for (line, point) in zip(lines.dropFirst(), points) {
      let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
      #expect(fields.count == CSVActivityWriter.columns.count)
      #expect(fields[column["time_utc"]!] == ExportTime.iso8601(point.wall, milliseconds: true))
      #expect(Double(fields[column["latitude_deg"]!]).map { abs($0 - point.lat!) < 1e-7 } == true)
      #expect(Int(fields[column["heart_rate_bpm"]!]) == point.hr)
      #expect(Int(fields[column["power_w"]!]) == point.power)
      #expect(Double(fields[column["distance_m"]!]).map { abs($0 - point.distance) <= 0.005 } == true)
      #expect(fields[column["fix"]!] == "3d")
      // No barometer in this ride: its columns are empty, never 0.
      #expect(fields[column["pressure_pa"]!].isEmpty && fields[column["baro_altitude_m"]!].isEmpty)
      // The road's feel, to 3 decimals (the last two columns).
      #expect(fields[column["vibration_m_s2"]!] == point.vibration.map { String(format: "%.3f", $0) })
      #expect(fields[column["peak_acceleration_m_s2"]!] == point.peakAcceleration.map { String(format: "%.3f", $0) })
      #expect(CSVActivityWriter.columns.suffix(2) == ["vibration_m_s2", "peak_acceleration_m_s2"])
      intervals += fields[column["rr_intervals_ms"]!].split(separator: ";").compactMap { Double($0) }
    }
    let stored = try store.rrIntervals(sessionID: 1).map(\.milliseconds)
    #expect(intervals.count == stored.count)
    #expect(zip(intervals, stored).allSatisfy { abs($0 - $1) < 0.0005 })
    try ExportFile.write(session, from: store, format: .csv, into: directory.path)
    #expect(try Data(contentsOf: URL(fileURLWithPath: written.path)) == bytes)
  }

  @Test("Python's csv module reads it strictly: the same rows and fields")
  func pythonReadsIt() throws {
    let python = repositoryRoot + "/.build/pyref/bin/python"
    guard FileManager.default.isExecutableFile(atPath: python) else {
      Issue.record("no reference decoders in \(python): make test makes them")
      return
    }
    let directory = ExportDirectory()
    let store = try FITActivityTests.ride(into: directory)
    let session = try #require(try store.session(id: 1))
    let written = try ExportFile.write(session, from: store, format: .csv, into: directory.path)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = [
      "-c",
      """
      import csv, sys
      with open(sys.argv[1], newline="") as f:
          rows = list(csv.DictReader(f, strict=True))
      assert all(None not in row and len(row) == 21 for row in rows), "ragged rows"
      print(len(rows), sum(int(r["heart_rate_bpm"]) for r in rows), sum(r["vibration_m_s2"] != "" for r in rows))
      """,
      written.path,
    ]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    let points = try store.points(sessionID: 1)
    let felt = points.filter { $0.vibration != nil }.count
    #expect(felt > 0)
    #expect(output == "\(points.count) \(points.compactMap(\.hr).reduce(0, +)) \(felt)\n")
  }
}
