/// Pairing a phone: `workoutctl pair` asks the service for a one-time code, the rider types it
/// (or scans it as a QR code) on the phone, and the phone exchanges it for a long-lived token.
/// This is the desk's bookkeeping, with the time given (CLOCK_MONOTONIC seconds) and the sender's
/// address: one code at a time, valid `codeLifetime` seconds and once.
///
/// Guesses are limited per address, so one host on the LAN cannot lock the rider out: an address
/// has `attemptsPerCode` wrong tries at a code (then the code is closed to it, not to others),
/// and at most `failuresPerWindow` failed tries (wrong, or with no code open) in any `window`
/// seconds, beyond which its attempts are refused before they are weighed. A code dies after
/// `wrongTriesPerCode` wrong tries from all addresses together: guessing 40 bits stays hopeless
/// (1 in 10^10) however many addresses guess, and voiding a code takes 20 addresses.
///
/// The addresses are kept in a table of at most `addressesKept`, the least recently heard from
/// forgotten first: a LAN with more addresses than that can reset its own limits, never guess
/// more than `wrongTriesPerCode` times at a code.
public struct PairingDesk: Sendable {
  public struct Code: Sendable, Hashable {
    /// "K7QF-3MZD": 8 characters of `alphabet`, 40 bits.
    public var text: String
    public var expires: Double
  }

  public enum Redemption: Sendable, Hashable {
    case accepted
    /// Not the code (or not a code at all).
    case wrong
    /// No code is open (never asked for, expired, already used, voided by wrong tries), or
    /// none for this address (its wrong tries at this code are spent).
    case noCode
    /// Too many failed tries from this address lately: try again in `retryAfter` seconds.
    case limited(retryAfter: Double)
  }

  /// What the desk remembers of one address.
  struct Sender: Sendable {
    /// When its failed tries of the last `window` were made, oldest first.
    var failures: [Double] = []
    /// Its wrong tries at the code numbered `code`.
    var wrongTries = 0
    var code = 0
    var lastHeard: Double
  }

  public static let codeLifetime = 300.0
  public static let attemptsPerCode = 5
  public static let wrongTriesPerCode = 100
  public static let failuresPerWindow = 10
  public static let window = 60.0
  public static let addressesKept = 256
  /// Crockford's base 32 without I, L, O, U: nothing to misread on a small screen.
  public static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

  public private(set) var code: Code?
  /// The open code's number (each issue counts one), so an address's tries at an earlier code
  /// do not count against a new one.
  private var codeNumber = 0
  private var wrongTries = 0
  private(set) var senders: [String: Sender] = [:]

  public init() {}

  /// A new code (any earlier one is void).
  public mutating func issue(at now: Double, using generator: inout some RandomNumberGenerator) -> Code {
    var text = ""
    for index in 0..<8 {
      if index == 4 { text += "-" }
      text.append(Self.alphabet[Int(generator.next(upperBound: UInt8(Self.alphabet.count)))])
    }
    let code = Code(text: text, expires: now + Self.codeLifetime)
    self.code = code
    codeNumber += 1
    wrongTries = 0
    return code
  }

  public mutating func issue(at now: Double) -> Code {
    var generator = SystemRandomNumberGenerator()
    return issue(at: now, using: &generator)
  }

  /// Weighs a code a phone at `address` sent: case, spaces and dashes do not matter; every
  /// character is compared whatever the first difference, so the time taken tells nothing.
  public mutating func redeem(_ attempt: String, from address: String, at now: Double) -> Redemption {
    var sender = senders[address] ?? admitted(at: now)
    sender.lastHeard = now
    sender.failures.removeAll { $0 <= now - Self.window }
    if sender.code != codeNumber { (sender.code, sender.wrongTries) = (codeNumber, 0) }
    defer { senders[address] = sender }
    if sender.failures.count >= Self.failuresPerWindow, let oldest = sender.failures.first {
      return .limited(retryAfter: max(1, (oldest + Self.window - now).rounded(.up)))
    }
    if let open = code, open.expires <= now { code = nil }
    guard let open = code, sender.wrongTries < Self.attemptsPerCode else {
      sender.failures.append(now)
      return .noCode
    }
    let wanted = Array(Self.normalized(open.text).utf8)
    let given = Array(Self.normalized(attempt).utf8)
    var difference = wanted.count ^ given.count
    for index in 0..<wanted.count {
      difference |= Int(wanted[index] ^ (index < given.count ? given[index] : 0))
    }
    if difference == 0 {
      code = nil
      return .accepted
    }
    sender.failures.append(now)
    sender.wrongTries += 1
    wrongTries += 1
    if wrongTries >= Self.wrongTriesPerCode { code = nil }
    return .wrong
  }

  /// A new address's entry, room made for it by forgetting the one heard from longest ago.
  private mutating func admitted(at now: Double) -> Sender {
    if senders.count >= Self.addressesKept, let oldest = senders.min(by: { $0.value.lastHeard < $1.value.lastHeard }) {
      senders[oldest.key] = nil
    }
    return Sender(code: codeNumber, lastHeard: now)
  }

  static func normalized(_ text: String) -> String {
    String(text.uppercased().filter { $0 != "-" && $0 != " " }.prefix(32))
  }
}

/// The long-lived tokens phones keep (in an HttpOnly cookie) and the service keeps hashed.
public enum WebToken {
  public static let cookieName = "workoutd_token"

  /// 32 random bytes (getrandom(2) through the system generator), base64url without padding.
  public static func make(using generator: inout some RandomNumberGenerator) -> String {
    var bytes: [UInt8] = []
    for _ in 0..<4 {
      let word = generator.next()
      for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
    }
    return base64URL(bytes)
  }

  public static func make() -> String {
    var generator = SystemRandomNumberGenerator()
    return make(using: &generator)
  }

  /// What the database keeps of a token: its SHA-256, hex.
  public static func hash(_ token: String) -> String { SHA256.hex(Array(token.utf8)) }

  /// The token in a request's Cookie field (RFC 6265 §5.4: "a=1; b=2"), if any.
  public static func fromCookies(_ field: String?) -> String? {
    guard let field else { return nil }
    for pair in field.split(separator: ";") {
      let parts = pair.split(separator: "=", maxSplits: 1)
      guard parts.count == 2 else { continue }
      if parts[0].trimmingSpaces == cookieName {
        let value = String(parts[1].trimmingSpaces)
        return value.isEmpty ? nil : value
      }
    }
    return nil
  }

  /// The Set-Cookie field that gives a phone its token: only for this host, never to scripts
  /// (HttpOnly), never on a request another site starts (SameSite=Strict), for a year.
  /// `secure`: sent back over HTTPS only (RFC 6265 §4.1.2.5), when the page is HTTPS;
  /// `lifetime`: seconds the browser keeps it (a year unless the pairing expires sooner).
  public static func setCookie(_ token: String, secure: Bool, lifetime: Double = 31_536_000) -> String {
    "\(cookieName)=\(token); Path=/; Max-Age=\(max(1, Int(lifetime.rounded(.up)))); HttpOnly; SameSite=Strict"
      + (secure ? "; Secure" : "")
  }

  public static let clearCookie = "\(cookieName)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"

  static func base64URL(_ bytes: [UInt8]) -> String {
    let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    var out = ""
    var index = 0
    while index < bytes.count {
      let chunk = bytes[index..<min(index + 3, bytes.count)]
      var value = 0
      for byte in chunk { value = value << 8 | Int(byte) }
      value <<= 8 * (3 - chunk.count)
      for position in 0..<(chunk.count + 1) { out.append(table[(value >> (18 - 6 * position)) & 63]) }
      index += 3
    }
    return out
  }
}

extension Substring {
  var trimmingSpaces: Substring {
    var text = self
    while text.first == " " { text = text.dropFirst() }
    while text.last == " " { text = text.dropLast() }
    return text
  }
}

/// Same-origin checks (RFC 6454): a request that changes anything must come from the board's
/// own page. A browser names the page a request comes from in Origin; it must be this server as
/// the browser reached it (the Host field).
public enum OriginCheck {
  public enum Verdict: Sendable, Hashable {
    case sameOrigin
    case missingOrigin
    case crossOrigin(String)
  }

  /// `secure`: the page is HTTPS, so its own origin is https:// (a plain http:// page on the
  /// same host and port is not it).
  public static func verdict(origin: String?, host: String?, secure: Bool) -> Verdict {
    guard let origin, origin != "null" else { return .missingOrigin }
    guard let host, !host.isEmpty else { return .crossOrigin(origin) }
    let expected = (secure ? "https://" : "http://") + host.lowercased()
    return origin.lowercased() == expected ? .sameOrigin : .crossOrigin(origin)
  }

}
