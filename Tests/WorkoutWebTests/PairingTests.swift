import Testing

@testable import WorkoutWeb

/// A generator that repeats a fixed sequence: codes and tokens made from it are known.
struct SequenceGenerator: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    return state
  }
}

struct SHA256Tests {
  // FIPS 180-4 examples (NIST's "SHA256.pdf" example values) and a multi-block message.
  @Test(arguments: [
    ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    (
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    ),
    (
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
    ),
  ])
  func theStandardsExamples(message: String, digest: String) {
    #expect(SHA256.hex(Array(message.utf8)) == digest)
  }

  @Test func aMillionAs() {
    #expect(
      SHA256.hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
        == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
  }

  @Test func messagesAroundTheBlockBoundaries() {
    // 55, 56 and 64 bytes: the padding fits, spills into a second block, or fills one whole.
    #expect(
      SHA256.hex([UInt8](repeating: 0x61, count: 55))
        == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
    #expect(
      SHA256.hex([UInt8](repeating: 0x61, count: 56))
        == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a")
    #expect(
      SHA256.hex([UInt8](repeating: 0x61, count: 64))
        == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
  }
}

struct PairingDeskTests {
  /// The rider's phone, and another host on the same LAN.
  static let phone = "192.168.1.20"
  static let neighbour = "192.168.1.66"

  @Test func aCodeWorksOnceWhateverItsCaseAndDashes() {
    var desk = PairingDesk()
    var generator = SequenceGenerator(state: 1)
    let code = desk.issue(at: 100, using: &generator)
    #expect(code.text.count == 9 && code.text.dropFirst(4).first == "-")
    #expect(code.text.allSatisfy { PairingDesk.alphabet.contains($0) || $0 == "-" })
    #expect(code.expires == 100 + PairingDesk.codeLifetime)
    let typed = code.text.lowercased().split(separator: "-").joined(separator: " ")
    #expect(desk.redeem(typed, from: Self.phone, at: 110) == .accepted)
    #expect(desk.redeem(code.text, from: Self.phone, at: 111) == .noCode, "a code is good once")
  }

  @Test func aCodeExpires() {
    var desk = PairingDesk()
    let code = desk.issue(at: 0)
    #expect(desk.redeem(code.text, from: Self.phone, at: PairingDesk.codeLifetime) == .noCode)
  }

  @Test func aNewCodeVoidsTheOldOne() {
    var desk = PairingDesk()
    var generator = SequenceGenerator(state: 7)
    let first = desk.issue(at: 0, using: &generator)
    let second = desk.issue(at: 1, using: &generator)
    #expect(first.text != second.text)
    #expect(desk.redeem(first.text, from: Self.phone, at: 2) == .wrong)
    #expect(desk.redeem(second.text, from: Self.phone, at: 3) == .accepted)
  }

  @Test func fiveWrongTriesCloseTheCodeToThatAddressOnly() {
    var desk = PairingDesk()
    let code = desk.issue(at: 0)
    for attempt in 0..<PairingDesk.attemptsPerCode {
      #expect(desk.redeem("AAAA-AAAA", from: Self.neighbour, at: Double(attempt)) == .wrong)
    }
    #expect(desk.redeem(code.text, from: Self.neighbour, at: 10) == .noCode, "guessing closed it to the guesser")
    #expect(desk.redeem(code.text, from: Self.phone, at: 11) == .accepted, "and not to the rider")
    // A new code is a new five tries.
    let next = desk.issue(at: 20)
    #expect(desk.redeem("AAAA-AAAA", from: Self.neighbour, at: 21) == .wrong)
    #expect(desk.redeem(next.text, from: Self.neighbour, at: 22) == .accepted)
  }

  @Test func wrongTriesFromManyAddressesTogetherVoidTheCode() {
    var desk = PairingDesk()
    let code = desk.issue(at: 0)
    let guessers = PairingDesk.wrongTriesPerCode / PairingDesk.attemptsPerCode
    for guesser in 0..<guessers {
      for _ in 0..<PairingDesk.attemptsPerCode {
        #expect(desk.redeem("AAAA-AAAA", from: "10.0.0.\(guesser)", at: 1) == .wrong)
      }
    }
    #expect(desk.code == nil)
    #expect(desk.redeem(code.text, from: Self.phone, at: 2) == .noCode)
  }

  @Test func aFloodOfAttemptsIsLimitedThenLetThroughAfterTheWindow() {
    var desk = PairingDesk()
    for second in 0..<PairingDesk.failuresPerWindow {
      #expect(desk.redeem("ZZZZ-ZZZZ", from: Self.phone, at: Double(second)) == .noCode)
    }
    #expect(desk.redeem("ZZZZ-ZZZZ", from: Self.phone, at: 20) == .limited(retryAfter: 40))
    // Even a right code waits: the limit is weighed first.
    let code = desk.issue(at: 21)
    #expect(desk.redeem(code.text, from: Self.phone, at: 22) == .limited(retryAfter: 38))
    #expect(desk.redeem(code.text, from: Self.phone, at: 60.5) == .accepted)
  }

  /// The review's attack: a wrong code twice a second from one host, before and while the
  /// rider pairs. The host is limited; the rider's code stays open and pairs at once.
  @Test func aFloodFromOneAddressNeitherLocksOutNorVoidsTheRidersCode() {
    var desk = PairingDesk()
    var now = 0.0
    var outcomes: [PairingDesk.Redemption] = []
    func flood(until end: Double) {
      while now < end {
        outcomes.append(desk.redeem("ZZZZ-ZZZZ", from: Self.neighbour, at: now))
        now += 0.5
      }
    }
    flood(until: 30)
    let code = desk.issue(at: now)
    flood(until: 75)
    #expect(desk.redeem(code.text, from: Self.phone, at: now) == .accepted)
    // The flooder: ten refusals weighed a minute at most, the rest limited unweighed.
    #expect(outcomes.filter { $0 != .noCode && $0 != .wrong }.count == outcomes.count - 20, "\(outcomes)")
    #expect(outcomes.contains(.limited(retryAfter: 1)))
  }

  @Test func theAddressesKeptAreBoundedAndTheLeastRecentlyHeardForgotten() {
    var desk = PairingDesk()
    for second in 0..<PairingDesk.failuresPerWindow {
      _ = desk.redeem("ZZZZ-ZZZZ", from: Self.neighbour, at: Double(second))
    }
    #expect(desk.redeem("ZZZZ-ZZZZ", from: Self.neighbour, at: 11) == .limited(retryAfter: 49))
    // As many other addresses as the table keeps, each heard after the flooder's last try.
    for host in 0..<PairingDesk.addressesKept - 1 {
      _ = desk.redeem("ZZZZ-ZZZZ", from: "10.0.\(host / 256).\(host % 256)", at: 12 + Double(host) / 1000)
    }
    #expect(desk.senders.count == PairingDesk.addressesKept)
    #expect(desk.redeem("ZZZZ-ZZZZ", from: Self.neighbour, at: 13) == .limited(retryAfter: 47), "still kept")
    // One more, and the address heard from longest ago (not the flooder, heard at 13) goes.
    _ = desk.redeem("ZZZZ-ZZZZ", from: Self.phone, at: 14)
    #expect(desk.senders.count == PairingDesk.addressesKept)
    #expect(desk.senders[Self.neighbour] != nil && desk.senders[Self.phone] != nil)
    #expect(desk.senders["10.0.0.0"] == nil)
  }
}

struct WebTokenTests {
  @Test func tokensAre32RandomBytesInBase64URL() {
    var generator = SequenceGenerator(state: 3)
    let token = WebToken.make(using: &generator)
    #expect(token.count == 43)
    #expect(token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    #expect(WebToken.make() != WebToken.make())
    #expect(WebToken.hash(token).count == 64)
  }

  @Test func base64URLAgreesWithRFC4648() {
    // RFC 4648 §10's vectors, without padding, in the URL alphabet.
    #expect(WebToken.base64URL(Array("foobar".utf8)) == "Zm9vYmFy")
    #expect(WebToken.base64URL(Array("fooba".utf8)) == "Zm9vYmE")
    #expect(WebToken.base64URL(Array("f".utf8)) == "Zg")
    #expect(WebToken.base64URL([0xfb, 0xff]) == "-_8")
  }

  @Test func theTokenIsFoundAmongOtherCookies() {
    #expect(WebToken.fromCookies("a=1; workoutd_token=abc; b=2") == "abc")
    #expect(WebToken.fromCookies("workoutd_token=") == nil)
    #expect(WebToken.fromCookies("xworkoutd_token=abc") == nil)
    #expect(WebToken.fromCookies(nil) == nil)
    #expect(WebToken.setCookie("t", secure: false).hasSuffix("HttpOnly; SameSite=Strict"))
    #expect(WebToken.setCookie("t", secure: true).hasSuffix("HttpOnly; SameSite=Strict; Secure"))
  }

  @Test func onlyTheBoardsOwnPageIsSameOrigin() {
    for secure in [false, true] {
      let scheme = secure ? "https" : "http"
      #expect(
        OriginCheck.verdict(origin: "\(scheme)://192.168.1.20:8080", host: "192.168.1.20:8080", secure: secure)
          == .sameOrigin)
      #expect(
        OriginCheck.verdict(origin: "\(scheme)://Board.local", host: "board.local", secure: secure) == .sameOrigin)
      #expect(OriginCheck.verdict(origin: nil, host: "board", secure: secure) == .missingOrigin)
      #expect(OriginCheck.verdict(origin: "null", host: "board", secure: secure) == .missingOrigin)
      #expect(
        OriginCheck.verdict(origin: "\(scheme)://evil.example", host: "board", secure: secure)
          == .crossOrigin("\(scheme)://evil.example"))
      #expect(
        OriginCheck.verdict(origin: "\(scheme)://board:8081", host: "board:8080", secure: secure)
          == .crossOrigin("\(scheme)://board:8081"))
    }
    // An HTTPS page's origin is https://: a plain page on the same host and port is another.
    #expect(
      OriginCheck.verdict(origin: "http://board:8080", host: "board:8080", secure: true)
        == .crossOrigin("http://board:8080"))
  }

  @Test func aHostFieldIsANameOrAddressAndAPort() {
    for host in ["board.local:8080", "192.168.1.20", "[fe80::1]:8080", "Board-2"] {
      #expect(HostCheck.isField(host), "\(host)")
    }
    for host in ["", "evil/path", "a b", "board\r\nX: 1", "user@board", String(repeating: "a", count: 256)] {
      #expect(!HostCheck.isField(host), "\(host)")
    }
    #expect(HostCheck.host(of: "Board.Local:8080") == "board.local")
    #expect(HostCheck.host(of: "[FE80::1]:443") == "fe80::1" && HostCheck.host(of: "[::1]") == "::1")
    for field in ["board:", "board:x", "board:1:2", ":8080", "[::1", "[::1]x", "[::1]:99999"] {
      #expect(HostCheck.host(of: field) == nil, "\(field)")
    }
  }

  /// DNS rebinding: another site's name pointed at the board is refused; the board's own names
  /// and any address are not.
  @Test func onlyTheBoardsNamesAndAddressesAreServed() {
    let names: Set<String> = ["pi", "pi.local", "localhost"]
    for field in ["pi:8080", "PI.local", "localhost:8080", "192.168.1.20:8080", "10.0.0.1", "[fe80::1]:8080", "[::1]"] {
      #expect(HostCheck.allows(field, names: names), "\(field)")
    }
    for field in [
      "evil.example:8080", "pi.evil.example", "192.168.1.20.evil.example", "1.2.3", "256.1.1.1", "[evil]", nil,
    ] as [String?] {
      #expect(!HostCheck.allows(field, names: names), "\(field ?? "nil")")
    }
  }

}
