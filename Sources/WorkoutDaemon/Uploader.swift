import Foundation
import LinuxSupport
import Logging
import Synchronization
import UploadHTTP
import WorkoutCore
import WorkoutExport
import WorkoutStore
import WorkoutUpload

/// Sends each ended session to the configured platforms, on a thread of its own that sleeps
/// while there is nothing to send: woken by a session's end (`kick`), a job queued by hand, the
/// network coming up (`NetworkWatch`), or the next job's retry time; never by a timer of its
/// own. The jobs live in the database (`WorkoutStore.makeUploadJobs`), so a kill or a power
/// cut loses none, and each platform's protocol is a value (`UploadConversation`) this loop
/// only executes: it makes the ride's FIT file, sends what the conversation asks, records what
/// it asks to keep before the next request, and ends the job as it says. The per-second path
/// never waits for it. Its condition is a device's (`DeviceKind.uploads`).
final class Uploader: ServicePart, Sendable {
  let name = "uploader"
  let settings: UploadSettings
  private let store: WorkoutStore
  private let databasePath: String
  private let stravaTokens: StravaTokensFile
  private let sink: any InputSink
  private let log: Logger
  private let wall: @Sendable () -> Double
  private let stopSignal = StopSignal()
  private let transport: any PlatformTransport
  private let wake: WakeEvent?
  private let thread = Mutex<DeviceThread?>(nil)

  init(
    settings: UploadSettings, store: WorkoutStore, stateDirectory: String, sink: any InputSink, log: Logger,
    wall: @escaping @Sendable () -> Double = { SystemClocks.wall() }, requestProcess: String = "/proc/self/exe"
  ) {
    self.settings = settings
    self.store = store
    databasePath = store.path
    stravaTokens = StravaTokensFile(in: stateDirectory)
    self.sink = sink
    self.log = log
    self.wall = wall
    wake = WakeEvent()
    transport = settings.transport(
      PlatformHTTPClient.Settings(caFile: settings.caFile), stop: stopSignal, executable: requestProcess)
  }

  /// The uploader's thread runs at this nice value, as the exporter's does: making a long
  /// ride's FIT file takes the CPU the engine leaves.
  static let nice: Int32 = 10
  /// Its read-only connection's page cache: each session is read once, in order.
  static let readerCacheKiB = 64

  func start() throws(SystemError) {
    guard let wake else { throw SystemError("eventfd", errno: ENOMEM, context: "the uploader's wake") }
    let network: NetworkWatch?
    do {
      network = try NetworkWatch()
    } catch {
      log(.notice, "uploads: cannot watch the network (\(error)); a ride waits for its retry time instead")
      network = nil
    }
    let started = try DeviceThread.start(name: "uploader") { [self] in
      do {
        try DeviceThread.lowerThisThreadsPriority(toNice: Self.nice)
      } catch {
        log(.notice, "uploads run at the engine's priority: \(error)")
      }
      run(wake: wake, network: network)
    }
    thread.withLock { $0 = started }
  }

  /// Looks at the queue now: a session ended, or a job was queued by hand.
  func kick() { wake?.signal() }

  /// Ends the thread, aborting a request under way (its job stays as it was, and the next
  /// start sends it again: the platform's duplicate answer or the job's upload id proves it).
  func stop() {
    stopSignal.stop()
    thread.withLock { thread in
      thread?.join()
      thread = nil
    }
  }

  private func run(wake: WakeEvent, network: NetworkWatch?) {
    var reader: WorkoutStore?
    var previous: DeviceStatus?
    var networkCameUp = false
    while !stopSignal.isStopRequested {
      var attempted = false
      let status = pass(reader: &reader, networkCameUp: networkCameUp, attempted: &attempted)
      if status != previous { sink.post(.device(status)) }
      previous = status
      networkCameUp = false
      // A pass that sent a ride made its FIT file: what that used goes back (SQLite's cache, the
      // heap, the encoders' code pages), as after an export.
      reader?.releaseMemory()
      ProcessMemory.releaseFreeHeap()
      if attempted { _ = try? ProcessMemory.releaseCodePages() }
      var descriptors = [wake.pollEntry] + (network.map { [$0.pollEntry] } ?? [])
      let stopped: Bool
      do {
        stopped = try stopSignal.poll(&descriptors, until: nextWake())
      } catch {
        log(.warning, "uploads: \(error); looking at the queue again in a minute")
        stopped = stopSignal.wait(seconds: 60)
      }
      if stopped { break }
      if descriptors[0].revents != 0 { wake.consume() }
      if let network, descriptors[1].revents != 0, network.drain() {
        log(.info, "uploads: the network changed; rides waiting for it are tried now")
        networkCameUp = true
      }
    }
  }

  /// When (monotonic) the next job's retry time comes, at most `UploadBackoff`'s ceiling from
  /// now: a wall clock set back (a board without a real-time clock, before NTP) must not park
  /// the queue.
  private func nextWake() -> Double? {
    let now = wall()
    guard let next = try? store.nextUploadRetry(after: now, targets: settings.targets) else { return nil }
    return SystemClocks.monotonic() + min(max(0, next - now), UploadBackoff().ceiling)
  }

  /// Makes the jobs of the sessions ended since the last pass, then works through every job
  /// that is due (`attempted` says whether there was one). Returns the uploader's condition.
  private func pass(reader kept: inout WorkoutStore?, networkCameUp: Bool, attempted: inout Bool) -> DeviceStatus {
    func failing(_ detail: String) -> DeviceStatus {
      DeviceStatus(device: .uploads, condition: .failing, detail: detail)
    }
    let targets = settings.targets
    guard let secretsFile = settings.secretsFile else { return failing("[upload] secrets_file is not set") }
    let secrets: UploadSecrets
    do {
      secrets = try UploadSecrets.load(path: secretsFile, for: targets)
    } catch {
      log(.error, "uploads: \(error); rides wait in the queue until it is put right")
      return failing(error.description)
    }
    let pendingBefore: Int
    do {
      let made = try store.makeUploadJobs(for: targets, wall: wall())
      for job in made { log(.info, "uploads: session \(job.sessionID) queued for \(job.target.rawValue)") }
      if networkCameUp { try store.makeUploadRetriesDue(wall: wall()) }
      pendingBefore = try store.uploadCounts(targets: targets).pending
    } catch {
      log(.error, "uploads: cannot read the queue: \(error)")
      return failing("cannot read the queue: \(error)")
    }
    var sent = 0
    while !stopSignal.isStopRequested {
      let job: UploadJob
      do {
        guard let next = try store.nextUploadJob(at: wall(), targets: targets) else { break }
        job = next
      } catch {
        return failing("cannot read the queue: \(error)")
      }
      // Opened at the first job, not before: an uploader with nothing to send holds no
      // connection.
      let reader: WorkoutStore
      do {
        reader = try kept.opened(at: databasePath, cacheKiB: Self.readerCacheKiB)
      } catch {
        return failing("cannot read \(databasePath): \(error)")
      }
      attempted = true
      let ended = attempt(job, secrets: secrets, reader: reader)
      if ended.state == .done { sent += 1 }
      // A job that could not be saved is not asked for again in this pass.
      if ended == job { break }
    }
    let counts: UploadCounts
    let failures: [UploadJob]
    do {
      counts = try store.uploadCounts(targets: targets)
      failures = try store.standingUploadFailures(targets: targets)
    } catch {
      return failing("cannot read the queue: \(error)")
    }
    if pendingBefore > 0 && counts.pending == 0 && sent > 0 && settings.ledWhenSent { sink.post(.uploadsSent) }
    // The sender's socket missing: no ride leaves until the board is put right.
    if counts.pending > 0, let fault = transport.setUpFault { return failing(fault) }
    // A refusal is a fault until put right (sent again, or the target's next ride sent), a
    // restart included: the queue says so, not this pass.
    if let failure = failures.first {
      let more = failures.count > 1 ? " (and \(failures.count - 1) more platforms)" : ""
      return failing(
        "session \(failure.sessionID) to \(failure.target.rawValue): \(failure.reason ?? "refused")\(more)")
    }
    let place = targets.map(\.rawValue).joined(separator: ", ")
    let detail =
      counts.pending == 0 ? "to \(place): nothing waiting" : "to \(place): \(counts.pending) waiting"
    return DeviceStatus(device: .uploads, condition: .available, detail: detail)
  }

  /// One attempt at `job`, to its end or to a stop; returns the job as it was last saved.
  private func attempt(_ job: UploadJob, secrets: UploadSecrets, reader: WorkoutStore) -> UploadJob {
    let target = job.target.rawValue
    var saved = job
    func save(_ next: UploadJob) -> Bool {
      do {
        try store.saveUploadJob(next)
        saved = next
        return true
      } catch {
        log(.error, "uploads: cannot save session \(job.sessionID)'s job for \(target): \(error)")
        return false
      }
    }
    guard var conversation = conversation(for: job.target, secrets: secrets) else {
      _ = save(job.awaiting("not logged in to Strava: run workoutctl upload login strava", at: wall()))
      return saved
    }
    let file: (bytes: [UInt8], name: String)
    do {
      file = try fitFile(sessionID: job.sessionID, from: reader)
    } catch {
      _ = save(job.ending(with: .rejected(reason: "cannot make its FIT file: \(error)"), at: wall()))
      return saved
    }
    guard save(job.starting(at: wall())) else { return saved }
    log(.info, "uploads: sending session \(job.sessionID) to \(target) (\(file.bytes.count) bytes)")
    var step = conversation.start(job: saved, file: file.bytes, fileName: file.name)
    while true {
      switch step {
      case .send(let request, let after):
        if after > 0 && stopSignal.wait(seconds: after) { return saved }
        let reply = transport.perform(request)
        if stopSignal.isStopRequested, case .unreachable = reply { return saved }
        step = conversation.receive(reply)
      case .keep(let keep):
        if case .credentials(let bytes) = keep {
          do {
            try stravaTokens.write(bytes)
          } catch {
            log(.error, "uploads: cannot keep Strava's new login in \(stravaTokens.path): \(error)")
            _ = save(saved.ending(with: .retry(after: nil, reason: "cannot keep Strava's login: \(error)"), at: wall()))
            return saved
          }
        }
        guard save(saved.keeping(keep, at: wall())) else { return saved }
        step = conversation.kept()
      case .finished(let outcome):
        _ = save(saved.ending(with: outcome, at: wall()))
        switch outcome {
        case .done(let id, let duplicate):
          log(
            .notice,
            "uploads: session \(job.sessionID) is on \(target)\(id.map { " as \($0)" } ?? "")\(duplicate ? " (it had it already)" : "")"
          )
        case .retry(_, let reason):
          let when = saved.retryAt.map { " in \(Int(($0 - wall()).rounded())) s" } ?? ""
          log(.info, "uploads: session \(job.sessionID) to \(target) not sent (\(reason)); tried again\(when)")
        case .rejected(let reason):
          log(.warning, "uploads: \(target) refused session \(job.sessionID): \(reason)")
        }
        return saved
      }
    }
  }

  /// The platform's conversation for one attempt, from the configuration and the secrets
  /// read for this pass; nil for Strava before the rider has logged in.
  private func conversation(for target: UploadTarget, secrets: UploadSecrets) -> (any UploadConversation)? {
    switch target {
    case .intervalsICU:
      guard let platform = settings.intervalsICU, let key = secrets.intervalsICUAPIKey else { return nil }
      return IntervalsICUUpload(athleteID: platform.athleteID, apiKey: key, baseURL: platform.baseURL)
    case .webdav:
      guard let platform = settings.webDAV, let password = secrets.webDAVPassword else { return nil }
      return WebDAVUpload(collectionURL: platform.url, user: platform.user, password: password)
    case .strava:
      guard let platform = settings.strava, let secret = secrets.stravaClientSecret,
        let tokens = try? stravaTokens.read()
      else { return nil }
      return StravaUpload(
        app: StravaApp(clientID: platform.clientID, clientSecret: secret), tokens: tokens, now: wall(),
        server: platform.server)
    }
  }

  /// The session's FIT file, as the exporter writes it, in memory.
  private func fitFile(sessionID: Int64, from reader: WorkoutStore) throws -> (bytes: [UInt8], name: String) {
    guard let session = try reader.session(id: sessionID) else { throw ExportError("session \(sessionID) is gone") }
    let source = try ExportFile.Source.load(session, from: reader)
    var bytes: [UInt8] = []
    try ExportFile.stream(source, from: reader, format: .fit, cancelled: { stopSignal.isStopRequested }) {
      bytes += $0
    }
    return (bytes, ExportFile.name(for: session, format: .fit))
  }
}
