import ArgumentParser
import Foundation
import WorkoutCore
import WorkoutExport
import WorkoutStore

struct Export: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Write sessions as FIT, GPX, TCX or CSV files, the formats Strava, Garmin Connect and the rest read.",
    discussion: """
      Each file is named by the session's start in UTC and the first 8 digits of its UUID \
      (20261124-103015Z-3f2a9c1e.fit); exporting again gives the same bytes. Written to a temporary \
      name, synced and renamed: never a half file under the real name. What is written is recorded \
      in the database's export table (per directory) when this user may write the database, which \
      --new needs: run it as the service's user (sudo -u workoutd) or root.

      --out - writes the files as one tar archive to standard output, for a pipe over ssh: \
      ssh board sudo -u workoutd workoutctl export --new --as laptop --out - | tar -x -C rides. \
      With --as NAME what was sent is recorded under that name once the whole archive is out, so \
      the next --new --as NAME sends only the sessions since.
      """
  )
  @OptionGroup var locations: Locations
  @Argument(help: "The session's number (see `workoutctl sessions`).") var session: Int64?
  @Flag(help: "Every finished session.") var all = false
  @Flag(
    help:
      "The finished sessions not yet exported in this format into this directory, or exported before a later change (a note from the phone)."
  )
  var new = false
  @Option(
    help:
      "The formats, comma-separated: \(ExportFormat.allCases.map(\.rawValue).joined(separator: ", ")).")
  var format = "fit"
  @Option(help: "The directory to write into (made if missing), or - for a tar archive on standard output.")
  var out = "."
  @Option(
    name: .customLong("as"),
    help: ArgumentHelp(
      "With --out -: the name of where the archive goes (a laptop's), under which it is recorded for --new.",
      valueName: "name"))
  var streamName: String?
  @Flag(
    help:
      "With a session's number: write it although it has not ended (what it holds so far; --new makes it again once it has)."
  )
  var unfinished = false

  /// The archive on standard output.
  var streams: Bool { out == "-" }

  var formats: [ExportFormat] {
    var seen: [ExportFormat] = []
    for name in format.split(separator: ",") {
      if let parsed = ExportFormat(rawValue: name.trimmingCharacters(in: .whitespaces).lowercased()),
        !seen.contains(parsed)
      {
        seen.append(parsed)
      }
    }
    return seen
  }

  func validate() throws {
    for name in format.split(separator: ",", omittingEmptySubsequences: false)
    where ExportFormat(rawValue: name.trimmingCharacters(in: .whitespaces).lowercased()) == nil {
      throw ValidationError(
        "no format \"\(name)\": \(ExportFormat.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    guard [session != nil, all, new].filter({ $0 }).count == 1 else {
      throw ValidationError("give a session's number, --all or --new")
    }
    if unfinished && session == nil { throw ValidationError("--unfinished goes with a session's number") }
    if let streamName {
      guard streams else { throw ValidationError("--as names an archive on standard output: give --out - too") }
      guard !streamName.isEmpty, !streamName.contains("/") else {
        throw ValidationError("--as needs a name without a slash (a laptop's, say)")
      }
    } else if streams && new {
      throw ValidationError(
        "--new --out - needs --as NAME: the name of where the archive goes, so the next --new knows what it had")
    }
  }

  func run() throws {
    let store = try openStore(locations)
    let directory: String
    let destination: String?
    if streams {
      // Each file is written here, sent, and removed: one at a time on disk.
      var template = Array(
        ((ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/workoutctl-XXXXXX").utf8CString)
      guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw fail("cannot make a temporary directory: \(String(cString: strerror(errno)))")
      }
      directory = String(cString: made)
      // The ledger's key for an archive: the name it was given.
      destination = streamName.map { "stream:\($0)" }
    } else {
      do {
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
      } catch {
        throw fail("cannot make \(out): \(error.localizedDescription)")
      }
      directory = out
      guard let key = ExportFile.ledgerKey(forDirectory: out) else {
        throw fail("cannot resolve \(out): \(String(cString: strerror(errno)))")
      }
      destination = key
    }
    defer { if streams { rmdir(directory) } }
    var ledger: WorkoutStore?
    if destination != nil {
      do {
        ledger = try WorkoutStore.openForExportLedger(at: locations.database)
      } catch {
        if new { throw fail("--new needs the export table: \(error)") }
        FileHandle.standardError.write(Data("workoutctl: not recorded in the export table: \(error)\n".utf8))
      }
    }
    // Sessions by id, each read when its turn comes: hundreds of session rows (~8 KB each with
    // their checkpoints) are not held at once.
    var plan = ExportPlan(sessionIDs: [], formats: formats)
    if let session {
      guard let record = try store.session(id: session) else {
        throw fail("no session \(session) in \(locations.database)")
      }
      // A ride's file is of the whole ride: one written mid-ride is marked stale in the export
      // table by the events that follow, but the file itself would pass for the whole ride.
      if record.state != SessionState.ended.rawValue {
        guard unfinished else {
          throw fail(
            "session \(session) is \(record.state), not ended: its files are written when it ends; --unfinished writes what it holds so far"
          )
        }
        FileHandle.standardError.write(
          Data(
            "workoutctl: session \(session) is \(record.state): the file holds it up to now, not the whole ride\n".utf8)
        )
      }
      plan = ExportPlan(sessionIDs: [session], formats: formats)
    } else if all {
      plan = ExportPlan(sessionIDs: try store.endedSessionIDs(), formats: formats)
    } else if let destination {
      plan = ExportPlan.notExported(formats: formats, destination: destination, in: store)
      if let unlisted = plan.unlisted.first { throw fail(unlisted) }
      if plan.jobs.isEmpty { FileHandle.standardError.write(Data("workoutctl: nothing new for \(destination)\n".utf8)) }
    }
    var archive: TarStream?
    if streams {
      // A reader that goes away mid-archive is an error to report (EPIPE), not a silent death.
      signal(SIGPIPE, SIG_IGN)
      archive = TarStream(descriptor: STDOUT_FILENO, label: "standard output")
    }
    var sent: [ExportRecord] = []
    try plan.write(
      from: store, into: directory, destination: destination ?? "", wallNow: { Date().timeIntervalSince1970 }
    ) {
      switch $0 {
      case .failed(_, _, let error):
        throw fail("\(error)")
      case .written(let written, let entry):
        if !written.unreadable.isEmpty {
          FileHandle.standardError.write(
            Data(
              "workoutctl: session \(entry.sessionID): left out of \(written.name) as unreadable (a damaged record): \(written.unreadable.description)\n"
                .utf8))
        }
        do {
          if archive != nil {
            defer { unlink(written.path) }
            try archive?.append(file: written.path, as: written.name)
            FileHandle.standardError.write(Data("\(written.name) (\(written.points) points)\n".utf8))
            sent.append(entry)
          } else {
            try ledger?.recordExport(entry)
            print("\(written.path) (\(written.points) points)")
          }
        } catch {
          throw fail("\(error)")
        }
      }
    }
    guard var archive else { return }
    do {
      // Recorded only once the whole archive is out: a pipe that broke sends it all again.
      try archive.finish()
      for entry in sent { try ledger?.recordExport(entry) }
    } catch {
      throw fail("\(error)")
    }
  }
}
