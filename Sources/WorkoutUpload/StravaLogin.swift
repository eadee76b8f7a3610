import Foundation

/// The pure parts of `workoutctl upload login strava` (developers.strava.com/docs/authentication):
/// the authorization URL the rider opens, the code read back from what the rider pastes, and
/// the token exchange that turns the code into `StravaTokens`.
///
/// The board has no web server Strava could send the rider back to, so the redirect goes to
/// `http://localhost`, which Strava accepts for an application whose Authorization Callback
/// Domain is `localhost` ("localhost and 127.0.0.1 are white-listed"). After the rider agrees,
/// the browser tries to open http://localhost/?state=&code=…&scope=… and shows a failed page;
/// its address holds the code. The rider pastes that address (or just the code) into workoutctl.
public enum StravaLogin {
  public static let redirectURI = "http://localhost"
  /// Uploading and asking after an upload both need `activity:write`, and nothing more.
  public static let scope = "activity:write"
  public static let authorizeURL = "https://www.strava.com/oauth/authorize"

  /// The address the rider opens. `approval_prompt=force` shows Strava's consent page even to a
  /// rider who agreed before, so a login made again can grant a scope once refused.
  public static func authorizationURL(clientID: String, redirectURI: String = redirectURI) -> String {
    let query = [
      ("client_id", clientID), ("redirect_uri", redirectURI), ("response_type", "code"),
      ("approval_prompt", "force"), ("scope", scope),
    ]
    return authorizeURL + "?"
      + query.map { PercentEncoding.encoded($0.0) + "=" + PercentEncoding.encoded($0.1) }
      .joined(separator: "&")
  }

  /// The authorization code in what the rider pasted: the whole redirect address, or the bare
  /// code. An address must show `activity:write` among the granted scopes (Strava lets the rider
  /// untick it, and "apps should check which scopes a user has accepted").
  public static func authorizationCode(fromPasted pasted: String) throws(StravaLoginError) -> String {
    let text = pasted.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !text.isEmpty else { throw .noCode("nothing was pasted") }
    guard text.contains("=") || text.contains("?") || text.contains("/") else {
      guard text.allSatisfy(isCodeCharacter) else {
        throw .noCode("\"\(text.prefix(60))\" is neither a code nor the address Strava sent the browser to")
      }
      return text
    }
    let query = text.split(separator: "?", maxSplits: 1).last.map { $0.split(separator: "#").first ?? "" } ?? ""
    var fields: [String: String] = [:]
    for pair in query.split(separator: "&") {
      let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      guard let name = PercentEncoding.decoded(parts[0]) else { continue }
      fields[name] = parts.count == 2 ? PercentEncoding.decoded(parts[1]) : ""
    }
    if let error = fields["error"] {
      throw .denied("Strava says \(error): the authorization was not given; open the address again and authorize")
    }
    guard let code = fields["code"], !code.isEmpty else {
      throw .noCode("the pasted address has no code= in it; paste the whole address the browser shows")
    }
    guard code.allSatisfy(isCodeCharacter) else { throw .noCode("the code in the pasted address is not Strava's") }
    let granted = (fields["scope"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    guard granted.contains(scope) else {
      throw .scopeMissing(
        "Strava was not allowed to take uploads (granted: \(granted.isEmpty ? "nothing" : granted.joined(separator: ","))); "
          + "run the login again and leave \"Upload your activities … to Strava\" ticked")
    }
    return code
  }

  /// The request that trades the code for tokens (grant_type=authorization_code).
  public static func tokenExchange(code: String, app: StravaApp, server: StravaServer = .strava) -> PlatformRequest {
    StravaTokenEndpoint.exchange(code: code, app: app, server: server)
  }

  /// The tokens in Strava's answer to the exchange.
  public static func tokens(fromExchange reply: PlatformReply) throws(StravaLoginError) -> StravaTokens {
    switch reply {
    case .unreachable(let words):
      throw .unreachable("Strava could not be reached: \(words)")
    case .answered(let status, _, let body) where (200..<300).contains(status):
      guard let tokens = StravaTokenEndpoint.tokens(fromAnswer: body) else {
        throw .refused("Strava's answer held no tokens")
      }
      return tokens
    case .answered(let status, _, let body):
      // A code is single-use and short-lived; a wrong client id or secret is refused the same way.
      throw .refused(
        "Strava refused the code (\(StravaWords.of(status: status, body: body))); check the client id and "
          + "secret in the config, then log in again: a code works once, and only for a short while")
    }
  }

  /// Strava's codes are hex; any URL-safe character is let through, nothing else.
  static func isCodeCharacter(_ character: Character) -> Bool {
    character.isASCII && (character.isLetter || character.isNumber || "-._~".contains(character))
  }
}

public enum StravaLoginError: Error, Hashable, CustomStringConvertible {
  /// What was pasted holds no code.
  case noCode(String)
  /// The rider did not authorize (error=access_denied).
  case denied(String)
  /// The rider unticked the upload permission.
  case scopeMissing(String)
  /// Strava refused the exchange.
  case refused(String)
  case unreachable(String)

  public var description: String {
    switch self {
    case .noCode(let words), .denied(let words), .scopeMissing(let words), .refused(let words),
      .unreachable(let words):
      words
    }
  }
}
