import Foundation

/// The rider's Strava API application, from the rider's config: Strava gives every registered
/// application a client id and a client secret (developers.strava.com/docs/authentication).
public struct StravaApp: Sendable, Hashable, CustomStringConvertible {
  public var clientID: String
  public var clientSecret: String

  public init(clientID: String, clientSecret: String) {
    self.clientID = clientID
    self.clientSecret = clientSecret
  }

  /// The secret is never printed.
  public var description: String { "Strava app \(clientID)" }
}

/// The rider's Strava login: a short-lived access token, when it expires, and the refresh token
/// that gets the next one. Its JSON (Strava's own field names) is the credentials file's content.
public struct StravaTokens: Sendable, Hashable, Codable, CustomStringConvertible {
  public var accessToken: String
  /// Unix seconds at which the access token stops working.
  public var expiresAt: Double
  public var refreshToken: String

  public init(accessToken: String, expiresAt: Double, refreshToken: String) {
    self.accessToken = accessToken
    self.expiresAt = expiresAt
    self.refreshToken = refreshToken
  }

  enum CodingKeys: String, CodingKey {
    case accessToken = "access_token"
    case expiresAt = "expires_at"
    case refreshToken = "refresh_token"
  }

  /// Strava hands out a new access token only when the old one expires within an hour ("If the
  /// application's access tokens for the user are expired or will expire in one hour (3,600
  /// seconds) or less, a new access token will be returned"): refreshing earlier gains nothing.
  public static let refreshMargin: Double = 3600

  /// Whether the access token is expired or within Strava's margin of expiring at `now`.
  public func needsRefresh(at now: Double) -> Bool { expiresAt - now <= Self.refreshMargin }

  /// The credentials file's content.
  public func fileContent() -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return Array(try! encoder.encode(self))
  }

  /// The tokens from the credentials file's content.
  public init(fileContent: [UInt8]) throws(StravaTokensError) {
    do {
      self = try JSONDecoder().decode(StravaTokens.self, from: Data(fileContent))
    } catch {
      throw .unreadable("the Strava credentials file is not the JSON `workoutctl upload login strava` writes")
    }
  }

  /// The tokens are never printed.
  public var description: String { "Strava tokens expiring at \(Int64(expiresAt))" }
}

public enum StravaTokensError: Error, Hashable, CustomStringConvertible {
  case unreadable(String)
  public var description: String {
    switch self {
    case .unreadable(let words): words
    }
  }
}

/// Where Strava is: its own addresses, or a local test server's.
public struct StravaServer: Sendable, Hashable {
  /// The OAuth token endpoint (code exchange and refresh).
  public var tokenURL: String
  /// The API's root, to which `/uploads` is added.
  public var apiURL: String

  public init(tokenURL: String, apiURL: String) {
    self.tokenURL = tokenURL
    self.apiURL = apiURL
  }

  public static let strava = StravaServer(
    tokenURL: "https://www.strava.com/oauth/token", apiURL: "https://www.strava.com/api/v3")
}

/// Strava's OAuth token endpoint: the code exchange and the refresh.
enum StravaTokenEndpoint {
  /// POST /oauth/token with grant_type=refresh_token (developers.strava.com/docs/authentication,
  /// "Refreshing Expired Access Tokens").
  static func refresh(_ tokens: StravaTokens, app: StravaApp, server: StravaServer) -> PlatformRequest {
    form(
      url: server.tokenURL,
      [
        ("client_id", app.clientID), ("client_secret", app.clientSecret), ("grant_type", "refresh_token"),
        ("refresh_token", tokens.refreshToken),
      ])
  }

  /// POST /oauth/token with grant_type=authorization_code ("Token Exchange").
  static func exchange(code: String, app: StravaApp, server: StravaServer) -> PlatformRequest {
    form(
      url: server.tokenURL,
      [
        ("client_id", app.clientID), ("client_secret", app.clientSecret), ("code", code),
        ("grant_type", "authorization_code"),
      ])
  }

  static func form(url: String, _ fields: [(String, String)]) -> PlatformRequest {
    let body = fields.map { PercentEncoding.encoded($0.0) + "=" + PercentEncoding.encoded($0.1) }
      .joined(separator: "&")
    return PlatformRequest(
      method: "POST", url: url,
      headers: [
        HeaderField("Content-Type", "application/x-www-form-urlencoded"), HeaderField("Accept", "application/json"),
      ],
      body: Array(body.utf8))
  }

  /// The tokens in a 200 answer to either grant: `access_token`, `expires_at`, `refresh_token`
  /// (Strava's answer also names the athlete, which is not kept). A refresh answer without a
  /// refresh token keeps the one it was asked with.
  static func tokens(fromAnswer body: [UInt8], keeping previous: StravaTokens? = nil) -> StravaTokens? {
    struct Answer: Decodable {
      var access_token: String
      var expires_at: Double
      var refresh_token: String?
    }
    guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(body)), !answer.access_token.isEmpty,
      let refreshToken = answer.refresh_token ?? previous?.refreshToken, !refreshToken.isEmpty
    else { return nil }
    return StravaTokens(accessToken: answer.access_token, expiresAt: answer.expires_at, refreshToken: refreshToken)
  }
}
