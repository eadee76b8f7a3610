import Foundation
import Testing
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

@testable import WorkoutExport

/// A file streamed (the phone page's downloads) is the file written, byte for byte, made as
/// the points are read and never staged: FIT, whose header is known only at its end, is
/// counted first and then given with it in place.
@Suite("exports streamed as they are made")
struct ExportStreamTests {
  /// A ride of 700 s (three pages of points) with a pause, still recording.
  static func ride(into directory: ExportDirectory) throws -> (WorkoutStore, EngineHarness) {
    let (store, _) = try WorkoutStore.open(at: directory.path + "/workoutd.db", wallNow: 0)
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 45.5, longitude: 7.25)
    h.ride(seconds: 400, speed: 8, heartRate: 140, from: &position)
    _ = h.press(.pause)
    h.advance(by: 30)
    _ = h.press(.resume)
    h.ride(seconds: 300, speed: 8, heartRate: 150, from: &position)
    try store.write(h.commands, clock: FITActivityTests.clock)
    h.commands = []
    return (store, h)
  }

  @Test("each format streamed is the file written, in pieces as the pages are read")
  func streamedIsWritten() throws {
    let directory = ExportDirectory()
    let (store, _) = try Self.ride(into: directory)
    let source = try ExportFile.Source.load(try #require(try store.session(id: 1)), from: store)
    for format in ExportFormat.allCases {
      let written = try ExportFile.write(source, from: store, format: format, into: directory.path)
      var pieces: [[UInt8]] = []
      let given = try ExportFile.stream(source, from: store, format: format) { pieces.append($0) }
      let file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: written.path)))
      #expect(Array(pieces.joined()) == file, "\(format)")
      #expect(given == file.count && Int64(given) == written.bytes, "\(format)")
      #expect(pieces.count > 3, "\(format): a piece per page, not the whole file at once")
    }
  }

  @Test("a point recorded while a FIT is streamed is left out, as the header counted it")
  func pointRecordedMeanwhile() throws {
    let directory = ExportDirectory()
    var (store, h) = try Self.ride(into: directory)
    let source = try ExportFile.Source.load(try #require(try store.session(id: 1)), from: store)
    let before = try ExportFile.write(source, from: store, format: .fit, into: directory.path)
    var position = GeoPoint(latitude: 45.6, longitude: 7.25)
    h.ride(seconds: 1, speed: 8, from: &position)
    var calls = 0
    var bytes: [UInt8] = []
    try ExportFile.stream(
      source, from: store, format: .fit,
      cancelled: {
        // The first making asks at its start and its three pages; then the second starts.
        calls += 1
        if calls == 5 { try? store.write(h.commands, clock: FITActivityTests.clock) }
        return false
      }
    ) { bytes += $0 }
    #expect(try store.pointCount(sessionID: 1) == before.points + 1)
    #expect(bytes == (try [UInt8](Data(contentsOf: URL(fileURLWithPath: before.path)))))
  }

  @Test("stopped: the stream ends with an error before its last bytes")
  func cancelled() throws {
    let directory = ExportDirectory()
    let (store, _) = try Self.ride(into: directory)
    let source = try ExportFile.Source.load(try #require(try store.session(id: 1)), from: store)
    for format in [ExportFormat.fit, .gpx] {
      var pages = 0
      var given = 0
      #expect(throws: ExportError.self) {
        try ExportFile.stream(
          source, from: store, format: format,
          cancelled: {
            pages += 1
            return pages > 2
          }
        ) { given += $0.count }
      }
      #expect(given == 0 || format == .gpx, "FIT gives nothing before its header is known")
    }
  }
}
