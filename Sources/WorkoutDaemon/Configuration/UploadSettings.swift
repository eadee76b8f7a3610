import Foundation
import LinuxSupport
import UploadHTTP
import WorkoutUpload

/// `[upload]` and the platforms' sections: where each finished ride is sent by itself. A
/// platform's section makes it a target; its secrets (an API key, a client secret, a password)
/// are not in the configuration, which every user of the board may read, but in
/// `secrets_file`, which only the service's user may (`UploadSecretsFile`).
public struct UploadSettings: Sendable, Equatable {
  /// The file with the platforms' secrets; required once a platform is named.
  public var secretsFile: String?
  /// A PEM file of certificate authorities to trust instead of the system's (a Nextcloud with
  /// its own CA); nil: the system's store.
  public var caFile: String?
  /// Whether the LED shows its "done" pattern when the last pending upload has gone.
  public var ledWhenSent = true
  /// The sender's socket (`--upload-socket`: the package's unit gives workoutd-upload.socket's),
  /// through which each request goes; nil: a child process of the service's own.
  public var senderSocket: String?
  /// `[intervals_icu]`
  public var intervalsICU: IntervalsICU?
  /// `[strava]`
  public var strava: Strava?
  /// `[webdav]`
  public var webDAV: WebDAV?

  public struct IntervalsICU: Sendable, Equatable {
    /// The athlete's id as intervals.icu shows it in its settings ("i12345").
    public var athleteID: String
    public var baseURL = "https://intervals.icu"
  }

  public struct Strava: Sendable, Equatable {
    /// The rider's own API application's client id (strava.com/settings/api).
    public var clientID: String
    public var baseURL = "https://www.strava.com"

    /// Strava's token endpoint and API at `baseURL`.
    var server: StravaServer {
      StravaServer(tokenURL: baseURL + "/oauth/token", apiURL: baseURL + "/api/v3")
    }
  }

  public struct WebDAV: Sendable, Equatable {
    /// The collection rides go into, ending in "/".
    public var url: String
    public var user: String
  }

  /// The platforms named, in a fixed order.
  public var targets: [UploadTarget] {
    [intervalsICU.map { _ in .intervalsICU }, strava.map { _ in .strava }, webDAV.map { _ in .webdav }]
      .compactMap { $0 }
  }
}

extension UploadSettings {
  /// What sends the platforms' requests with `http`'s limits: the sender's socket when the
  /// service was given one, else a child process of `executable` (the running binary, even
  /// once an upgrade has replaced it on disk: /proc/self/exe names the inode).
  func transport(
    _ http: PlatformHTTPClient.Settings, stop: StopSignal?, executable: String = "/proc/self/exe"
  ) -> any PlatformTransport {
    if let senderSocket { return UploadRequestSocket(path: senderSocket, settings: http, stop: stop) }
    return UploadRequestProcess(
      executable: executable, arguments: [UploadRequestChild.argument], settings: http, stop: stop)
  }

  /// `[upload]`, `[intervals_icu]`, `[strava]` and `[webdav]`.
  mutating func read(
    _ upload: TOMLSection, intervalsICU: TOMLSection, strava: TOMLSection, webDAV: TOMLSection
  ) {
    secretsFile = upload.path("secrets_file")
    caFile = upload.path("ca_file")
    if let led = upload.bool("led_when_sent") { ledWhenSent = led }
    // intervals.icu's athlete ids are "i" and digits; "0" means the key's own athlete.
    if let athlete = Self.identifier(
      intervalsICU, "athlete_id", "must be the athlete's id as intervals.icu's settings show it, like \"i12345\"",
      valid: { $0 == "0" || ($0.first == "i" && $0.count > 1 && $0.dropFirst().allSatisfy(\.isASCIIDigitCharacter)) })
    {
      self.intervalsICU = IntervalsICU(athleteID: athlete)
      if let url = Self.baseURL(intervalsICU) { self.intervalsICU?.baseURL = url }
    }
    if let clientID = Self.identifier(
      strava, "client_id", "must be your Strava API application's client id, a number (strava.com/settings/api)",
      valid: { !$0.isEmpty && $0.allSatisfy(\.isASCIIDigitCharacter) })
    {
      self.strava = Strava(clientID: clientID)
      if let url = Self.baseURL(strava) { self.strava?.baseURL = url }
    }
    if webDAV.table != nil {
      let url = webDAV.string("url") ?? ""
      let user = webDAV.string("user") ?? ""
      if !Self.isHTTPS(url) {
        webDAV.problem("url", "must be the https:// address of the folder rides go into (got \"\(url)\")")
      } else if user.isEmpty {
        webDAV.problem("user", "must name the WebDAV user")
      } else {
        self.webDAV = WebDAV(url: url.hasSuffix("/") ? url : url + "/", user: user)
      }
    }
    if !targets.isEmpty && secretsFile == nil {
      upload.problem(
        "secrets_file",
        "must name the file with the platforms' secrets, as \(targets.map(\.rawValue).joined(separator: ", ")) is named (see the README's \"Uploads\")"
      )
    }
  }

  /// A platform section's `key`, which must be `valid`: nil when the section is absent, or is
  /// there with the key missing or wrong (a problem then).
  private static func identifier(
    _ section: TOMLSection, _ key: String, _ problem: String, valid: (String) -> Bool
  ) -> String? {
    guard section.table != nil else { return nil }
    let value = section.string(key) ?? ""
    guard valid(value) else {
      section.problem(key, problem)
      return nil
    }
    return value
  }

  /// A platform's address other than its own (a test server, a proxy): `base_url`.
  private static func baseURL(_ section: TOMLSection) -> String? {
    guard let url = section.string("base_url") else { return nil }
    guard isHTTPS(url) else {
      section.problem("base_url", "must be an https:// address (got \"\(url)\")")
      return nil
    }
    return url.hasSuffix("/") ? String(url.dropLast()) : url
  }

  private static func isHTTPS(_ url: String) -> Bool {
    url.lowercased().hasPrefix("https://") && url.count > "https://".count && !url.contains(where: \.isWhitespace)
  }
}

extension Character {
  fileprivate var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}
