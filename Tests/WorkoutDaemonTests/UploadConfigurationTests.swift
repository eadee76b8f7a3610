import Foundation
import Testing
import WorkoutUpload

@testable import WorkoutDaemon

#if canImport(Glibc)
  import Glibc
#endif

@Suite("[upload] and the platforms' sections, and the secrets' file")
struct UploadConfigurationTests {
  private let noSystemd: [String: String] = [:]
  private let secrets = "[upload]\nsecrets_file = \"/etc/workoutd/upload-secrets\"\n"

  private func problems(_ text: String) -> [String] {
    do {
      _ = try DaemonConfiguration.parse(text, file: "t", environment: noSystemd)
      return []
    } catch {
      return error.problems
    }
  }

  @Test func eachPlatformsSectionMakesItATarget() throws {
    let none = try DaemonConfiguration.parse("", file: "t", environment: noSystemd)
    #expect(none.upload.targets.isEmpty)
    let all = try DaemonConfiguration.parse(
      secrets + "ca_file = \"/etc/ssl/nextcloud-ca.pem\"\nled_when_sent = false\n"
        + "[intervals_icu]\nathlete_id = \"i12345\"\n[strava]\nclient_id = \"4242\"\n"
        + "[webdav]\nurl = \"https://cloud.example.org/remote.php/dav/files/rider/Rides\"\nuser = \"rider\"\n",
      file: "t", environment: noSystemd)
    #expect(all.upload.targets == [.intervalsICU, .strava, .webdav])
    #expect(all.upload.secretsFile == "/etc/workoutd/upload-secrets")
    #expect(all.upload.caFile == "/etc/ssl/nextcloud-ca.pem")
    #expect(!all.upload.ledWhenSent)
    #expect(all.upload.intervalsICU == .init(athleteID: "i12345"))
    #expect(all.upload.strava?.clientID == "4242")
    #expect(all.upload.strava?.baseURL == "https://www.strava.com")
    #expect(all.upload.webDAV?.url == "https://cloud.example.org/remote.php/dav/files/rider/Rides/", "a folder's URL")
    let local = try DaemonConfiguration.parse(
      secrets + "[intervals_icu]\nathlete_id = \"0\"\nbase_url = \"https://127.0.0.1:8443/\"\n", file: "t",
      environment: noSystemd)
    #expect(local.upload.intervalsICU?.baseURL == "https://127.0.0.1:8443")
  }

  @Test(arguments: [
    ("[intervals_icu]\nathlete_id = \"12345\"\n", "athlete_id must be the athlete's id"),
    ("[intervals_icu]\n", "athlete_id must be the athlete's id"),
    ("[strava]\nclient_id = \"abc\"\n", "client_id must be your Strava API application's client id"),
    ("[webdav]\nurl = \"http://cloud.example.org/dav/\"\nuser = \"r\"\n", "url must be the https:// address"),
    ("[webdav]\nurl = \"https://cloud.example.org/dav/\"\n", "user must name the WebDAV user"),
    ("[strava]\nclient_id = \"1\"\nbase_url = \"http://127.0.0.1\"\n", "base_url must be an https:// address"),
    ("[strava]\nclient_id = \"1\"\nsecret = \"x\"\n", "unknown key \"secret\""),
  ])
  func aBadPlatformSectionIsAProblem(text: String, problem: String) {
    let found = problems(secrets + text)
    #expect(found.contains { $0.contains(problem) }, "\(found)")
  }

  @Test func theShippedFilesUploadExamplesAreValid() throws {
    // board/workoutd.toml with [upload] and the platforms' sections uncommented.
    let text = try String(contentsOfFile: repositoryRoot + "/board/workoutd.toml", encoding: .utf8)
    var section = ""
    var lines: [String] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      let uncommented = line.hasPrefix("# [") ? line.dropFirst(2) : line
      if uncommented.hasPrefix("[") { section = String(uncommented) }
      let examples = ["[upload]", "[intervals_icu]", "[strava]", "[webdav]"].contains(section)
      if examples && (uncommented.hasPrefix("[") || uncommented.hasPrefix("# ") && uncommented.contains(" = ")) {
        lines.append(String(uncommented.hasPrefix("# ") ? uncommented.dropFirst(2) : uncommented))
      } else {
        lines.append(String(line))
      }
    }
    let configuration = try DaemonConfiguration.parse(lines.joined(separator: "\n"), file: "t", environment: noSystemd)
    #expect(configuration.upload.targets == [.intervalsICU, .strava, .webdav])
    #expect(configuration.upload.secretsFile == "/etc/workoutd/upload-secrets")
    let shipped = try DaemonConfiguration.load(
      path: repositoryRoot + "/board/workoutd.toml", required: true, environment: noSystemd)
    #expect(shipped.upload.targets.isEmpty, "none unless the rider names one")
  }

  @Test func aPlatformWithoutASecretsFileIsAProblem() {
    let found = problems("[strava]\nclient_id = \"1\"\n")
    #expect(found.contains { $0.contains("[upload] secrets_file must name the file") && $0.contains("strava") })
  }

  @Test func theSecretsFileHoldsEachTargetsSecretAndIsNeverQuoted() throws {
    let text = "intervals_icu_api_key = \"k-123\"\nwebdav_password = \"p-456\"\n"
    let secrets = try UploadSecrets.parse(text, file: "s", for: [.intervalsICU, .webdav])
    #expect(secrets.secret(for: .intervalsICU) == "k-123")
    #expect(secrets.secret(for: .webdav) == "p-456")
    #expect(secrets.secret(for: .strava) == nil)
    for (bad, words) in [
      (text, "has no strava_client_secret"), ("intervals_icu_api_key = \"k-123\nx", "not TOML"),
      ("intervals_icu_api_key = \"k-123\"\napi_key = \"k-123\"\n", "unknown key \"api_key\""),
      ("intervals_icu_api_key = \"\"\n", "must be a string that is not empty"),
    ] {
      do {
        _ = try UploadSecrets.parse(bad, file: "s", for: [.intervalsICU, .strava])
        Issue.record("accepted: \(bad)")
      } catch {
        #expect(error.description.contains(words), "\(error)")
        #expect(!error.description.contains("k-123"), "a secret is never said")
      }
    }
  }

  @Test func aSecretsFileOthersCanReadIsRefused() throws {
    let path = NSTemporaryDirectory() + "upload-secrets-" + UUID().uuidString
    defer { unlink(path) }
    try "webdav_password = \"p\"\n".write(toFile: path, atomically: false, encoding: .utf8)
    chmod(path, 0o644)
    #expect(throws: PrivateFile.Problem.self) { try UploadSecrets.load(path: path, for: [.webdav]) }
    chmod(path, 0o640)
    #expect(try UploadSecrets.load(path: path, for: [.webdav]).webDAVPassword == "p")
  }
}
