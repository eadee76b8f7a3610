import Foundation
import Testing
import WorkoutStore

@testable import WorkoutExport

/// A program's exit status and what it wrote.
struct ToolRun {
  var status: Int32
  var output: String
  var errors: String
}

/// Runs the installed program `tool` with `arguments`; nil when it is not installed. Its
/// output goes through files in `directory` (a pipe left unread could block it).
func runTool(_ tool: String, _ arguments: [String], in directory: ExportDirectory) throws -> ToolRun? {
  guard
    let path = ["/usr/bin/", "/bin/", "/usr/local/bin/", "/usr/sbin/", "/sbin/"].map({ $0 + tool })
      .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
  else { return nil }
  let outputPath = directory.path + "/." + tool + ".out"
  let errorsPath = directory.path + "/." + tool + ".err"
  for path in [outputPath, errorsPath] {
    try #require(FileManager.default.createFile(atPath: path, contents: nil), "cannot create \(path)")
  }
  defer {
    try? FileManager.default.removeItem(atPath: outputPath)
    try? FileManager.default.removeItem(atPath: errorsPath)
  }
  let process = Process()
  process.executableURL = URL(fileURLWithPath: path)
  process.arguments = arguments
  process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
  process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsPath))
  try process.run()
  process.waitUntilExit()
  return ToolRun(
    status: process.terminationStatus, output: try String(contentsOfFile: outputPath, encoding: .utf8),
    errors: try String(contentsOfFile: errorsPath, encoding: .utf8))
}

/// xmllint's verdict on `file` against the schema `schema` of .build/pyref/xsd (made by `make
/// decoders`); the test fails when xmllint or a schema is missing, never passes unchecked.
func validate(
  _ file: String, schema: String, needs files: [String], in directory: ExportDirectory
) throws
  -> ToolRun
{
  let schemas = repositoryRoot + "/.build/pyref/xsd/"
  for name in [schema] + files {
    try #require(
      FileManager.default.fileExists(atPath: schemas + name),
      "missing \(schemas + name): `make decoders` fetches the schemas (see the Makefile)")
  }
  return try #require(
    try runTool("xmllint", ["--nonet", "--noout", "--schema", schemas + schema, file], in: directory),
    "xmllint is not installed: `make deps` installs libxml2-utils")
}

/// GPSBabel's unicsv of a track file read as `format`: the header's columns, then the rows.
func gpsbabelRows(_ file: String, format: String, in directory: ExportDirectory) throws -> [[String: String]] {
  let run = try #require(
    try runTool("gpsbabel", ["-t", "-i", format, "-f", file, "-o", "unicsv", "-F", "-"], in: directory),
    "gpsbabel is not installed: `make deps` installs it")
  #expect(run.status == 0, "gpsbabel: \(run.errors)")
  let lines = run.output.split(whereSeparator: \.isNewline).map(String.init)
  guard let header = lines.first?.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
  else { return [] }
  return lines.dropFirst().map { line in
    let cells = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    return Dictionary(uniqueKeysWithValues: zip(header, cells))
  }
}

/// The stored test ride exported in `format` into `directory`: the file's path, the points
/// written, and the store.
func exportRide(
  _ format: ExportFormat, into directory: ExportDirectory
) throws -> (
  path: String, points: Int, store: WorkoutStore
) {
  let store = try FITActivityTests.ride(into: directory)
  let session = try #require(try store.session(id: 1))
  let written = try ExportFile.write(session, from: store, format: format, into: directory.path)
  return (written.path, written.points, store)
}

/// `session`'s file in `format` made from `points` (changed as a test needs) without a store.
func encode(
  _ format: ExportFormat, _ session: ExportedSession, _ points: [PointRecord]
) -> (
  text: String, points: Int
) {
  var encoder = format.encoder(session)
  var bytes = encoder.begin()
  for point in points { bytes += encoder.point(ExportPoint(point)) }
  let end = encoder.finish()
  return (String(decoding: bytes + end.tail, as: UTF8.self), end.points)
}

/// Exporting twice gives the same bytes under "<start>Z-<short UUID>.<format>", with no
/// temporary file left beside it.
func checkStableFile(_ format: ExportFormat) throws {
  let directory = ExportDirectory()
  let store = try FITActivityTests.ride(into: directory)
  let session = try #require(try store.session(id: 1))
  let out = directory.path + "/out"
  try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
  let written = try ExportFile.write(session, from: store, format: format, into: out)
  let name = "20231114-221323Z-\(session.uuid.prefix(8)).\(format.rawValue)"
  #expect(written.path == out + "/" + name)
  let bytes = try Data(contentsOf: URL(fileURLWithPath: written.path))
  #expect(try FileManager.default.contentsOfDirectory(atPath: out) == [name])
  try ExportFile.write(session, from: store, format: format, into: out)
  #expect(try Data(contentsOf: URL(fileURLWithPath: written.path)) == bytes)
  #expect(try FileManager.default.contentsOfDirectory(atPath: out) == [name])
}

/// The texts of every `<tag>…</tag>` in `text`, in order.
func elements(_ tag: String, in text: String) -> [String] {
  text.components(separatedBy: "<\(tag)>").dropFirst().compactMap {
    $0.components(separatedBy: "</\(tag)>").first
  }
}

/// How many times `part` occurs in `text`.
func occurrences(_ part: String, in text: String) -> Int {
  text.components(separatedBy: part).count - 1
}
