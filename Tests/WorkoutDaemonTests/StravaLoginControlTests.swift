import Foundation
import Logging
import Synchronization
import Testing
import WorkoutControl
import WorkoutStore
import WorkoutTestSupport
import WorkoutUpload

@testable import WorkoutDaemon

extension UploadSettings {
  /// Settings that name `targets`, each with a section of placeholders.
  static func naming(_ targets: [UploadTarget]) -> UploadSettings {
    var settings = UploadSettings()
    for target in targets {
      switch target {
      case .intervalsICU: settings.intervalsICU = IntervalsICU(athleteID: "i1")
      case .strava: settings.strava = Strava(clientID: "4711")
      case .webdav: settings.webDAV = WebDAV(url: "https://dav.example/rides/", user: "rider")
      }
    }
    return settings
  }
}

/// `workoutctl upload login strava`'s two control commands, answered by `UploadControl` with
/// the real client against fake_strava.py over HTTPS with the test CA.
@Suite(.serialized) final class StravaLoginControlTests {
  static let log = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
  static let approved = "http://localhost/?state=&code=c0de&scope=read,activity:write"
  let h: ManualRuntime
  let certificates: TestCertificates

  init() throws {
    h = try ManualRuntime()
    certificates = try TestCertificates(in: h.directory + "/tls")
  }

  /// The fake, which lets code "c0de" be traded once, and settings that send Strava to it.
  func fakeStrava() throws -> (FakePlatformServer, UploadSettings) {
    let state = h.directory + "/strava"
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    try Data(#"{"codes": {"c0de": "read,activity:write"}}"#.utf8)
      .write(to: URL(fileURLWithPath: state + "/setup.json"))
    let server = try FakePlatformServer(
      script: "fake_strava.py", certificates: certificates, state: state, arguments: [])
    return (server, try settings(baseURL: server.origin))
  }

  func settings(baseURL: String) throws -> UploadSettings {
    var settings = UploadSettings.naming([.strava])
    settings.strava?.baseURL = baseURL
    settings.caFile = certificates.caFile
    settings.secretsFile = h.directory + "/secrets.toml"
    try Data(#"strava_client_secret = "app-secret""#.utf8).write(to: URL(fileURLWithPath: settings.secretsFile!))
    chmod(settings.secretsFile!, 0o600)
    return settings
  }

  func control(_ settings: UploadSettings) -> UploadControl {
    UploadControl(
      store: h.store, settings: settings, stateDirectory: h.directory, log: Self.log,
      requestProcess: binaryDirectory + "/workoutd")
  }

  static func login(_ pasted: String) -> ControlRequest { ControlRequest(command: .stravaLogin, pasted: pasted) }

  var tokensPath: String { h.directory + "/strava-tokens.json" }

  @Test func theAddressNamesTheConfiguredApplication() throws {
    let reply = control(.naming([.strava])).handle(ControlRequest(command: .stravaLoginAddress), wall: 1)
    #expect(reply.ok)
    let address = try #require(reply.loginAddress)
    #expect(address.hasPrefix("https://www.strava.com/oauth/authorize?") && address.contains("client_id=4711"))
    #expect(address.contains("scope=activity%3Awrite"))
  }

  @Test func withoutStravaOrItsSecretTheLoginIsRefusedInWords() throws {
    let none = control(.naming([.webdav]))
    for command in [ControlCommand.stravaLoginAddress, .stravaLogin] {
      let reply = none.handle(ControlRequest(command: command, pasted: Self.approved), wall: 1)
      #expect(!reply.ok && reply.message?.hasPrefix("Strava is not configured") == true, "\(reply)")
    }
    let noSecrets = control(.naming([.strava])).handle(Self.login(Self.approved), wall: 1)
    #expect(!noSecrets.ok && noSecrets.message?.contains("secrets_file is not set") == true, "\(noSecrets)")

    var missing = try settings(baseURL: "https://127.0.0.1:1")
    missing.secretsFile = h.directory + "/no-such-secrets.toml"
    let unread = control(missing).handle(Self.login(Self.approved), wall: 1)
    #expect(!unread.ok && unread.message?.hasPrefix("cannot read the secrets") == true, "\(unread)")
    #expect(unread.message?.contains("app-secret") == false)
    #expect(!FileManager.default.fileExists(atPath: tokensPath))
  }

  @Test func aPastedLineWithoutACodeOrARefusedCodeLogsNothingIn() throws {
    let (server, settings) = try fakeStrava()
    defer { server.stop() }
    let control = control(settings)
    let noCode = control.handle(Self.login("http://localhost/?state=&error=access_denied"), wall: 1)
    #expect(!noCode.ok && noCode.message?.hasPrefix("not logged in to Strava: ") == true, "\(noCode)")
    let refused = control.handle(Self.login("http://localhost/?state=&code=wrong&scope=activity:write"), wall: 1)
    #expect(!refused.ok && refused.message?.hasPrefix("not logged in to Strava: ") == true, "\(refused)")
    #expect(try server.received().filter { $0["path"] as? String == "/oauth/token" }.count == 1)
    #expect(!FileManager.default.fileExists(atPath: tokensPath))
  }

  @Test func anUnreachableStravaIsSaid() throws {
    let reply = control(try settings(baseURL: "https://127.0.0.1:1")).handle(Self.login(Self.approved), wall: 1)
    #expect(!reply.ok && reply.message?.hasPrefix("not logged in to Strava: ") == true, "\(reply)")
    #expect(!FileManager.default.fileExists(atPath: tokensPath))
  }

  @Test func theCodeIsTradedTheTokensKeptAndTheWaitingRideMadeDue() throws {
    let (server, settings) = try fakeStrava()
    defer { server.stop() }
    h.startRiding()
    h.run(for: 3)
    #expect(h.control(.stop)?.ok == true)
    h.run(for: 1)
    // A Strava job that waited for the login, until its far retry time.
    let control = control(settings)
    let queued = control.handle(ControlRequest(command: .queueUpload, session: 1, target: "strava"), wall: 5_000)
    var job = try #require(queued.uploads?.first)
    job.retryAt = 5_000 + 3_600
    try h.store.saveUploadJob(job)
    let wakes = Atomic<Int>(0)
    control.onQueued { wakes.add(1, ordering: .relaxed) }

    let reply = control.handle(Self.login(Self.approved), wall: 5_010)
    #expect(reply.ok && reply.message == "logged in to Strava; 1 waiting upload goes now", "\(reply)")
    #expect(wakes.load(ordering: .relaxed) == 1)
    #expect(try h.store.uploadJobs(sessionID: 1).first?.retryAt == nil)
    let kept = try StravaTokensFile(in: h.directory).read()
    #expect(!kept.accessToken.isEmpty && !kept.refreshToken.isEmpty)
    #expect(try FileManager.default.attributesOfItem(atPath: tokensPath)[.posixPermissions] as? Int == 0o600)
    #expect(reply.message?.contains(kept.accessToken) == false)
  }
}
