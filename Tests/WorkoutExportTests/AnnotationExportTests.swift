import Foundation
import Testing
import WorkoutCore
import WorkoutStore

@testable import WorkoutExport

/// The rider's notes from the phone (annotation events) in the formats that have a free-text
/// field for the workout: GPX's trk desc and TCX's Activity Notes, valid against their schemas;
/// in FIT, each drink and note a user_marker event at its moment, the RPE and mood the session's.
@Suite("notes from the phone in the exports")
struct AnnotationExportTests {
  func annotatedRide(into directory: ExportDirectory) throws -> WorkoutStore {
    let store = try FITActivityTests.ride(into: directory)
    let session = try #require(try store.session(id: 1))
    let start = session.startWall ?? session.openedWall
    for (offset, cause, detail, value) in [
      (60.0, "drink", "drink 500 ml", 500.0), (90, "note", "flat tyre <fixed> & on", nil),
      (4000, "rpe", "RPE 7 (very hard)", 7), (4001, "mood", "slightly pleasant", 1.0 / 3),
    ] {
      _ = try store.addEvent(
        EventRecord(
          sessionID: 1,
          event: SessionEvent(
            kind: .annotation, moment: Moment(monotonic: offset, wall: start + offset), cause: cause, detail: detail,
            value: value),
          epoch: "test"))
    }
    return store
  }

  @Test func gpxCarriesThemInItsTrackDescriptionAndStaysValid() throws {
    let directory = ExportDirectory()
    let store = try annotatedRide(into: directory)
    let written = try ExportFile.write(
      try #require(try store.session(id: 1)), from: store, format: .gpx, into: directory.path)
    let text = try String(contentsOfFile: written.path, encoding: .utf8)
    let desc = try #require(elements("desc", in: text).first)
    #expect(
      desc
        == "drink 500 ml at 22:14:23Z; flat tyre &lt;fixed&gt; &amp; on at 22:14:53Z; RPE 7 (very hard); mood slightly pleasant"
    )
    let run = try validate(
      written.path, schema: "gpx11-trackpointextension1.xsd",
      needs: ["Topografix_gpx11.xsd", "TrackPointExtensionv1.xsd"],
      in: directory)
    #expect(run.status == 0, "\(run.errors)")
  }

  @Test func tcxCarriesThemInTheActivitysNotesAndStaysValid() throws {
    let directory = ExportDirectory()
    let store = try annotatedRide(into: directory)
    let written = try ExportFile.write(
      try #require(try store.session(id: 1)), from: store, format: .tcx, into: directory.path)
    let text = try String(contentsOfFile: written.path, encoding: .utf8)
    #expect(elements("Notes", in: text).first?.hasPrefix("drink 500 ml at ") == true)
    let run = try validate(written.path, schema: "tcx2-activityextension2.xsd", needs: TCXTests.schemas, in: directory)
    #expect(run.status == 0, "\(run.errors)")
  }

  @Test func fitMarksTheDrinkAndTheNoteAndCarriesTheRPEAndMood() throws {
    let directory = ExportDirectory()
    let store = try annotatedRide(into: directory)
    let session = try #require(try store.session(id: 1))
    let written = try ExportFile.write(session, from: store, format: .fit, into: directory.path)
    let decoded = try #require(try readWithReferenceDecoders(written.path))
    #expect((decoded["errors"] as? [String])?.isEmpty == true, "\(decoded["errors"] ?? "")")
    let start = try #require(FITMessageWriter.timestamp(unix: session.startWall ?? session.openedWall))
    let markers = try #require(decoded["markers"] as? [[Any]])
    // [timestamp from the start, data]: the drink's 500 ml, the note's nothing.
    let shown = markers.map { [(($0[0] as? Int) ?? -1) - Int(start), $0[1] as? Int ?? -1] }
    #expect(shown == [[60, 500], [90, -1]], "\(markers)")
    let fit = try #require(decoded["session"] as? [String: Any])
    #expect(fit["workout_rpe"] as? Int == 70)
    #expect(fit["workout_feel"] as? Int == 67, "slightly pleasant: valence 1/3 on 0-100")
  }

  @Test func withoutNotesTheFilesHaveNoSuchField() throws {
    let directory = ExportDirectory()
    let written = try exportRide(.gpx, into: directory)
    #expect(!(try String(contentsOfFile: written.path, encoding: .utf8)).contains("<desc>"))
  }
}
