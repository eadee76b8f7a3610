import TOMLKit
import WorkoutUpload

/// The platforms' secrets, from `[upload] secrets_file` (TOML, readable only by the service's
/// user), for example:
///
///     intervals_icu_api_key = "…"    # intervals.icu, Settings, Developer Settings
///     strava_client_secret = "…"     # strava.com/settings/api
///     webdav_password = "…"          # an app password, not the account's
///
/// Read at each attempt, so a key put right is used without a restart. No message says a value.
struct UploadSecrets: Sendable, Equatable {
  var intervalsICUAPIKey: String?
  var stravaClientSecret: String?
  var webDAVPassword: String?

  /// The key each target needs.
  static func key(for target: UploadTarget) -> String {
    switch target {
    case .intervalsICU: "intervals_icu_api_key"
    case .strava: "strava_client_secret"
    case .webdav: "webdav_password"
    }
  }

  func secret(for target: UploadTarget) -> String? {
    switch target {
    case .intervalsICU: intervalsICUAPIKey
    case .strava: stravaClientSecret
    case .webdav: webDAVPassword
    }
  }

  /// Reads `path`, which must hold the secret of each of `targets`.
  static func load(path: String, for targets: [UploadTarget]) throws(PrivateFile.Problem) -> UploadSecrets {
    let text = try PrivateFile(path: path, holds: "the upload platforms' secrets").read()
    return try parse(text, file: path, for: targets)
  }

  static func parse(
    _ text: String, file: String, for targets: [UploadTarget]
  ) throws(PrivateFile.Problem)
    -> UploadSecrets
  {
    let table: TOMLTable
    do {
      table = try TOMLTable(string: text)
    } catch let error as TOMLParseError {
      // The parser's words may quote the line, and so the secret: only where it is said.
      throw PrivateFile.Problem(
        description: "\(file):\(error.source.begin.line): not TOML (lines like intervals_icu_api_key = \"...\")")
    } catch {
      throw PrivateFile.Problem(description: "\(file): not TOML")
    }
    let known = UploadTarget.allCases.map(key(for:))
    if let unknown = table.keys.sorted().first(where: { !known.contains($0) }) {
      throw PrivateFile.Problem(
        description: "\(file): unknown key \"\(unknown)\" (known: \(known.joined(separator: ", ")))")
    }
    func value(_ target: UploadTarget) throws(PrivateFile.Problem) -> String? {
      let key = key(for: target)
      guard let value = table[key] else { return nil }
      guard let string = value.string, !string.isEmpty else {
        throw PrivateFile.Problem(description: "\(file): \(key) must be a string that is not empty")
      }
      return string
    }
    let secrets = UploadSecrets(
      intervalsICUAPIKey: try value(.intervalsICU), stravaClientSecret: try value(.strava),
      webDAVPassword: try value(.webdav))
    let missing = targets.filter { secrets.secret(for: $0) == nil }.map(key(for:))
    guard missing.isEmpty else {
      throw PrivateFile.Problem(description: "\(file) has no \(missing.joined(separator: ", "))")
    }
    return secrets
  }
}
