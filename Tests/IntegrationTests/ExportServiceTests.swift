import Foundation
import GRDB
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// The service exports each session as it ends, into `exports/` in the state directory, and
/// records what it wrote; `workoutctl export` rebuilds the same bytes, and `--new` writes only
/// what a directory has not had.
@Suite(.serialized)
struct ExportServiceTests {
  /// The first 10 minutes of the bundled ride, then stop.
  static func shortRide(in dir: ServiceDirectory) throws -> String {
    let original = try String(
      contentsOfFile: repositoryRoot + "/board/sim/rides/garmin-edge-500-2011-09-25.csv", encoding: .utf8)
    let lines = original.split(separator: "\n").filter { !$0.contains(",press,lap") && !$0.contains(",press,stop") }
      .prefix(600)
    let end = Int(lines.last!.split(separator: ",")[0])! + 1
    let ride = dir.path + "/short.csv"
    try (lines.joined(separator: "\n") + "\n\(end),press,stop\n").write(toFile: ride, atomically: true, encoding: .utf8)
    return ride
  }

  static func config(_ text: String, in dir: ServiceDirectory) throws -> String {
    let path = dir.path + "/workoutd.toml"
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  func ctl(_ arguments: [String], _ dir: ServiceDirectory) throws -> (status: Int32, output: String) {
    try run(binaryDirectory + "/workoutctl", arguments + ["--state-dir", dir.state, "--runtime-dir", dir.runtime])
  }

  /// The short ride recorded to its end with exports off: an ended session none of whose
  /// files exist yet. Returns the ride and the exports directory.
  func recordShortRideWithoutExports(in dir: ServiceDirectory) throws -> (ride: String, exports: String) {
    let ride = try Self.shortRide(in: dir)
    let off = try Self.config("[export]\nenabled = false\n", in: dir)
    let record = try ServiceProcess(
      dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride, "--config", off])
    #expect(try record.waitForExit(timeout: 120) == 0, "\(record.log)")
    let exports = dir.state + "/exports"
    #expect(files(exports).isEmpty)
    return (ride, exports)
  }

  func files(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
  }

  @Test func eachEndedSessionIsExportedOnceAndWorkoutctlRebuildsTheSameBytes() throws {
    let dir = ServiceDirectory()
    let ride = try Self.shortRide(in: dir)
    let exports = dir.state + "/exports"
    let first = try ServiceProcess(dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride])
    #expect(try first.waitForExit(timeout: 120) == 0, "\(first.log)")
    let store = try WorkoutStore.openForReading(at: dir.database)
    let session = try #require(try store.session(id: 1))
    let name = "20110925-130021Z-\(session.uuid.prefix(8)).fit"
    // FIT and GPX by default.
    #expect(files(exports) == [name, String(name.dropLast(4)) + ".gpx"], "\(first.log)")
    #expect(first.log.contains("exported session 1 to \(exports)/\(name)"))
    let ledger = try store.exports(sessionID: 1).sorted { $0.format < $1.format }
    #expect(ledger.map(\.format).sorted() == ["fit", "gpx"])
    #expect(ledger.first?.destination == exports)
    #expect(ledger.first?.points == session.points)
    let bytes = try Data(contentsOf: URL(fileURLWithPath: exports + "/" + name))
    #expect(Int64(bytes.count) == ledger.first?.bytes)
    // Readable by the service's group, no one else (StateDirectoryMode 0750, UMask 0027).
    var info = stat()
    #expect(stat(exports + "/" + name, &info) == 0 && info.st_mode & 0o777 == 0o640)

    // A second run records a second session; the first is not written again.
    var before = stat()
    stat(exports + "/" + name, &before)
    let second = try ServiceProcess(dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride])
    #expect(try second.waitForExit(timeout: 120) == 0, "\(second.log)")
    #expect(files(exports).count == 4)
    #expect(!second.log.contains("exported session 1 "))
    #expect(second.log.contains("exported session 2 "))
    var after = stat()
    stat(exports + "/" + name, &after)
    #expect(before.st_ino == after.st_ino && before.st_mtim.tv_nsec == after.st_mtim.tv_nsec)

    // workoutctl rebuilds the same bytes; --new writes each session once per directory.
    let out = dir.path + "/copy"
    let rebuilt = try ctl(["export", "1", "--out", out], dir)
    #expect(rebuilt.status == 0, "\(rebuilt.output)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/" + name)) == bytes)
    let new = try ctl(["export", "--new", "--out", out], dir)
    #expect(new.status == 0, "\(new.output)")
    #expect(!new.output.contains(name), "session 1 was recorded as exported into \(out) by the export before")
    #expect(new.output.contains("-\(try #require(try store.session(id: 2)).uuid.prefix(8)).fit"))
    let again = try ctl(["export", "--new", "--out", out], dir)
    #expect(again.status == 0 && again.output.contains("nothing new for \(out)"), "\(again.output)")
    #expect(files(out).count == 2)
    #expect(try store.exports(sessionID: 2).map(\.destination).sorted() == [out, exports, exports].sorted())

    // Several formats: session by session, each one's formats in a row (its laps, events and
    // damaged rows read once), not format by format.
    let both = dir.path + "/both"
    let several = try ctl(["export", "--new", "--format", "fit,gpx", "--out", both], dir)
    #expect(several.status == 0, "\(several.output)")
    let uuids = try [1, 2].map { try #require(try store.session(id: Int64($0))).uuid.prefix(8) }
    let order = several.output.split(separator: "\n").filter { $0.hasPrefix(both + "/") }.map { line in
      let name = line.prefix { $0 != " " }.split(separator: "/").last.map(String.init) ?? ""
      let number = uuids.firstIndex { name.contains($0) }.map { $0 + 1 } ?? 0
      return "\(number).\(name.suffix(3))"
    }
    #expect(order == ["1.fit", "1.gpx", "2.fit", "2.gpx"], "\(several.output)")
    #expect(files(both).count == 4)
  }

  /// `make run` gives a state directory relative to the working directory: its exports go there.
  @Test func aRelativeStateDirectoryGetsItsExports() throws {
    let dir = ServiceDirectory()
    let ride = try Self.shortRide(in: dir)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binaryDirectory + "/workoutd")
    process.currentDirectoryURL = URL(fileURLWithPath: dir.path)
    process.arguments = [
      "--board", "sim", "--speed", "max", "--exit-at-end", "--ride", ride, "--state-dir", ".run/20261124T172303Z",
      "--runtime-dir", dir.runtime,
    ]
    let log = Pipe()
    process.standardError = log
    try process.run()
    let output = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(output)")
    #expect(!output.contains("exports failing"), "\(output)")
    let exported = files(dir.path + "/.run/20261124T172303Z/exports")
    #expect(exported.count == 2 && exported.allSatisfy { $0.hasPrefix("20110925-130021Z-") }, "\(exported)")
  }

  /// With [usb_drive] on, the service makes the drive's FAT image of its FIT exports (checked by
  /// fsck.fat and read back by mtools), anew when a session is exported; with no USB gadget
  /// (this machine) the status says so. Turned off, the image goes.
  @Test func theUsbDriveImageHoldsTheFITExportsAndGoesWhenTurnedOff() throws {
    let dir = ServiceDirectory()
    let ride = try Self.shortRide(in: dir)
    let exports = dir.state + "/exports"
    let image = dir.state + "/usb-drive.img"
    let on = try Self.config("[usb_drive]\nenabled = true\n", in: dir)
    func checkImage(holds count: Int, _ log: String) throws {
      let fsck = try run("/usr/sbin/fsck.fat", ["-n", image])
      #expect(fsck.status == 0, "\(fsck.output)")
      let listing = try run("/usr/bin/mdir", ["-i", image, "-b", "::/workoutd"])
      let names = listing.output.split(separator: "\n").map { String($0.split(separator: "/").last ?? "") }.sorted()
      let fits = files(exports).filter { $0.hasSuffix(".fit") }
      #expect(names == fits && fits.count == count, "\(listing.output)\n\(log)")
      for name in fits {
        let back = dir.path + "/back.fit"
        try? FileManager.default.removeItem(atPath: back)
        #expect(try run("/usr/bin/mcopy", ["-n", "-i", image, "::/workoutd/" + name, back]).status == 0)
        #expect(
          FileManager.default.contents(atPath: back) == FileManager.default.contents(atPath: exports + "/" + name))
      }
    }
    let first = try ServiceProcess(dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride, "--config", on])
    #expect(try first.waitForExit(timeout: 120) == 0, "\(first.log)")
    #expect(first.log.contains("made the USB drive image \(image): 1 file,"), "\(first.log)")
    #expect(first.log.contains("the board is not a USB drive yet"), "\(first.log)")
    try checkImage(holds: 1, first.log)
    let contents = try String(contentsOfFile: image + ".contents", encoding: .utf8)

    let second = try ServiceProcess(
      dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride, "--config", on])
    #expect(try second.waitForExit(timeout: 120) == 0, "\(second.log)")
    #expect(second.log.contains("made the USB drive image \(image): 2 files,"), "\(second.log)")
    try checkImage(holds: 2, second.log)
    #expect(try String(contentsOfFile: image + ".contents", encoding: .utf8) != contents)

    let off = try Self.config("", in: dir)
    let third = try ServiceProcess(
      dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride, "--config", off])
    #expect(try third.waitForExit(timeout: 120) == 0, "\(third.log)")
    #expect(third.log.contains("removed \(image): [usb_drive] is off"), "\(third.log)")
    #expect(
      !FileManager.default.fileExists(atPath: image) && !FileManager.default.fileExists(atPath: image + ".contents"))
  }

  /// What a kill or a power cut mid-export leaves (an ended session with no export recorded,
  /// a temporary file) is finished at the next start, and the temporary file goes.
  @Test func anUnfinishedExportIsCompletedAtTheNextStart() throws {
    let dir = ServiceDirectory()
    let (ride, exports) = try recordShortRideWithoutExports(in: dir)
    let session = try #require(try WorkoutStore.openForReading(at: dir.database).session(id: 1))
    let name = "20110925-130021Z-\(session.uuid.prefix(8))"
    try FileManager.default.createDirectory(atPath: exports, withIntermediateDirectories: true)
    try Data(repeating: 0x42, count: 1000).write(to: URL(fileURLWithPath: exports + "/.\(name).fit.partial"))

    let on = try Self.config("[export]\nformats = [\"fit\"]\n", in: dir)
    let second = try ServiceProcess(
      dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride, "--config", on])
    #expect(try second.waitForExit(timeout: 120) == 0, "\(second.log)")
    #expect(second.log.contains("removed \(exports)/.\(name).fit.partial"))
    #expect(second.log.contains("exported session 1 to \(exports)/\(name).fit"))
    #expect(files(exports).count == 2 && files(exports).contains("\(name).fit"), "\(files(exports))")
    let rebuilt = try ctl(["export", "1", "--out", dir.path + "/copy"], dir)
    #expect(rebuilt.status == 0)
    #expect(
      try Data(contentsOf: URL(fileURLWithPath: exports + "/\(name).fit"))
        == Data(contentsOf: URL(fileURLWithPath: dir.path + "/copy/\(name).fit")))
  }

  /// A start with the integrity check due (no record of one, as after an unclean stop) and
  /// sessions never exported: the check runs first and the exporter's catch-up after it, not
  /// both at once (their memory at the same moment was the READY peak on a large database).
  @Test func theCatchUpWaitsForADueIntegrityCheck() throws {
    let dir = ServiceDirectory()
    let (_, exports) = try recordShortRideWithoutExports(in: dir)
    unlink(dir.database + ".checked")
    // A larger file, so that the check takes longer than the first export (~0.1 s here): a
    // table the service does not know, which quick_check reads like any other.
    let queue = try DatabaseQueue(path: dir.database)
    try queue.write { db in
      try db.execute(sql: "CREATE TABLE filler (data BLOB)")
      try db.execute(
        sql: """
          WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
          INSERT INTO filler SELECT randomblob(2000) FROM n
          """)
    }
    try queue.close()

    let on = try Self.config("[export]\nformats = [\"fit\"]\n", in: dir)
    let start = try ServiceProcess(dir, arguments: ["--speed", "1", "--config", on])
    // The first file the exporter writes (its temporary file, then the FIT): the check's
    // record must be there already.
    var checkedBeforeExport: Bool?
    try waitFor("the exporter's first file", timeout: 60, interval: 0.001) {
      guard !files(exports).isEmpty else { return false }
      checkedBeforeExport = FileManager.default.fileExists(atPath: dir.database + ".checked")
      return true
    }
    try waitFor("the session's export", timeout: 60) { start.log.contains("exported session 1 to") }
    start.signal(SIGTERM)
    #expect(try start.waitForExit() == 0)
    #expect(checkedBeforeExport == true, "\(start.log)")
    let lines = start.log.split(separator: "\n")
    let checked = try #require(lines.firstIndex { $0.contains("passed its integrity check") }, "\(start.log)")
    let exported = try #require(lines.firstIndex { $0.contains("exported session 1 to") })
    #expect(checked < exported, "\(start.log)")
    #expect(FileManager.default.fileExists(atPath: dir.database + ".checked"))
  }

  /// A kill -9 while the service writes an export (caught by its temporary file appearing)
  /// leaves no partial file under a final name, and the next start finishes the export.
  @Test func killNineMidExportLeavesNoHalfFileAndTheNextStartFinishesIt() throws {
    let dir = ServiceDirectory()
    let exports = dir.state + "/exports"
    let ride = repositoryRoot + "/board/sim/rides/garmin-edge-500-2011-09-25.csv"
    let off = try Self.config("[export]\nenabled = false\n", in: dir)
    let record = try ServiceProcess(
      dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride, "--config", off])
    #expect(try record.waitForExit(timeout: 300) == 0, "\(record.log)")
    let session = try #require(try WorkoutStore.openForReading(at: dir.database).session(id: 1))
    let name = "20110925-130021Z-\(session.uuid.prefix(8)).csv"

    // Each start exports what is missing at once: the 3-hour session, as CSV then FIT. At board
    // speed 1 the bundled ride these starts replay cannot finish a second session meanwhile (at
    // "max" it could, on a loaded machine, and its exports would be counted too).
    let on = try Self.config("[export]\nformats = [\"csv\", \"fit\"]\n", in: dir)
    let exporting = try ServiceProcess(dir, arguments: ["--speed", "1", "--config", on])
    try waitFor("an export's temporary file", timeout: 60) {
      files(exports).contains { $0.hasSuffix(".partial") }
    }
    exporting.signal(SIGKILL)
    _ = try exporting.waitForExit()
    let left = files(exports)
    #expect(left.contains(".\(name).partial"), "killed while writing the CSV: \(left)")
    #expect(!left.contains(name), "no CSV under its final name: \(left)")

    let again = try ServiceProcess(dir, arguments: ["--speed", "1", "--config", on])
    try waitFor("the exports to be finished", timeout: 120) {
      again.log.contains("exported session 1 to \(exports)/\(name.dropLast(4)).fit")
    }
    again.signal(SIGTERM)
    #expect(try again.waitForExit() == 0)
    #expect(files(exports).filter { !$0.hasPrefix(".") }.count == 2, "\(files(exports))")
    #expect(!files(exports).contains { $0.hasSuffix(".partial") })
    // Whole: the same bytes workoutctl writes from the database.
    let copy = dir.path + "/copy"
    #expect(try ctl(["export", "1", "--format", "csv,fit", "--out", copy], dir).status == 0)
    for file in [name, String(name.dropLast(4)) + ".fit"] {
      #expect(
        try Data(contentsOf: URL(fileURLWithPath: exports + "/" + file))
          == Data(contentsOf: URL(fileURLWithPath: copy + "/" + file)), "\(file)")
    }
  }

  /// Over ssh: `workoutctl export --new --as NAME --out -` sends the new rides as a tar archive
  /// (the same bytes as the files), records them under the name once the archive is whole, and
  /// sends nothing twice; a pipe that breaks mid-archive is an error and records nothing.
  @Test func anArchiveOnStandardOutputCarriesTheNewRidesOnce() throws {
    let dir = ServiceDirectory()
    let ride = try Self.shortRide(in: dir)
    let off = try Self.config("[export]\nenabled = false\n", in: dir)
    let record = try ServiceProcess(
      dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride, "--config", off])
    #expect(try record.waitForExit(timeout: 120) == 0, "\(record.log)")
    let locations = "--state-dir '\(dir.state)' --runtime-dir '\(dir.runtime)'"
    // Where the files wait to be sent (TMPDIR), to see that nothing is left there.
    let temporary = dir.path + "/tmp"
    try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
    let ctlPath = "TMPDIR='\(temporary)' '\(binaryDirectory)/workoutctl'"
    func pipeline(_ command: String) throws -> (status: Int32, output: String) {
      try run("/bin/bash", ["-o", "pipefail", "-c", command])
    }

    #expect(try ctl(["export", "--new", "--out", "-"], dir).output.contains("--new --out - needs --as NAME"))
    #expect(try ctl(["export", "1", "--as", "laptop", "--out", dir.path], dir).output.contains("give --out - too"))

    // A reader that stops after 100 bytes: an error, and nothing is recorded for "laptop".
    let broken = try pipeline(
      "\(ctlPath) export --new --as laptop --format fit,gpx --out - \(locations) | head -c 100 > /dev/null")
    #expect(broken.status != 0)
    #expect(broken.output.contains("standard output was closed before the archive was whole"), "\(broken.output)")
    let store = try WorkoutStore.openForReading(at: dir.database)
    #expect(try store.exports(sessionID: 1).isEmpty)

    let rides = dir.path + "/rides"
    try FileManager.default.createDirectory(atPath: rides, withIntermediateDirectories: true)
    let sent = try pipeline(
      "\(ctlPath) export --new --as laptop --format fit,gpx --out - \(locations) | tar -x -C '\(rides)'")
    #expect(sent.status == 0, "\(sent.output)")
    let copy = dir.path + "/copy"
    #expect(try ctl(["export", "1", "--format", "fit,gpx", "--out", copy], dir).status == 0)
    #expect(files(rides) == files(copy) && files(rides).count == 2, "\(files(rides))")
    for name in files(copy) {
      #expect(
        try Data(contentsOf: URL(fileURLWithPath: rides + "/" + name))
          == Data(contentsOf: URL(fileURLWithPath: copy + "/" + name)), "\(name)")
    }
    #expect(try store.exports(sessionID: 1).filter { $0.destination == "stream:laptop" }.count == 2)
    #expect(
      files(temporary).isEmpty, "each file is removed once sent, and the directory with them: \(files(temporary))")

    // Nothing new: an empty archive tar reads, and a word on standard error.
    let again = try pipeline(
      "\(ctlPath) export --new --as laptop --format fit,gpx --out - \(locations) | tar -tv")
    #expect(again.status == 0)
    #expect(again.output.contains("nothing new for stream:laptop"), "\(again.output)")
    #expect(!again.output.contains(".fit"))
    // Another name has had nothing yet.
    let other = try pipeline(
      "\(ctlPath) export --new --as desktop --format fit --out - \(locations) | tar -t")
    #expect(other.status == 0)
    #expect(other.output.split(separator: "\n").filter { $0.hasSuffix(".fit") }.count == 1, "\(other.output)")
  }

  /// A ride's file is of the whole ride: exporting one mid-ride needs --unfinished, and the
  /// ended ride's `--new` writes it again (the mid-ride file was not the ride). A note from the
  /// phone after the ride makes the service's files again, and a stick's copies of them go again.
  @Test func aFileMadeBeforeTheRideEndedOrBeforeANoteIsMadeAgain() throws {
    let rides = ServiceDirectory()
    let web = try WebService(speed: "20", arguments: ["--ride", try Self.shortRide(in: rides)])
    try waitFor("the ride to run", timeout: 60) { try web.service.status().state == .running }
    let out = web.dir.path + "/laptop"
    let refused = try web.ctl(["export", "1", "--out", out])
    #expect(refused.status != 0 && refused.output.contains("session 1 is running, not ended"), "\(refused.output)")
    #expect(files(out).isEmpty)
    let partial = try web.ctl(["export", "1", "--unfinished", "--out", out])
    #expect(partial.status == 0 && partial.output.contains("holds it up to now"), "\(partial.output)")
    let name = try #require(files(out).first)
    let partialBytes = try Data(contentsOf: URL(fileURLWithPath: out + "/" + name))

    try waitFor("the ride to end", timeout: 120) { try web.service.status().state == .ended }
    let new = try web.ctl(["export", "--new", "--out", out])
    #expect(new.status == 0 && new.output.contains(name), "the ended ride is new to \(out): \(new.output)")
    let whole = try Data(contentsOf: URL(fileURLWithPath: out + "/" + name))
    #expect(whole.count > partialBytes.count)
    let store = try WorkoutStore.openForReading(at: web.dir.database)
    #expect(
      try store.exports(sessionID: 1).first { $0.destination.hasSuffix("/laptop") }?.points
        == store.session(id: 1)?.points)
    #expect(try web.ctl(["export", "--new", "--out", out]).output.contains("nothing new"))

    // The service's own files, and a stick's copy of them.
    let exports = web.dir.state + "/exports"
    // A file is recorded in the export table after it is renamed into place: what copy-exports
    // goes by is the table, so the wait is on it (a slow host, qemu-user, shows the gap).
    func recorded(madeFrom latest: Int64) -> Bool {
      let rows = ((try? store.exports(sessionID: 1)) ?? []).filter { $0.destination.hasSuffix("/state/exports") }
      return rows.count == 2 && rows.allSatisfy { ($0.sourceEventID ?? 0) >= latest }
    }
    try waitFor("the service's exports recorded", timeout: 60) { recorded(madeFrom: 1) }
    let stick = web.dir.path + "/stick"
    try FileManager.default.createDirectory(atPath: stick, withIntermediateDirectories: true)
    let copied = try web.ctl(["copy-exports", "--to", stick, "--as", "usb:1"])
    #expect(copied.status == 0 && copied.output.contains("copied 2 files"), "\(copied.output)")
    let gpx = try #require(files(exports).first { $0.hasSuffix(".gpx") })
    #expect(try !String(contentsOfFile: exports + "/" + gpx, encoding: .utf8).contains("RPE"))

    let token = try web.pair()
    let rated = try http(
      "POST", "/api/annotate", port: web.port, headers: web.cookie(token).merging(["Origin": web.origin]) { $1 },
      body: #"{"kind":"rpe","value":6,"session":1}"#)
    #expect(rated.status == 200, "\(rated)")
    try waitFor("the files made again with the RPE", timeout: 30) {
      (try? String(contentsOfFile: exports + "/" + gpx, encoding: .utf8))?.contains("RPE 6 (hard)") == true
    }
    try waitFor("the FIT file too", timeout: 30) {
      let fit = files(exports).first { $0.hasSuffix(".fit") } ?? ""
      let decoded = try? decodeFIT(exports + "/" + fit)
      return (decoded?["session"] as? [String: Any])?["workout_rpe"] as? Int == 60
    }
    let noted = try store.latestEventID(sessionID: 1)
    try waitFor("both made again and recorded", timeout: 60) { recorded(madeFrom: noted) }
    let again = try web.ctl(["copy-exports", "--to", stick, "--as", "usb:1"])
    #expect(again.status == 0 && again.output.contains("copied 2 files"), "made again, copied again: \(again.output)")
    #expect(
      try String(contentsOfFile: stick + "/workoutd/" + gpx, encoding: .utf8).contains("RPE 6 (hard)"))
    #expect(try web.ctl(["copy-exports", "--to", stick, "--as", "usb:1"]).output.contains("nothing new"))
    let newAgain = try web.ctl(["export", "--new", "--out", out])
    #expect(newAgain.output.contains(name), "the laptop's file is stale too: \(newAgain.output)")
  }

  /// One session that cannot be exported (its file's name taken by a directory) is a fault
  /// that names it, and does not hold up the sessions after it; once the way is clear, the
  /// next start exports it. The exports and the checks at start leave no libdispatch worker
  /// threads behind (their pool's monitor would wake an idle board every second).
  @Test func aSessionThatCannotBeExportedDoesNotHoldUpTheOthers() throws {
    let dir = ServiceDirectory()
    let ride = try Self.shortRide(in: dir)
    let exports = dir.state + "/exports"
    let off = try Self.config("[export]\nenabled = false\n", in: dir)
    for _ in 0..<2 {
      let record = try ServiceProcess(
        dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", ride, "--config", off])
      #expect(try record.waitForExit(timeout: 120) == 0, "\(record.log)")
    }
    let store = try WorkoutStore.openForReading(at: dir.database)
    let first = try #require(try store.session(id: 1))
    let second = try #require(try store.session(id: 2))
    let blocked = "20110925-130021Z-\(first.uuid.prefix(8)).fit"
    try FileManager.default.createDirectory(atPath: exports + "/" + blocked, withIntermediateDirectories: true)

    // The real board with no devices: the service idles, exporting.
    let on = try Self.config("[gps]\nenabled = false\n[export]\nformats = [\"fit\"]\n", in: dir)
    let service = try ServiceProcess(dir, arguments: ["--board", "linux", "--config", on])
    try service.waitUntilReady()
    try waitFor("the exports fault in status", timeout: 60) {
      try service.status().devices["exports"]?.hasPrefix("failing: session 1 as FIT") == true
    }
    #expect(files(exports).contains("20110925-130021Z-\(second.uuid.prefix(8)).fit"), "\(service.log)")
    #expect(service.log.contains("cannot export session 1 as FIT"))
    let threads =
      ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(service.process.processIdentifier)/task")) ?? [])
      .compactMap {
        try? String(contentsOfFile: "/proc/\(service.process.processIdentifier)/task/\($0)/comm", encoding: .utf8)
      }
    #expect(!threads.isEmpty)
    #expect(!threads.contains { $0.contains("qos") || $0.contains("dispatch") }, "\(threads)")
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)

    try FileManager.default.removeItem(atPath: exports + "/" + blocked)
    let again = try ServiceProcess(dir, arguments: ["--board", "linux", "--config", on])
    try again.waitUntilReady()
    try waitFor("session 1's export", timeout: 60) { again.log.contains("exported session 1 to \(exports)/\(blocked)") }
    try waitFor("the exports available again", timeout: 30) {
      try again.status().devices["exports"]?.hasPrefix("available") == true
    }
    again.signal(SIGTERM)
    #expect(try again.waitForExit() == 0)
    #expect(!again.log.contains("exported session 2"), "each once")
  }

  /// An exports directory that cannot be made is a fault: in status, an event, the LED, a log line.
  @Test func anExportDirectoryThatCannotBeMadeIsAFaultTheRiderIsTold() throws {
    let dir = ServiceDirectory()
    // A directory under a regular file cannot be made, even by root.
    let blocker = dir.path + "/not-a-directory"
    try #require(FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8)))
    let config = try Self.config("[export]\ndirectory = \"\(blocker)/exports\"\n", in: dir)
    let service = try ServiceProcess(dir, arguments: ["--speed", "max", "--config", config])
    try service.waitUntilReady()
    try waitFor("the exports fault in status", timeout: 30) {
      try service.status().devices["exports"] == "failing: cannot make \(blocker)/exports: Not a directory"
    }
    #expect(try service.status().engine.indicator == .fault)
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
    #expect(service.log.contains("exports failing: cannot make \(blocker)/exports: Not a directory"), "\(service.log)")
    // The event goes with the session the simulated ride started, or the service's own.
    let store = try WorkoutStore.openForReading(at: dir.database)
    let events = try store.events(sessionID: nil) + store.events(sessionID: 1)
    #expect(events.contains { $0.kind == "deviceFailing" && $0.detail?.hasPrefix("exports: cannot make") == true })
  }
}
