import ArgumentParser
import Foundation
import LinuxSupport
import WorkoutControl
import WorkoutCore
import WorkoutExport
import WorkoutReports
import WorkoutStore

/// Where the service keeps its database and control socket; the same defaults as workoutd.
struct Locations: ParsableArguments {
  @Option(help: "The service's state directory (its database); default $STATE_DIRECTORY or /var/lib/workoutd.")
  var stateDir: String?

  @Option(help: "The service's runtime directory (its control socket); default /run/workoutd.")
  var runtimeDir: String?

  var database: String {
    (stateDir ?? ProcessInfo.processInfo.environment["STATE_DIRECTORY"] ?? "/var/lib/workoutd") + "/workoutd.db"
  }

  var socket: String {
    (runtimeDir ?? ProcessInfo.processInfo.environment["RUNTIME_DIRECTORY"] ?? "/run/workoutd") + "/control.sock"
  }
}

struct Workoutctl: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "workoutctl",
    abstract: "Controls workoutd and reads its recorded sessions.",
    discussion:
      "start, pause, resume, lap and stop act exactly as the buttons do. Exit status 1 when a request is refused or fails.",
    version: WorkoutdVersion.string,
    subcommands: [
      Status.self, Sessions.self, Show.self, Start.self, Pause.self, Resume.self, Lap.self, Stop.self, Sensors.self,
      Zones.self, Activity.self, Export.self, CopyExports.self, StickCheck.self, ReportCopy.self, UsbDrive.self,
      Pair.self,
    ])
}

/// Prints an error and exits with 1.
func fail(_ message: String) -> ExitCode {
  FileHandle.standardError.write(Data("workoutctl: \(message)\n".utf8))
  return ExitCode(1)
}

func send(_ command: ControlCommand, to locations: Locations) throws -> ControlReply {
  do {
    return try sendControl(ControlRequest(command: command), socketPath: locations.socket)
  } catch {
    throw fail("\(error)")
  }
}

/// What every button-like command takes: where the service is, and how to print its reply.
struct ButtonOptions: ParsableArguments {
  @OptionGroup var locations: Locations
  @Flag(help: "Print the reply as JSON.") var json = false
}

/// A control command that acts like a button.
protocol ButtonCommand: ParsableCommand {
  static var command: ControlCommand { get }
  var options: ButtonOptions { get }
}

extension ButtonCommand {
  func run() throws {
    let reply = try send(Self.command, to: options.locations)
    if options.json {
      print(try ControlJSON.encode(reply))
    } else if reply.ok {
      if let lap = reply.lap {
        print("lap \(lap) marked")
      } else {
        print("\(Self.command.rawValue): session \(reply.state?.rawValue ?? "?")")
      }
    } else {
      FileHandle.standardError.write(
        Data(
          "workoutctl: \(Self.command.rawValue) refused: \(reply.message ?? reply.refusal ?? "unknown") (state \(reply.state?.rawValue ?? "?"))\n"
            .utf8))
    }
    if !reply.ok { throw ExitCode(1) }
  }
}

struct Start: ButtonCommand {
  static let configuration = CommandConfiguration(abstract: "Start a session (prepare, count down, run).")
  static let command = ControlCommand.start
  @OptionGroup var options: ButtonOptions
}

struct Pause: ButtonCommand {
  static let configuration = CommandConfiguration(abstract: "Pause the running session.")
  static let command = ControlCommand.pause
  @OptionGroup var options: ButtonOptions
}

struct Resume: ButtonCommand {
  static let configuration = CommandConfiguration(abstract: "Resume the paused session.")
  static let command = ControlCommand.resume
  @OptionGroup var options: ButtonOptions
}

struct Lap: ButtonCommand {
  static let configuration = CommandConfiguration(abstract: "Mark a lap.")
  static let command = ControlCommand.lap
  @OptionGroup var options: ButtonOptions
}

struct Stop: ButtonCommand {
  static let configuration = CommandConfiguration(abstract: "Stop and save the session.")
  static let command = ControlCommand.stop
  @OptionGroup var options: ButtonOptions
}

struct Status: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Show the live session: state, timer, distance, heart rate.")
  @OptionGroup var locations: Locations
  @Flag(help: "Print JSON.") var json = false
  @Flag(help: "Print one line (for progress displays).") var brief = false

  func run() throws {
    let reply = try send(.status, to: locations)
    guard let status = reply.status else { throw fail("the service sent no status: \(reply.message ?? "")") }
    if json {
      print(try ControlJSON.encode(status))
      return
    }
    if brief {
      var fields = [status.sessionID.map { "session \($0)" } ?? "no session", status.state.rawValue]
      if status.sessionID != nil {
        fields += [Format.duration(status.timer), Format.distance(status.distance)]
        if let speed = status.speed { fields.append(Format.speed(speed)) }
        if let hr = status.heartRate { fields.append("\(hr) bpm") }
        fields.append("\(status.points) points")
      }
      if status.storage.failing { fields.append("STORAGE FAILING") }
      if let unreadable = status.unreadable, !unreadable.isEmpty { fields.append("DAMAGED RECORD") }
      print(fields.joined(separator: "  "))
      return
    }
    var lines: [String] = []
    if let id = status.sessionID {
      var head = "session \(id) \(status.state.rawValue)"
      if status.pausedBySystem { head += " (auto-paused)" }
      if let activity = status.activity { head += ", \(activity.rawValue)" }
      if let number = status.activityNumber { head += " (activity \(number))" }
      if let lap = status.lap { head += ", lap \(lap)" }
      if let remaining = status.countdownRemaining {
        head += ", starting in \(wholeNumberText(remaining.rounded(.up))) s"
      }
      lines.append(head)
      lines.append("timer \(Format.duration(status.timer)), elapsed \(Format.duration(status.elapsed))")
      if let timer = status.activityTimer, let distance = status.activityDistance {
        lines.append("this activity: timer \(Format.duration(timer)), distance \(Format.distance(distance))")
      }
      var movement = "distance \(Format.distance(status.distance))"
      if let pace = status.pace {
        movement += ", pace \(Format.pace(pace))"
      } else if let speed = status.speed {
        movement += ", speed \(Format.speed(speed))"
      }
      if let average = status.averageSpeed {
        movement += " (avg \(Format.speed(average))" + (status.maxSpeed.map { ", max \(Format.speed($0)))" } ?? ")")
      }
      lines.append(movement)
      if status.ascent > 0 || status.descent > 0 || status.altitude != nil {
        lines.append(
          "ascent \(wholeNumberText(status.ascent)) m, descent \(wholeNumberText(status.descent)) m"
            + (status.altitude.map { ", altitude \(wholeNumberText($0)) m" } ?? ""))
      }
      if let pressure = status.pressure {
        lines.append(
          "barometer \(String(format: "%.1f", pressure / 100)) hPa"
            + (status.humidity.map { ", humidity \(wholeNumberText($0)) %" } ?? ""))
      }
      if status.heartRate != nil || status.averageHeartRate != nil {
        lines.append(
          "heart rate \(status.heartRate.map { "\($0) bpm" } ?? "--")"
            + (status.averageHeartRate.map {
              " (avg \(wholeNumberText($0)), max \(wholeNumberText(status.maxHeartRate ?? $0)))"
            } ?? ""))
      }
      // A quantity with no reading yet (power zones configured, no power meter) has no line.
      for zone in status.zones ?? [] where zone.zone != nil || zone.seconds.contains(where: { $0 > 0 }) {
        let name = zone.quantity == .heartRate ? "heart-rate" : "power"
        let times = zone.seconds.enumerated().map { "Z\($0.offset + 1) \(Format.duration($0.element))" }
        lines.append(
          "\(name) zone \(zone.zone.map(String.init) ?? "--") of \(zone.zoneCount): " + times.joined(separator: ", "))
      }
      for target in status.targetZones ?? [] {
        let name = target.quantity == .heartRate ? "heart-rate" : "power"
        let where_ = target.outside.map { $0 ? "OUTSIDE" : "inside" } ?? "not known yet"
        lines.append("target: \(name) zones \(target.text) (\(where_))")
      }
      if let average = status.averagePower {
        lines.append(
          "power avg \(wholeNumberText(average)) W"
            + (status.normalizedPower.map { ", NP \(wholeNumberText($0)) W" } ?? "")
            + (status.intensityFactor.map { String(format: ", IF %.2f", $0) } ?? ""))
      } else if let np = status.normalizedPower {
        lines.append(
          "NP \(wholeNumberText(np)) W" + (status.intensityFactor.map { String(format: ", IF %.2f", $0) } ?? ""))
      }
      lines.append("points \(status.points)" + (status.lastPointTime.map { ", last at \(Format.date($0))" } ?? ""))
      if let unreadable = status.unreadable, !unreadable.isEmpty {
        lines.append("DAMAGED RECORD: \(unreadable.description) unreadable at resume, left out of the ride")
      }
    } else {
      lines.append("no session yet (\(status.state.rawValue))")
    }
    lines.append("GPS: \(Format.gps(status.gps, detail: status.gpsDetail)); LED \(status.indicator.rawValue)")
    lines.append(
      "board \(status.board)"
        + (status.devices.isEmpty
          ? ""
          : "; " + status.devices.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "; ")))
    lines.append(
      "storage \(status.storage.failing ? "FAILING (\(status.storage.lastError ?? "?"), \(status.storage.pendingWrites) writes held in memory)" : "ok"): \(status.storage.database)"
    )
    print(lines.joined(separator: "\n"))
  }
}

func openStore(_ locations: Locations) throws -> WorkoutStore {
  do {
    return try WorkoutStore.openForReading(at: locations.database)
  } catch {
    throw fail("\(error)")
  }
}

struct Sessions: ParsableCommand {
  static let configuration = CommandConfiguration(abstract: "List recorded sessions, newest first.")
  @OptionGroup var locations: Locations
  @Flag(help: "Print JSON.") var json = false
  @Option(help: "How many sessions to list.") var limit = 50

  func run() throws {
    let store = try openStore(locations)
    let summaries = try store.sessions(limit: limit).map { try SessionSummaryJSON(record: $0, store: store) }
    if json {
      print(try ControlJSON.encode(summaries))
      return
    }
    if summaries.isEmpty {
      print("no sessions recorded in \(locations.database)")
      return
    }
    print("   id  state       activity       start (UTC)           timer      distance   points")
    for s in summaries {
      print(
        [
          Format.pad(String(s.id), 5, right: true), Format.pad(s.state, 11), Format.pad(s.activity, 14),
          Format.pad(s.start.map(Format.date) ?? "-", 21), Format.pad(Format.duration(s.timer), 10),
          Format.pad(Format.distance(s.distance), 10), String(s.points),
        ].joined(separator: " "))
    }
  }
}

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
    var jobs: [(Int64, ExportFormat)] = []
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
      jobs = formats.map { (session, $0) }
    } else if all {
      jobs = try store.endedSessionIDs().flatMap { id in formats.map { (id, $0) } }
    } else if let destination {
      // Session by session, each one's formats in a row, as --all does: its laps, events and
      // damaged rows are then read once, not once a format.
      var pending: [Int64: [ExportFormat]] = [:]
      for format in formats {
        for id in try store.sessionIDsNotExported(format: format.rawValue, destination: destination) {
          pending[id, default: []].append(format)
        }
      }
      jobs = pending.sorted { $0.key < $1.key }.flatMap { id, formats in formats.map { (id, $0) } }
      if jobs.isEmpty { FileHandle.standardError.write(Data("workoutctl: nothing new for \(destination)\n".utf8)) }
    }
    var archive: TarStream?
    if streams {
      // A reader that goes away mid-archive is an error to report (EPIPE), not a silent death.
      signal(SIGPIPE, SIG_IGN)
      archive = TarStream(descriptor: STDOUT_FILENO, label: "standard output")
    }
    var sent: [ExportRecord] = []
    // A session's laps, events and damaged rows, read once for its formats in a row.
    var source: ExportFile.Source?
    for (sessionID, format) in jobs {
      do {
        if source?.exported.session.id != sessionID {
          source = nil
          guard let record = try store.session(id: sessionID) else { continue }  // deleted meanwhile
          source = try ExportFile.Source.load(record, from: store)
        }
        guard let source else { continue }
        let record = source.exported.session
        let written = try ExportFile.write(source, from: store, format: format, into: directory)
        let entry = ExportRecord(
          sessionID: record.id, format: format.rawValue, destination: destination ?? "", name: written.name,
          bytes: written.bytes, points: written.points, writtenWall: Date().timeIntervalSince1970,
          sourceEventID: written.sourceEventID)
        if !written.unreadable.isEmpty {
          FileHandle.standardError.write(
            Data(
              "workoutctl: session \(record.id): left out of \(written.name) as unreadable (a damaged record): \(written.unreadable.description)\n"
                .utf8))
        }
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

struct CopyExports: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "copy-exports",
    abstract: "Copy the service's exports a target has not had yet (a USB stick) into workoutd/ on it.",
    discussion: """
      What the service exported (its export table) and the target NAME has not had is copied into \
      TO/workoutd/, each file to a temporary name, synced and renamed, then recorded under NAME: a \
      target pulled mid-copy keeps whole files, and the next copy finishes the job. Nothing on the \
      target is followed through a symlink. Needs to write the database (the service's user). \
      Exit status: 0 all copied, 10 the target is full, 11 it cannot be written, 12 it went away, \
      13 an export of ours is missing or unreadable (the others are copied), 1 anything else.
      """
  )
  @OptionGroup var locations: Locations
  @Option(help: "Where the target is mounted.") var to: String
  @Option(
    name: .customLong("as"),
    help: ArgumentHelp("The target's name in the export table, as usb:<filesystem UUID>.", valueName: "name"))
  var name: String?
  @Option(
    help: ArgumentHelp(
      "The target's partition (/dev/sda1): without --as, its name is usb:<its filesystem UUID>, from /dev/disk/by-uuid.",
      valueName: "device"))
  var device: String?
  @Option(help: "The service's exports directory (default: exports in the state directory).") var from: String?
  @Flag(help: "Tell the service how the copy goes (status, LED, buzzer), as workoutd-usb@.service does.")
  var report = false

  static let exitFull: Int32 = 10
  static let exitReadOnly: Int32 = 11
  static let exitGone: Int32 = 12
  static let exitSource: Int32 = 13

  func validate() throws {
    if name == nil && device == nil { throw ValidationError("give the target's name with --as or its --device") }
  }

  func run() throws {
    let kernelName = device.map(StickIdentity.kernelName(of:))
    guard let target = name ?? device.flatMap({ StickIdentity.targetName(forDevice: $0) }) else {
      let problem = "\(device ?? "-") has no filesystem UUID under /dev/disk/by-uuid: its copies could not be recorded"
      CopyReporter(enabled: report, target: "usb:\(kernelName ?? "-")", device: kernelName, locations: locations)
        .send(.failed, problem)
      throw fail(problem)
    }
    let reporter = CopyReporter(enabled: report, target: target, device: kernelName, locations: locations)
    do {
      try copy(to: target, reporter: reporter)
    } catch let code as ExitCode {
      throw code
    } catch {
      reporter.send(.failed, "\(error)")
      throw fail("\(error)")
    }
  }

  private func copy(to target: String, reporter: CopyReporter) throws {
    let exports = from ?? ((locations.database as NSString).deletingLastPathComponent + "/exports")
    guard let source = ExportFile.ledgerKey(forDirectory: exports) else {
      let problem = "cannot find the exports directory \(exports): \(String(cString: strerror(errno)))"
      reporter.send(.failed, problem)
      throw fail(problem)
    }
    let ledger: WorkoutStore
    do {
      ledger = try WorkoutStore.openForExportLedger(at: locations.database)
    } catch {
      reporter.send(.failed, "the copies cannot be recorded: \(error)")
      throw fail("the copies cannot be recorded: \(error)")
    }
    let pending = try ledger.exportsNotCopied(from: source, to: target)
    if pending.isEmpty {
      print("nothing new for \(target)")
      reporter.send(.copied, "nothing new to copy")
      return
    }
    reporter.send(.copying, "\(pending.count) files")
    let copier: ExportCopier
    do {
      copier = try ExportCopier(root: to)
    } catch {
      reporter.send(.failed, "\(error)")
      throw Self.exit(error)
    }
    var copied = 0
    var bytes: Int64 = 0
    var missing: [CopyError] = []
    for export in pending {
      do {
        bytes += try copier.copy(export.name, from: source)
        var record = export
        record.destination = target
        record.writtenWall = Date().timeIntervalSince1970
        try ledger.recordExport(record)
        copied += 1
        print("\(copier.directory)/\(export.name)")
      } catch let error as CopyError {
        // Our own file gone: told, and the others go on; anything about the target stops here.
        guard case .source = error else {
          let before = copied > 0 ? "copied \(copied) of \(pending.count) files before the failure" : nil
          if let before { print(before) }
          reporter.send(.failed, "\(error)" + (before.map { " (\($0))" } ?? ""))
          throw Self.exit(error)
        }
        missing.append(error)
      }
    }
    print("copied \(copied) files (\(bytes) bytes) into \(copier.directory) for \(target)")
    if let first = missing.first {
      FileHandle.standardError.write(Data("workoutctl: \(missing.count) not copied: \(first)\n".utf8))
      reporter.send(.failed, "copied \(copied) files; \(missing.count) of ours missing: \(first)")
      throw ExitCode(Self.exitSource)
    }
    reporter.send(.copied, "copied \(copied) new files (\(bytes) bytes)")
  }

  static func exit(_ error: CopyError) -> ExitCode {
    FileHandle.standardError.write(Data("workoutctl: \(error)\n".utf8))
    switch error {
    case .full: return ExitCode(exitFull)
    case .readOnly: return ExitCode(exitReadOnly)
    case .gone: return ExitCode(exitGone)
    case .source: return ExitCode(exitSource)
    case .failed: return ExitCode(1)
    }
  }
}

/// Tells the service how a copy onto a stick goes; a service that cannot be reached does not
/// stop the copy (the export table still records it), it is only said on stderr.
struct CopyReporter {
  var enabled: Bool
  var target: String
  var device: String?
  var locations: Locations

  func send(_ phase: StickCopyReport.Phase, _ detail: String) {
    guard enabled else { return }
    let request = ControlRequest(
      command: .reportCopy, copy: StickCopyReport(phase: phase, target: target, detail: detail, device: device))
    do {
      let reply = try sendControl(request, socketPath: locations.socket, timeout: 5)
      if !reply.ok { throw ControlClientError.badReply(reply.message ?? "refused") }
    } catch {
      FileHandle.standardError.write(Data("workoutctl: the service was not told (\(phase.rawValue)): \(error)\n".utf8))
    }
  }
}

struct StickCheck: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "stick-check",
    abstract: "Whether a USB block device is a stick to copy the rides onto (the USB units' ExecCondition).",
    discussion: """
      Exit status 0 when it is; 1, saying why, when a file system of its disk is mounted: the \
      disk the board runs from (a Pi booting from a USB SSD), or one someone mounted by hand, \
      is left alone, however its partitions look.
      """
  )
  @Option(help: ArgumentHelp("The stick or its partition (/dev/sda1).", valueName: "device")) var device: String

  func run() throws {
    let name = StickIdentity.kernelName(of: device)
    let mountinfo = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
    if let mounted = StickIdentity.mountedFileSystem(onDiskOf: name, mountinfo: mountinfo) {
      print("\(name): not a stick for the rides: its disk has \(mounted) mounted")
      throw ExitCode(1)
    }
  }
}

struct ReportCopy: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "report-copy",
    abstract: "Tell the service that a USB stick's copy has ended and it is unmounted (workoutd-usb@.service).",
    discussion: """
      Run by workoutd-usb@.service after it unmounted the stick: after a whole copy the service \
      says the stick is safe to remove (a long chirp, status); after anything else (pulled \
      mid-copy, a file system that would not mount) it shows a fault until a plug finishes the \
      job. The unit's result is read from $SERVICE_RESULT, $EXIT_CODE and $EXIT_STATUS.
      """
  )
  @OptionGroup var locations: Locations
  @Option(help: ArgumentHelp("The stick's partition (/dev/sda1).", valueName: "device")) var device: String
  @Option(help: "The unit that mounted it, for the rider to look up (journalctl -u).") var unit: String?
  @Flag(
    help: """
      The stick cannot take the rides (workoutd-usb-unusable@.service): tell the service why, from \
      what udev found on it, unless another partition of the same stick takes them.
      """)
  var unusable = false
  @Flag(help: "The stick that could not take the rides is gone (that unit's stop).") var removed = false

  func validate() throws {
    if unusable && removed { throw ValidationError("--unusable or --removed, not both") }
  }

  func run() throws {
    let environment = ProcessInfo.processInfo.environment
    let name = StickIdentity.kernelName(of: device)
    // The unit's ExecCondition (stick-check) found the board's own disk: nothing to tell.
    if environment["SERVICE_RESULT"] == "exec-condition" { return }
    if unusable || removed {
      try reportUnusable(name)
      return
    }
    // The partition may be gone already (pulled): its UUID is then unknown here, and the
    // kernel name is what the rider can match with the log.
    let target = StickIdentity.targetName(forDevice: device) ?? "usb:\(name)"
    var result = [environment["SERVICE_RESULT"], environment["EXIT_CODE"], environment["EXIT_STATUS"]]
      .compactMap { $0 }.joined(separator: " ")
    if result.isEmpty { result = "no result from systemd" }
    if let unit { result += "; journalctl -u \(unit)" }
    // A write-protected stick fails its file system check (fsck cannot open it to write), so
    // it is never mounted: what the rider can do about it is the lock switch.
    if StickIdentity.isWriteProtected(name) {
      result = "the stick is read-only (write-protected: a lock switch?); " + result
    }
    let reply: ControlReply
    do {
      reply = try sendControl(
        ControlRequest(
          command: .reportCopy,
          copy: StickCopyReport(phase: .unmounted, target: target, detail: result, device: name)),
        socketPath: locations.socket, timeout: 5)
    } catch {
      throw fail("\(error)")
    }
    guard reply.ok else { throw fail(reply.message ?? "refused") }
  }

  /// A stick 80-workoutd-usb.rules found unusable: judged from udev's properties of it and of
  /// the other partitions of its disk (sysfs), said to the service as `refused`; its removal
  /// as `removed`.
  private func reportUnusable(_ name: String) throws {
    let target = StickIdentity.targetName(forDevice: device) ?? "usb:\(name)"
    var report = StickCopyReport(phase: .removed, target: target, detail: "removed", device: name)
    if unusable {
      let stick = StickSuitability.Device(name: name, properties: try Self.udevProperties(name))
      var siblings: [StickSuitability.Device] = []
      if stick.properties["DEVTYPE"] == "partition" {
        for sibling in Self.partitionsBeside(name) where sibling != name {
          siblings.append(.init(name: sibling, properties: (try? Self.udevProperties(sibling)) ?? [:]))
        }
      }
      guard let why = StickSuitability.refusal(of: stick, siblings: siblings) else {
        print("\(name): not for the rides, and nothing to tell: another partition of the stick takes them")
        return
      }
      print("\(target): \(why)")
      report = StickCopyReport(phase: .refused, target: target, detail: why, device: name)
    }
    let reply: ControlReply
    do {
      reply = try sendControl(
        ControlRequest(command: .reportCopy, copy: report), socketPath: locations.socket, timeout: 5)
    } catch {
      throw fail("\(error)")
    }
    guard reply.ok else { throw fail(reply.message ?? "refused") }
  }

  /// udev's properties of block device `name` (`udevadm info`, which reads udev's database).
  static func udevProperties(_ name: String) throws -> [String: String] {
    let udevadm = try ChildProcess.run(
      "/usr/bin/udevadm", ["info", "--query=property", "--path=/sys/class/block/\(name)"])
    guard udevadm.status == 0 else { throw fail("udevadm info cannot describe \(name) (exit \(udevadm.status))") }
    return StickSuitability.properties(fromUdevadm: String(decoding: udevadm.output, as: UTF8.self))
  }

  /// The partitions of the disk that holds partition `name` (sysfs: its disk's directory).
  static func partitionsBeside(_ name: String) -> [String] {
    guard let disk = ExportFile.ledgerKey(forDirectory: "/sys/class/block/\(name)/..") else { return [] }
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: disk)) ?? []
    return entries.filter { FileManager.default.fileExists(atPath: "\(disk)/\($0)/partition") }.sorted()
  }
}

struct UsbDrive: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "usb-drive",
    abstract:
      "Make the board a USB drive holding the rides, or stop it being one (workoutd-usb-drive.service, as root).",
    discussion: """
      up makes the USB gadget (configfs, a read-only removable mass_storage LUN) with the \
      service's drive image in it, binds it to the USB device controller (dwc2 on a Pi), and \
      gives the LUN's medium to the image's owner, so the service can put each new image in. \
      down unbinds and removes it. status prints what the drive holds and whether a computer \
      has it. The image is made by the service when [usb_drive] is enabled in workoutd.toml.
      """
  )
  enum Action: String, ExpressibleByArgument, CaseIterable { case up, down, status }
  @Argument(help: "up, down or status.") var action: Action
  @Option(help: "The drive image the service makes.") var image = "/var/lib/workoutd/usb-drive.img"
  @Option(help: "The USB device controller in /sys/class/udc (default: the only or first one).") var controller: String?
  @Option(help: "configfs's usb_gadget directory.") var configfs = UsbGadget.defaultRoot

  func run() throws {
    let gadget = UsbGadget(root: configfs)
    switch action {
    case .status:
      guard let medium = gadget.medium() else { throw fail("no USB drive: \(gadget.directory) is not there") }
      let connection = gadget.connection()
      print("medium: \(medium.isEmpty ? "none" : medium)")
      print("controller: \(connection?.controller ?? "none (not bound)")")
      print(
        "host: \(connection.map { $0.state == "configured" ? "a computer has it (configured)" : $0.state } ?? "none")")
    case .down:
      do { try gadget.tearDown() } catch { throw fail("cannot remove the USB drive: \(error)") }
    case .up:
      guard access(UsbGadget.defaultRoot == configfs ? "/sys/kernel/config" : configfs, F_OK) == 0 else {
        throw fail("no configfs at \(configfs): this kernel has no USB gadget support (modprobe libcomposite)")
      }
      let controllers = UsbGadget.controllers()
      guard let chosen = controller ?? controllers.first else {
        throw fail(
          "no USB device controller in /sys/class/udc: on a Pi, dtoverlay=dwc2 in config.txt (see board/raspberrypi/USB-DRIVE.md)"
        )
      }
      guard controllers.contains(chosen) else {
        throw fail("no USB device controller \(chosen) (there are: \(controllers.joined(separator: ", ")))")
      }
      // The image's owner (the service) may change the medium; with no image yet, the owner of
      // its directory, and the drive starts empty.
      var info = stat()
      let imageThere = stat(image, &info) == 0
      if !imageThere {
        let parent = (image as NSString).deletingLastPathComponent
        guard stat(parent, &info) == 0 else { throw fail("cannot stat \(parent): \(String(cString: strerror(errno)))") }
      }
      let serial = machineSerial()
      do {
        try gadget.setUp(
          controller: chosen, identity: UsbGadget.Identity(serialNumber: serial), image: imageThere ? image : nil,
          owner: (info.st_uid, info.st_gid))
      } catch {
        try? gadget.tearDown()
        throw fail("cannot make the USB drive: \(error)")
      }
      print("USB drive on \(chosen): \(imageThere ? image : "no medium until the service makes its image")")
    }
  }

  /// A serial number a host tells boards apart by: the start of /etc/machine-id.
  func machineSerial() -> String {
    let text = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8)) ?? ""
    let hex = text.filter(\.isHexDigit).prefix(16)
    return hex.isEmpty ? "0000000000000000" : String(hex)
  }
}

struct Show: ParsableCommand {
  static let configuration = CommandConfiguration(abstract: "Show one session: summary, laps and events.")
  @OptionGroup var locations: Locations
  @Flag(help: "Print JSON.") var json = false
  @Option(help: "FTP, W, for IF and TSS (default: the one the session was recorded with).") var ftp: Double?
  @Argument(help: "The session id (see `workoutctl sessions`).") var id: Int64

  struct Detail: Codable {
    var session: SessionSummaryJSON
    var laps: [LapRecord]
    var events: [EventRecord]
    /// The heart-rate strap's RR intervals, when it sent any.
    var rrIntervals: RRSummary?
    /// Per sensor channel: the seconds with a value, mean and maximum.
    var channels: [ChannelTotals]
    /// Time in zone and training metrics, from the points.
    var training: TrainingJSON
    /// Its points, events and laps that a damaged record made unreadable: left out of all the
    /// above, and of its exports.
    var unreadable: UnreadableRows
    var database: String
  }

  /// RR intervals in short: how many, their mean, and RMSSD (the root mean square of successive
  /// differences, the usual short-term heart-rate variability figure), in milliseconds.
  struct RRSummary: Codable {
    var count: Int
    var meanMilliseconds: Double
    var rmssdMilliseconds: Double?

    init?(_ rows: [RRIntervalRecord]) {
      guard !rows.isEmpty else { return nil }
      let ms = rows.map(\.milliseconds)
      count = ms.count
      meanMilliseconds = ms.reduce(0, +) / Double(ms.count)
      let squares = zip(ms.dropFirst(), ms).map { ($0 - $1) * ($0 - $1) }
      rmssdMilliseconds = squares.isEmpty ? nil : (squares.reduce(0, +) / Double(squares.count)).squareRoot()
    }
  }

  func run() throws {
    let store = try openStore(locations)
    guard let record = try store.session(id: id) else { throw fail("no session \(id) in \(locations.database)") }
    let summary = try SessionSummaryJSON(record: record, store: store)
    let laps = try store.laps(sessionID: id)
    let events = try store.events(sessionID: id)
    let detail = Detail(
      session: summary, laps: laps, events: events, rrIntervals: RRSummary(try store.rrIntervals(sessionID: id)),
      channels: try store.channelTotals(sessionID: id),
      training: try TrainingJSON(
        store: store, sessionID: id, endTimer: summary.timer, events: events, laps: laps,
        firstActivity: summary.activity, ftp: ftp),
      unreadable: try store.unreadableRows(sessionID: id), database: locations.database)
    if json {
      print(try ControlJSON.encode(detail, pretty: true))
      return
    }
    let s = detail.session
    print("session \(s.id): \(s.activity), \(s.state)")
    print("start \(s.start.map(Format.date) ?? "-"), end \(s.end.map(Format.date) ?? "-")")
    print(
      "timer \(Format.duration(s.timer)), elapsed \(Format.duration(s.elapsed)), distance \(Format.distance(s.distance))"
    )
    print("ascent \(wholeNumberText(s.ascent)) m, descent \(wholeNumberText(s.descent)) m")
    if let average = s.averageSpeed {
      print("speed avg \(Format.speed(average))" + (s.maxSpeed.map { ", max \(Format.speed($0))" } ?? ""))
    }
    if let hr = s.averageHeartRate {
      print("heart rate avg \(wholeNumberText(hr)), max \(wholeNumberText(s.maxHeartRate ?? hr))")
    }
    if let rr = detail.rrIntervals {
      print(
        "RR intervals \(rr.count), mean \(wholeNumberText(rr.meanMilliseconds)) ms"
          + (rr.rmssdMilliseconds.map { ", RMSSD \(wholeNumberText($0)) ms" } ?? ""))
    }
    print("points \(s.points)")
    if !detail.unreadable.isEmpty {
      print("left out as unreadable (a damaged record): \(detail.unreadable.description)")
    }
    if !detail.channels.isEmpty {
      print("\nsensor        seconds  share  average    maximum")
      for totals in detail.channels {
        let (name, value): (String, (Double) -> String) =
          switch totals.channel {
          case .heartRate: ("heart rate", { "\(wholeNumberText($0)) bpm" })
          case .power: ("power", { "\(wholeNumberText($0)) W" })
          case .cadence: ("cadence", { "\(wholeNumberText($0)) rpm" })
          case .wheelSpeed: ("wheel speed", Format.speed)
          case .gpsSpeed: ("GPS speed", Format.speed)
          }
        let share = s.points > 0 ? "\(wholeNumberText(100 * Double(totals.seconds) / Double(s.points))) %" : "-"
        print(
          [
            Format.pad(name, 13), Format.pad(String(totals.seconds), 8), Format.pad(share, 6),
            Format.pad(totals.average.map(value) ?? "-", 10), totals.maximum.map(value) ?? "-",
          ].joined(separator: " "))
      }
    }
    detail.training.printText()
    if !detail.laps.isEmpty {
      print("\nlap  timer      distance   avg speed    avg HR  max HR")
      for lap in detail.laps {
        print(
          [
            Format.pad(String(lap.number), 4), Format.pad(Format.duration(lap.timer), 10),
            Format.pad(Format.distance(lap.distance), 10), Format.pad(lap.avgSpeed.map(Format.speed) ?? "-", 12),
            Format.pad(lap.avgHR.map { wholeNumberText($0) } ?? "-", 7),
            lap.maxHR.map { wholeNumberText($0) } ?? "-",
          ].joined(separator: " "))
      }
    }
    print("\nevents:")
    for event in detail.events {
      var text = "  \(Format.date(event.wall))  \(event.kind)"
      if let from = event.fromState, let to = event.toState { text += " \(from) → \(to)" }
      if let cause = event.cause {
        text += " (\(cause)\(event.detail.map { ": \($0)" } ?? ""))"
      } else if let detail = event.detail {
        text += " \(detail)"
      }
      if event.kind == "lap", let value = event.value { text += " \(wholeNumberText(value))" }
      if event.kind == "recovered" {
        text += event.value.map { ", \(Format.duration($0)) away" } ?? ", time away unknown"
      }
      print(text)
    }
  }
}

enum Format {
  /// The GPS's condition in a rider's words, with the service's reason.
  static func gps(_ condition: GPSCondition, detail: String?) -> String {
    let words =
      switch condition {
      case .none: "none reported"
      case .noGPSD: "NO GPSD"
      case .noReceiver: "NO RECEIVER (gpsd is up)"
      case .searching: "searching for a fix"
      case .rejecting: "FIXES REFUSED"
      case .fix: "fix"
      }
    guard let detail, condition != .fix, condition != .searching, condition != .none else { return words }
    return "\(words): \(detail)"
  }

  /// h:mm:ss; a time no `Int` holds (another build's status, a damaged record) as it is.
  static func duration(_ seconds: Double) -> String {
    guard convertsToInt(seconds) else { return "\(seconds) s" }
    let total = Int(seconds.rounded())
    return String(format: "%d:%02d:%02d", total / 3600, (total % 3600) / 60, total % 60)
  }

  static func distance(_ metres: Double) -> String { decimal(metres / 1000, places: 2) + " km" }
  static func speed(_ metresPerSecond: Double) -> String { decimal(metresPerSecond * 3.6, places: 1) + " km/h" }

  /// `value` with `places` decimals; one past 1e15 (a damaged record's) as Swift writes it,
  /// not as the 300 digits `%f` would print.
  static func decimal(_ value: Double, places: Int) -> String {
    convertsToInt(value) ? String(format: "%.\(places)f", value) : "\(value)"
  }

  static func pace(_ secondsPerKm: Double) -> String {
    guard convertsToInt(secondsPerKm) else { return "\(secondsPerKm) s/km" }
    let total = Int(secondsPerKm.rounded())
    return String(format: "%d:%02d /km", total / 60, total % 60)
  }

  static func date(_ wall: Double) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyy-MM-dd HH:mm:ss'Z'"
    return formatter.string(from: Date(timeIntervalSince1970: wall))
  }

  static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let padding = String(repeating: " ", count: max(0, width - text.count))
    return right ? padding + text : text + padding
  }
}

Workoutctl.main(LeadingOptions.moved(Array(CommandLine.arguments.dropFirst())))

struct Sensors: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Bluetooth LE sensors: find the straps, power meters and speed/cadence pods around, and choose them.",
    subcommands: [List.self, Scan.self, Add.self, Remove.self])

  static func request(_ request: ControlRequest, _ locations: Locations, timeout: Double = 20) throws -> ControlReply {
    let reply: ControlReply
    do {
      reply = try sendControl(request, socketPath: locations.socket, timeout: timeout)
    } catch {
      throw fail("\(error)")
    }
    guard reply.ok else { throw fail(reply.message ?? "refused") }
    return reply
  }

  static func printList(_ sensors: [SensorEntryReport]) {
    guard !sensors.isEmpty else {
      print("no sensors (workoutctl sensors scan, then workoutctl sensors add ADDRESS)")
      return
    }
    for sensor in sensors {
      print(
        "\(sensor.role.padding(toLength: 13, withPad: " ", startingAt: 0)) \(sensor.address) (\(sensor.addressType))  from the \(sensor.origin == "configuration" ? "configuration file" : "workoutctl")"
      )
    }
  }

  struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "The sensors the service runs, and where each was chosen (their condition: workoutctl status).")
    @OptionGroup var locations: Locations
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
      let reply = try Sensors.request(ControlRequest(command: .listSensors), locations)
      if json {
        print(try ControlJSON.encode(reply.sensors ?? []))
      } else {
        Sensors.printList(reply.sensors ?? [])
      }
    }
  }

  struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract:
        "Choose a sensor: connected at once, kept for the next start (over the configuration file's for its role).",
      discussion:
        "What it is (heart rate, power, speed/cadence) is known from the last scan; otherwise give --role. One sensor per role: adding one replaces the one before."
    )
    @OptionGroup var locations: Locations
    @Argument(help: "Its address, as sensors scan shows it.") var address: String
    @Option(help: "heart_rate, power or speed_cadence.") var role: String?
    @Option(help: "public or random (default: as the scan heard it).") var type: String?

    func run() throws {
      let reply = try Sensors.request(
        ControlRequest(command: .addSensor, address: address, addressType: type, role: role), locations)
      print(reply.message ?? "added")
    }
  }

  struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Stop using a sensor (also one the configuration file names), now and at the next start.")
    @OptionGroup var locations: Locations
    @Argument(help: "Its address.") var address: String

    func run() throws {
      let reply = try Sensors.request(ControlRequest(command: .removeSensor, address: address), locations)
      print(reply.message ?? "removed")
    }
  }

  struct Scan: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Scan for heart-rate, cycling-power and speed/cadence sensors (the service scans: it has the rights).",
      discussion:
        "Wake the sensor first (wear the strap, turn the crank). Lists each sensor heard, strongest first, with the line that names it in [sensors] of the configuration file."
    )
    @OptionGroup var locations: Locations
    @Option(help: "How long to scan, seconds (1-60).") var seconds: Double = 10
    @Flag(help: "List every LE device heard, not only sensors.") var all = false
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
      let request = ControlRequest(command: .scanSensors, seconds: seconds, allDevices: all)
      if !json {
        FileHandle.standardError.write(Data("scanning for \(Int(request.scanSeconds)) s...\n".utf8))
      }
      let reply: ControlReply
      do {
        reply = try sendControl(request, socketPath: locations.socket, timeout: request.scanSeconds + 15)
      } catch {
        throw fail("\(error)")
      }
      guard reply.ok, let scan = reply.scan else { throw fail(reply.message ?? "the scan failed") }
      if json {
        print(try ControlJSON.encode(scan))
        return
      }
      let shared = scan.sharedDiscovery ? " (discovery was already running for another client: its results)" : ""
      print("\(scan.controller), \(wholeNumberText(scan.seconds)) s\(shared)")
      guard !scan.devices.isEmpty else {
        print(
          all
            ? "no LE device heard"
            : "no heart-rate, power or speed/cadence sensor heard (is it awake? --all lists every device)")
        return
      }
      let rows = scan.devices.map { device in
        [
          device.address, device.addressType, device.rssi.map { "\($0) dBm" } ?? "-",
          device.sensors.isEmpty ? "-" : device.sensors.joined(separator: ", "), device.name ?? "-",
        ]
      }
      let header = ["ADDRESS", "TYPE", "RSSI", "SENSOR", "NAME"]
      let widths = (0..<header.count).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
      for row in [header] + rows {
        print(
          row.enumerated().map { index, cell in
            index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
          }.joined(separator: "  "))
      }
      if let strap = scan.devices.first(where: { $0.sensors.contains("heart rate") }) {
        print(
          "\nto record it: workoutctl sensors add \(strap.address) (or, in [sensors] of the configuration file: heart_rate = \"\(Self.configValue(strap))\")"
        )
      }
    }

    /// The address as `[sensors]` takes it: with its type when the address alone would be read
    /// as the other one (a random static address has its two top bits set).
    static func configValue(_ device: SensorScanReport.Device) -> String {
      let first = UInt8(device.address.prefix(2), radix: 16) ?? 0
      let guessed = first & 0xC0 == 0xC0 ? "random" : "public"
      return guessed == device.addressType ? device.address : "\(device.address)/\(device.addressType)"
    }
  }
}

struct Pair: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Pair a phone with the board's web page ([web] enabled): a one-time code and its QR code.",
    discussion:
      "Open the URL on the phone (or scan the QR code, or type the code on the page): the phone gets a token of its own, kept until revoked. The code works once, for 5 minutes."
  )
  @OptionGroup var locations: Locations
  @Flag(help: "List the paired phones.") var list = false
  @Option(help: "Revoke phone ID (see --list).") var revoke: Int64?
  @Flag(help: "Print the reply as JSON.") var json = false
  @Flag(help: "No QR code.") var noQR = false

  func run() throws {
    if let revoke {
      let reply = try Sensors.request(ControlRequest(command: .revokePairing, id: revoke), locations)
      print(reply.message ?? "phone \(revoke) revoked")
      return
    }
    if list {
      let reply = try Sensors.request(ControlRequest(command: .listPairings), locations)
      let clients = reply.webClients ?? []
      if json {
        print(try ControlJSON.encode(clients))
        return
      }
      guard !clients.isEmpty else {
        print("no phones paired (workoutctl pair)")
        return
      }
      for client in clients {
        let paired = ExportTime.iso8601(client.paired)
        let seen = client.lastSeen.map { "last seen \(ExportTime.iso8601($0))" } ?? "not seen since pairing"
        let revoked = client.revoked.map { "  REVOKED \(ExportTime.iso8601($0))" } ?? ""
        print("\(client.id)  paired \(paired), \(seen)\(revoked)  \(client.name.prefix(60))")
      }
      return
    }
    let reply = try Sensors.request(ControlRequest(command: .pair), locations)
    guard let pairing = reply.pairing else { throw fail("the service sent no code") }
    if json {
      print(try ControlJSON.encode(pairing))
      return
    }
    print(
      "pairing code: \(pairing.code)  (valid \(wholeNumberText((pairing.expiresIn / 60).rounded(.down))) minutes, once)"
    )
    for url in pairing.urls { print("open on the phone: \(url)") }
    if !noQR, let url = pairing.urls.first {
      do {
        print(try TerminalQR.render(url))
      } catch {
        FileHandle.standardError.write(Data("workoutctl: no QR code: \(error)\n".utf8))
      }
    }
  }
}
