import Logging
import Synchronization
import UploadHTTP
import WorkoutControl
import WorkoutStore
import WorkoutUpload

/// Answers the control socket's upload commands (`workoutctl uploads`, `workoutctl upload`)
/// and the Strava login (`workoutctl upload login strava`) on the client's thread, through the
/// store, as the pairing commands are: the engine has no part in them.
final class UploadControl: Sendable {
  static let commands: Set<ControlCommand> = [.listUploads, .queueUpload, .stravaLoginAddress, .stravaLogin]

  private let store: WorkoutStore
  let settings: UploadSettings
  /// The targets the configuration names: only these are sent to.
  var targets: [UploadTarget] { settings.targets }
  /// Where the login's tokens are kept, as the uploader reads them.
  let stravaTokens: StravaTokensFile
  private let log: Logger
  /// The uploader's: called once a job is queued, so it looks at the queue at once.
  private let wakeHook = Mutex<(@Sendable () -> Void)?>(nil)

  /// The binary the login's request goes through when there is no sender's socket (tests give
  /// the built workoutd).
  private let requestProcess: String

  init(
    store: WorkoutStore, settings: UploadSettings, stateDirectory: String, log: Logger,
    requestProcess: String = "/proc/self/exe"
  ) {
    self.store = store
    self.settings = settings
    self.requestProcess = requestProcess
    stravaTokens = StravaTokensFile(in: stateDirectory)
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
    case .stravaLoginAddress:
      guard let strava = settings.strava else { return Self.stravaNotConfigured }
      return ControlReply(ok: true, loginAddress: StravaLogin.authorizationURL(clientID: strava.clientID))
    case .stravaLogin:
      return stravaLogin(pasted: request.pasted ?? "", wall: wall)
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

  static let stravaNotConfigured = ControlReply(
    ok: false, message: "Strava is not configured: add a [strava] section with the API application's client_id")

  /// Trades the code in what the rider pasted for Strava's tokens (RFC 6749 §4.1.3, Strava's
  /// "Token Exchange"), keeps them where the uploader reads them, and makes the jobs that waited
  /// for the login due. The exchange blocks this client's thread only.
  private func stravaLogin(pasted: String, wall: Double) -> ControlReply {
    guard let strava = settings.strava else { return Self.stravaNotConfigured }
    guard let secretsFile = settings.secretsFile else {
      return ControlReply(ok: false, message: "[upload] secrets_file is not set: it holds strava_client_secret")
    }
    let secret: String
    do {
      guard let read = try UploadSecrets.load(path: secretsFile, for: [.strava]).stravaClientSecret else {
        return ControlReply(ok: false, message: "\(secretsFile) has no strava_client_secret")
      }
      secret = read
    } catch {
      return ControlReply(ok: false, message: "cannot read the secrets: \(error)")
    }
    let tokens: StravaTokens
    do {
      let code = try StravaLogin.authorizationCode(fromPasted: pasted)
      // Short limits: the rider waits at the terminal, and workoutctl gives up after 60 s.
      let client = settings.transport(
        PlatformHTTPClient.Settings(caFile: settings.caFile, connectTimeoutSeconds: 15, lowSpeedSeconds: 30),
        stop: nil, executable: requestProcess)
      let exchange = StravaLogin.tokenExchange(
        code: code, app: StravaApp(clientID: strava.clientID, clientSecret: secret), server: strava.server)
      tokens = try StravaLogin.tokens(fromExchange: client.perform(exchange))
    } catch {
      log(.warning, "uploads: the Strava login failed: \(error)")
      return ControlReply(ok: false, message: "not logged in to Strava: \(error)")
    }
    do {
      try stravaTokens.write(tokens.fileContent())
    } catch {
      log(.error, "uploads: cannot keep the Strava login in \(stravaTokens.path): \(error)")
      return ControlReply(ok: false, message: "cannot keep the Strava login in \(stravaTokens.path): \(error)")
    }
    log(.info, "uploads: logged in to Strava over the control socket")
    // The Strava jobs that waited for the login wait for their retry time: due now.
    let due = (try? store.makeUploadRetriesDue(wall: wall)) ?? 0
    wakeHook.withLock { $0 }?()
    let waiting = due == 0 ? "" : "; \(due) waiting upload\(due == 1 ? " goes" : "s go") now"
    return ControlReply(ok: true, message: "logged in to Strava\(waiting)")
  }
}
