import Testing

@testable import WorkoutUpload

struct StravaLoginTests {
  @Test func theAuthorizationURLAsksForUploadsAndComesBackToLocalhost() {
    #expect(
      StravaLogin.authorizationURL(clientID: "4711")
        == "https://www.strava.com/oauth/authorize?client_id=4711&redirect_uri=http%3A%2F%2Flocalhost"
        + "&response_type=code&approval_prompt=force&scope=activity%3Awrite")
  }

  @Test func theCodeIsReadFromTheWholeAddressOrTakenBare() throws {
    let code = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
    #expect(try StravaLogin.authorizationCode(fromPasted: "  \(code)\n") == code)
    #expect(
      try StravaLogin.authorizationCode(
        fromPasted: "http://localhost/?state=&code=\(code)&scope=read,activity:write") == code)
    #expect(
      try StravaLogin.authorizationCode(
        fromPasted: "localhost/exchange_token?state=&code=\(code)&scope=read%2Cactivity%3Awrite#_=_") == code)
  }

  @Test func anAddressWithoutTheUploadScopeOrCodeIsRefusedClearly() {
    #expect(throws: StravaLoginError.self) {
      _ = try StravaLogin.authorizationCode(fromPasted: "http://localhost/?state=&code=abc&scope=read")
    }
    do {
      _ = try StravaLogin.authorizationCode(fromPasted: "http://localhost/?state=&code=abc&scope=read")
      Issue.record("a login without activity:write was taken")
    } catch {
      #expect(
        error.description
          == "Strava was not allowed to take uploads (granted: read); run the login again and leave "
          + "\"Upload your activities … to Strava\" ticked")
    }
    #expect(
      throws: StravaLoginError.denied(
        "Strava says access_denied: the authorization was not given; open the address again and authorize")
    ) {
      _ = try StravaLogin.authorizationCode(fromPasted: "http://localhost/?state=&error=access_denied")
    }
    #expect(
      throws: StravaLoginError.noCode(
        "the pasted address has no code= in it; paste the whole address the browser shows")
    ) {
      _ = try StravaLogin.authorizationCode(fromPasted: "http://localhost/?state=&scope=activity:write")
    }
    #expect(throws: StravaLoginError.noCode("nothing was pasted")) {
      _ = try StravaLogin.authorizationCode(fromPasted: " \n")
    }
    #expect(throws: StravaLoginError.self) { _ = try StravaLogin.authorizationCode(fromPasted: "my code is abc") }
    #expect(throws: StravaLoginError.self) {
      _ = try StravaLogin.authorizationCode(fromPasted: "http://localhost/?code=a%20b&scope=activity:write")
    }
  }

  @Test func theCodeIsTradedForTokens() throws {
    let request = StravaLogin.tokenExchange(code: "c0de", app: StravaApp(clientID: "4711", clientSecret: "s&cret"))
    #expect(request.method == "POST" && request.url == "https://www.strava.com/oauth/token")
    #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
    #expect(request.text == "client_id=4711&client_secret=s%26cret&code=c0de&grant_type=authorization_code")

    let body =
      #"{"token_type":"Bearer","expires_at":1568775134,"expires_in":21600,"#
      + #""refresh_token":"e5n567567","access_token":"a4b945687g","athlete":{"id":1,"firstname":"R"}}"#
    #expect(
      try StravaLogin.tokens(fromExchange: answer(200, body))
        == StravaTokens(accessToken: "a4b945687g", expiresAt: 1_568_775_134, refreshToken: "e5n567567"))
    let fault =
      #"{"message":"Bad Request","errors":[{"resource":"AuthorizationCode","field":"code","code":"invalid"}]}"#
    do {
      _ = try StravaLogin.tokens(fromExchange: answer(400, fault))
      Issue.record("a refused code gave tokens")
    } catch {
      #expect(error.description.hasPrefix("Strava refused the code (Bad Request (AuthorizationCode code invalid))"))
    }
    #expect(throws: StravaLoginError.refused("Strava's answer held no tokens")) {
      _ = try StravaLogin.tokens(fromExchange: answer(200, #"{"access_token":"a"}"#))
    }
    #expect(throws: StravaLoginError.unreachable("Strava could not be reached: no route")) {
      _ = try StravaLogin.tokens(fromExchange: .unreachable("no route"))
    }
  }
}

struct StravaTokensTests {
  @Test func theCredentialsFileIsStravasFieldsAndNeverPrintsASecret() throws {
    let tokens = StravaTokens(accessToken: "acc", expiresAt: 1_796_614_810, refreshToken: "ref")
    #expect(
      String(decoding: tokens.fileContent(), as: UTF8.self)
        == #"{"access_token":"acc","expires_at":1796614810,"refresh_token":"ref"}"#)
    #expect(try StravaTokens(fileContent: tokens.fileContent()) == tokens)
    #expect(throws: StravaTokensError.self) { _ = try StravaTokens(fileContent: Array("refresh=ref".utf8)) }
    #expect(!"\(tokens)".contains("acc") && !"\(tokens)".contains("ref"))
    #expect(!"\(StravaApp(clientID: "1", clientSecret: "sekrit"))".contains("sekrit"))
  }

  @Test func theRateLimitWindowsTurnOnTheQuarterHourAndAtMidnightUTC() {
    #expect(StravaRateLimit.secondsToNext(StravaRateLimit.window, from: 1_796_615_100) == 900)
    #expect(StravaRateLimit.secondsToNext(StravaRateLimit.day, from: 1_796_601_600 + 86399) == 1)
    // Headers that cannot be read: the 15-minute window, the shorter.
    let odd = PlatformReply.answered(
      status: 429, headers: [HeaderField("X-RateLimit-Limit", "lots"), HeaderField("X-RateLimit-Usage", "1,2,3")],
      body: [])
    #expect(StravaRateLimit.wait(after: odd, now: 1_796_614_810) == 290)
  }
}
