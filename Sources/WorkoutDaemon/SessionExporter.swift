import Foundation
import LinuxSupport
import Logging
import Synchronization
import WorkoutCore
import WorkoutExport
import WorkoutStore

#if canImport(Glibc)
  import Glibc
#endif

/// Writes each ended session's files (the configured formats) into the exports directory, on a
/// thread of its own with its own read-only connection: the engine loop never waits for an
/// export. It runs at start (catching up what an earlier run did not finish: a kill or a power
/// cut mid-export leaves at most a temporary file, which is replaced) and whenever a session's
/// summary is committed. What it writes goes into the export table under the directory's
/// path; a session whose files are all there is left alone. Its condition is a device's
/// (`DeviceKind.exports`): a failure is an event, a log line, the LED's fault and a line in
/// `workoutctl status`, and the next kick (or start) tries again.
final class SessionExporter: Sendable {
  private enum Message {
    case pass
    case finish
  }

  private let databasePath: String
  private let ledger: WorkoutStore
  private let formats: [ExportFormat]
  private let directory: String
  private let sink: any InputSink
  private let log: Logger
  private let drive: UsbDrive?
  private let queue = InputQueue<Message>()
  private let done = InputQueue<Bool>()
  /// Joined once it has said it is done; left to the process's exit when a stop stops waiting.
  private let thread = Mutex<DeviceThread?>(nil)

  init(
    databasePath: String, ledger: WorkoutStore, formats: [ExportFormat], directory: String, sink: any InputSink,
    log: Logger, drive: UsbDrive? = nil
  ) {
    self.drive = drive
    self.databasePath = databasePath
    self.ledger = ledger
    self.formats = formats
    self.directory = directory
    self.sink = sink
    self.log = log
  }

  /// Starts the thread, with a first pass unless told not to (then the first `kick()` makes it).
  func start(firstPass: Bool = true) throws(SystemError) {
    if firstPass { queue.post(.pass) }
    let started = try DeviceThread.start(name: "exporter") { [self] in
      do {
        try DeviceThread.lowerThisThreadsPriority(toNice: Self.nice)
      } catch {
        log(.notice, "exports run at the engine's priority: \(error)")
      }
      // Opened at the first pass that can, and kept for the service's life: freeing a GRDB
      // connection starts libdispatch's worker pool and its one-second monitor (see
      // `ReadOnlyConnection`), which would wake an idle board every second.
      var reader: WorkoutStore?
      var previous: DeviceStatus.Condition?
      var firstPass = true
      // When the USB drive wants another look (a host holding it, a failed build).
      var driveDeadline: Double?
      var previousDrive: DeviceStatus?
      func updateDrive() {
        guard let drive, let reader, let destination = ExportFile.ledgerKey(forDirectory: directory) else { return }
        let outcome = drive.update(
          reader: reader, exportDirectory: directory, destination: destination, wallNow: Date().timeIntervalSince1970)
        driveDeadline = outcome.retryAfter.map { SystemClocks.monotonic() + $0 }
        if outcome.status != previousDrive { sink.post(.device(outcome.status)) }
        previousDrive = outcome.status
      }
      while true {
        let message = queue.next(until: driveDeadline)
        if case .finish? = message { break }
        guard message != nil else {
          // The drive's deadline came, with no kick: only the drive is looked at.
          updateDrive()
          continue
        }
        // Kicks that came meanwhile are one pass.
        while case .pass? = queue.peek() { _ = queue.poll() }
        let status = pass(removeStale: firstPass, reader: &reader)
        if status.condition == .available { updateDrive() }
        // A pass is rare and may be large (a catch-up after an upgrade): what it used goes
        // back, SQLite's cache and the heap its thread's malloc arena kept.
        reader?.releaseMemory()
        ProcessMemory.releaseFreeHeap()
        // And the exporters' code, which the next recorded second does not run (a failure
        // was told at start, where it is tried first).
        _ = try? ProcessMemory.releaseCodePages()
        firstPass = false
        if status.condition != previous || status.condition != .available {
          sink.post(.device(status))
        }
        previous = status.condition
      }
      done.post(true)
    }
    thread.withLock { $0 = started }
  }

  /// Looks for sessions to export.
  func kick() { queue.post(.pass) }

  /// Lets a pass under way finish, waiting up to `seconds`; what is left is done at the next start.
  /// Asks the thread to end and waits for it at most `seconds`; true if it ended.
  @discardableResult
  func finish(waiting seconds: Double) -> Bool {
    queue.post(.finish)
    if done.next(until: SystemClocks.monotonic() + seconds) == nil {
      log(.notice, "exports into \(directory) not finished at stop; the next start completes them")
      return false
    }
    thread.withLock { thread in
      thread?.join()
      thread = nil
    }
    return true
  }

  /// One pass: every configured format of every ended session not yet in the directory, or
  /// there as it was before a later event (`ExportPlan.notExported`). A session that cannot be
  /// exported does not hold up the others: the pass goes on, and its
  /// status names how many failed and the first failure.
  func pass(removeStale: Bool, reader kept: inout WorkoutStore?) -> DeviceStatus {
    func failing(_ detail: String) -> DeviceStatus {
      DeviceStatus(device: .exports, condition: .failing, detail: detail)
    }
    if let problem = Self.makeDirectory(directory) { return failing("cannot make \(directory): \(problem)") }
    guard let destination = ExportFile.ledgerKey(forDirectory: directory) else {
      return failing("cannot resolve \(directory): \(String(cString: strerror(errno)))")
    }
    if removeStale { removeTemporaryFiles() }
    let reader: WorkoutStore
    do {
      reader = try kept.opened(at: databasePath, cacheKiB: Self.readerCacheKiB)
    } catch {
      return failing("cannot read \(databasePath): \(error)")
    }
    let plan = ExportPlan.notExported(formats: formats, destination: destination, in: reader)
    var failures = plan.unlisted
    func failed(_ sessionID: Int64, _ format: String, _ error: any Error) {
      let failure = "session \(sessionID) as \(format.uppercased()): \(error)"
      log(.warning, "cannot export \(failure); the other sessions go on, it is tried again at the next pass")
      failures.append(failure)
    }
    plan.write(from: reader, into: directory, destination: destination, wallNow: { Date().timeIntervalSince1970 }) {
      switch $0 {
      case .failed(let sessionID, let format, let error):
        failed(sessionID, format.rawValue, error)
      case .written(let file, let entry):
        do {
          try ledger.recordExport(entry)
          log(
            file.unreadable.isEmpty ? .info : .warning,
            "exported session \(entry.sessionID) to \(file.path) \(file.counts)")
        } catch {
          failed(entry.sessionID, entry.format, error)
        }
      }
    }
    if let first = failures.first {
      return failing(failures.count == 1 ? first : "\(failures.count) exports failed; the first: \(first)")
    }
    return DeviceStatus(
      device: .exports, condition: .available,
      detail: "\(formats.map { $0.rawValue.uppercased() }.joined(separator: "+")) into \(directory)")
  }

  /// Whether every configured format of session `id` is in the directory, as it is now (read
  /// through `store`): what a low battery's power-off waits for.
  func hasExported(sessionID id: Int64, in store: WorkoutStore) -> Bool {
    guard let destination = ExportFile.ledgerKey(forDirectory: directory) else { return false }
    let plan = ExportPlan.notExported(formats: formats, destination: destination, in: store)
    return plan.unlisted.isEmpty && !plan.jobs.contains { $0.sessionID == id }
  }

  /// The exporter's thread runs at this nice value: a catch-up of many sessions (the first
  /// start after an upgrade) takes the CPU the engine leaves.
  static let nice: Int32 = 10
  /// The exporter's own page cache: it reads each session once, in order, so a large cache
  /// buys nothing and would stay in the service's memory between passes.
  static let readerCacheKiB = 64

  /// Makes `path` and its missing parents (mode 0750: the service's group reads the exports);
  /// nil when done, else why not (strerror's words).
  static func makeDirectory(_ path: String) -> String? {
    // Relative to the working directory unless absolute (`make run` gives a relative state
    // directory).
    var prefix = path.hasPrefix("/") ? "" : "."
    for component in path.split(separator: "/", omittingEmptySubsequences: true) {
      prefix += "/" + component
      if mkdir(prefix, 0o750) != 0 && errno != EEXIST { return String(cString: strerror(errno)) }
    }
    var info = stat()
    guard stat(path, &info) == 0 else { return String(cString: strerror(errno)) }
    return info.st_mode & S_IFMT == S_IFDIR ? nil : String(cString: strerror(ENOTDIR))
  }

  /// Temporary files of exports a kill or power cut interrupted (".NAME.partial").
  private func removeTemporaryFiles() {
    guard let stream = opendir(directory) else { return }
    defer { closedir(stream) }
    while let entry = readdir(stream) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
      guard name.hasPrefix("."), name.hasSuffix(".partial") else { continue }
      if unlink(directory + "/" + name) == 0 {
        log(.notice, "removed \(directory)/\(name), an export an earlier run did not finish; it is written again")
      }
    }
  }
}

extension Optional where Wrapped == WorkoutStore {
  /// A part's own read-only connection (the exporter's, the uploader's): opened at the first
  /// pass that can and kept for the service's life, since freeing a GRDB connection starts
  /// libdispatch's worker pool and its one-second monitor (`ReadOnlyConnection`).
  mutating func opened(at path: String, cacheKiB: Int) throws(StoreError) -> WorkoutStore {
    if let store = self { return store }
    let store = try WorkoutStore.openForReading(at: path, cacheKiB: cacheKiB)
    self = store
    return store
  }
}
