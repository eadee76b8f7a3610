import ArgumentParser
import Foundation
import LinuxSupport
import WorkoutControl
import WorkoutCore
import WorkoutExport
import WorkoutStore

struct CopyExports: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "copy-exports",
    abstract: "Copy the service's exports a target has not had yet (a USB stick) into workoutd/ on it.",
    discussion: """
      What the service exported (its export table) and the target NAME has not had is copied into \
      TO/workoutd/, each file to a temporary name, synced and renamed, then recorded under NAME: a \
      target pulled mid-copy keeps whole files, and the next copy finishes the job. Nothing on the \
      target is followed through a symlink, nor anything of ours: the exports directory, each \
      file the export table names (only a name in it) and the database must be the state \
      directory owner's, not symlinks; a file refused is named, the others copied. Needs to write \
      the database (the service's user). \
      Exit status: 0 all copied, 10 the target is full, 11 it cannot be written, 12 it went away, \
      13 an export of ours is missing, unreadable or refused (the others are copied), 1 anything else.
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
    // What the export table names is read with CAP_DAC_OVERRIDE (workoutd-usb@.service) from
    // directories the service's user can change: each opened beneath a directory checked not
    // to be a symlink and to be that user's (`FileDescriptor.openBeneath`), so a symlinked
    // exports directory, a forged row or a link to another's file reads nothing but ours.
    let stateDirectory = (locations.database as NSString).deletingLastPathComponent
    let exports = from ?? stateDirectory + "/exports"
    let owner = Self.expectedOwner(of: stateDirectory)
    let exportsDirectory: FileDescriptor
    let source: String
    do {
      let parent = (exports as NSString).deletingLastPathComponent
      exportsDirectory = try FileDescriptor.openTrustedDirectory(parent, ownedBy: owner).openBeneath(
        (exports as NSString).lastPathComponent, expecting: .directory, ownedBy: owner, shownAs: parent)
      guard let key = ExportFile.ledgerKey(forDirectory: exports) else { throw SystemError.last("realpath", exports) }
      source = key
    } catch {
      let problem = "cannot use the exports directory \(exports): \(error)"
      reporter.send(.failed, problem)
      throw fail(problem)
    }
    let ledger: WorkoutStore
    do {
      ledger = try Self.openLedger(locations.database, in: stateDirectory, ownedBy: owner)
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
        bytes += try copier.copy(export.name, from: exportsDirectory, shownAs: exports, ownedBy: owner)
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
        // Each named: a refused file (a symlink, another's) is said with its reason.
        FileHandle.standardError.write(Data("workoutctl: not copied: \(error)\n".utf8))
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

  /// Whose the state directory and what is in it must be: the process's own user (the unit's
  /// User=workoutd); for root running it by hand, whoever owns the state directory.
  static func expectedOwner(of stateDirectory: String) -> uid_t {
    var info = stat()
    return geteuid() == 0 && lstat(stateDirectory, &info) == 0 ? info.st_uid : geteuid()
  }

  /// Opens the database to record the copies, checked first as the exports are: SQLite opens
  /// it by name, resolving symlinks first and then opening with O_NOFOLLOW, so a database it
  /// found anywhere but under our name was reached through a symlink put there in between.
  static func openLedger(_ path: String, in stateDirectory: String, ownedBy owner: uid_t) throws -> WorkoutStore {
    let state = try FileDescriptor.openTrustedDirectory(stateDirectory, ownedBy: owner)
    let name = (path as NSString).lastPathComponent
    _ = try state.openBeneath(name, expecting: .regular, ownedBy: owner, shownAs: stateDirectory)
    let ledger = try WorkoutStore.openForExportLedger(at: path)
    let expected = ExportFile.ledgerKey(forDirectory: stateDirectory).map { $0 + "/" + name }
    guard let opened = ledger.openedFile, opened == expected else { throw RefusedFile(path, .symlink) }
    return ledger
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
