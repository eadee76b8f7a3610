import Logging
import Synchronization
import WorkoutControl
import WorkoutStore
import WorkoutUpload

/// Answers the control socket's upload commands (`workoutctl uploads`, `workoutctl upload`)
/// on the client's thread, through the store, as the pairing commands are: the engine has no
/// part in them.
final class UploadControl: Sendable {
  static let commands: Set<ControlCommand> = [.listUploads, .queueUpload]

  private let store: WorkoutStore
  /// The targets the configuration names: only these are sent to.
  let targets: [UploadTarget]
  private let log: Logger
  /// The uploader's: called once a job is queued, so it looks at the queue at once.
  private let wakeHook = Mutex<(@Sendable () -> Void)?>(nil)

  init(store: WorkoutStore, targets: [UploadTarget], log: Logger) {
    self.store = store
    self.targets = targets
    self.log = log
  }

  /// Sets what wakes the uploader after a job is queued by hand.
  func onQueued(_ wake: @escaping @Sendable () -> Void) {
    wakeHook.withLock { $0 = wake }
  }

  /// Answers `request` at `wall` (the system's wall time, as the queue's jobs are stamped).
  func handle(_ request: ControlRequest, wall: Double) -> ControlReply {
    switch request.command {
    case .listUploads:
      do {
        return ControlReply(ok: true, uploads: try store.uploadJobs(sessionID: request.session))
      } catch {
        return ControlReply(ok: false, message: "cannot read the upload queue: \(error)")
      }
    case .queueUpload:
      return queue(request, wall: wall)
    default:
      return ControlReply(ok: false, message: "not an upload command")
    }
  }

  private func queue(_ request: ControlRequest, wall: Double) -> ControlReply {
    guard let id = request.session, let name = request.target else {
      return ControlReply(ok: false, message: "queueUpload needs session and target")
    }
    guard let target = UploadTarget(rawValue: name) else {
      let known = UploadTarget.allCases.map(\.rawValue).joined(separator: ", ")
      return ControlReply(ok: false, message: "no upload target \"\(name)\" (known: \(known))")
    }
    guard targets.contains(target) else {
      let configured = targets.isEmpty ? "none is" : targets.map(\.rawValue).joined(separator: ", ") + " are"
      return ControlReply(
        ok: false, message: "\(name) is not configured as an upload target (\(configured)): add it to the configuration"
      )
    }
    let outcome: UploadQueueing
    do {
      outcome = try store.queueUpload(sessionID: id, target: target, again: request.again == true, wall: wall)
    } catch {
      log(.error, "uploads: cannot queue session \(id) for \(name): \(error)")
      return ControlReply(ok: false, message: "cannot queue session \(id) for \(name): \(error)")
    }
    switch outcome {
    case .queued(let job):
      log(.info, "uploads: session \(id) queued for \(name) over the control socket")
      wakeHook.withLock { $0 }?()
      return ControlReply(ok: true, message: "session \(id) queued for \(name)", uploads: [job])
    case .pending(let job):
      return ControlReply(
        ok: true, message: "session \(id) is on its way to \(name) already (\(job.state.rawValue))", uploads: [job])
    case .finished(let job) where job.state == .done:
      return ControlReply(
        ok: false,
        message:
          "session \(id) was sent to \(name) already\(job.platformID.map { " (\($0))" } ?? ""): --again sends it again",
        uploads: [job])
    case .finished(let job):
      return ControlReply(
        ok: false,
        message: "session \(id) failed to go to \(name): \(job.reason ?? "no reason kept"); --again tries again",
        uploads: [job])
    case .noSession:
      return ControlReply(ok: false, message: "no session \(id) (workoutctl sessions lists them)")
    case .notEnded(let state):
      return ControlReply(
        ok: false, message: "session \(id) is \(state.isEmpty ? "not ended" : state): a ride is sent once it has ended")
    }
  }
}
