import Foundation
import LinuxSupport
import WorkoutControl
import WorkoutStore
import WorkoutWeb

/// Pairing a phone: a one-time code from `workoutctl pair` (over the control socket) redeemed
/// by `POST /api/pair` for a long-lived token, in an HttpOnly, SameSite=Strict cookie; the
/// database keeps its SHA-256 only.
extension WebRoutes {
  /// `peer`: the address the request came from, whose tries the desk counts.
  func pair(_ request: HTTPRequest, from peer: String, now: Double, wall: Double) -> HTTPResponse {
    if let refusal = crossOrigin(request, now: now) { return refusal }
    struct Body: Decodable {
      var code: String
      var name: String?
    }
    guard let body = try? JSONDecoder().decode(Body.self, from: Data(request.body)) else {
      return .error(400, "expected {\"code\": \"...\"}")
    }
    switch desk.withLock({ $0.redeem(body.code, from: peer, at: now) }) {
    case .accepted:
      break
    case .wrong:
      noteRefusal("a wrong pairing code", now: now)
      return .error(403, "that is not the code: check it, or run `workoutctl pair` again")
    case .noCode:
      noteRefusal("a pairing attempt with no code open", now: now)
      return .error(
        410,
        "no pairing code is open (it expired, was used, or too many wrong tries here): run `workoutctl pair`")
    case .limited(let retryAfter):
      noteRefusal("pairing attempts beyond the limit", now: now)
      return .error(
        429, "too many wrong codes from this address: try again in \(Int(retryAfter)) s",
        headers: [("Retry-After", "\(Int(retryAfter))")]
      )
    }
    let token = WebToken.make()
    let name = String((body.name ?? request.header("user-agent") ?? "a browser").prefix(120))
    let record: WebClientRecord
    do {
      record = try store.addWebClient(
        WebClientRecord(name: name, tokenHash: WebToken.hash(token), pairedWall: wall))
    } catch {
      log(.error, "web: cannot keep a paired phone in \(store.path): \(error)")
      return .error(503, "the board cannot store the pairing (\(error)); try again")
    }
    tokens.withLock { $0[record.tokenHash] = record }
    log(.notice, "web: phone \(record.id ?? 0) paired (\(TerminalText.escaped(name.prefix(60))))")
    return .json(
      200, "{\"paired\":true,\"id\":\(record.id ?? 0)}",
      headers: [
        (
          "Set-Cookie",
          WebToken.setCookie(
            token, secure: fingerprint != nil,
            lifetime: settings.tokenDays > 0 ? settings.tokenDays * 86_400 : 31_536_000)
        )
      ])
  }

  /// The control socket's pairing commands.
  func handle(_ request: ControlRequest, now: Double, wall: Double) -> ControlReply {
    switch request.command {
    case .pair:
      let code = desk.withLock { $0.issue(at: now) }
      log(.notice, "web: a pairing code was issued (valid \(Int(PairingDesk.codeLifetime)) s)")
      return ControlReply(
        ok: true,
        pairing: PairingReport(
          code: code.text, expiresIn: PairingDesk.codeLifetime, urls: urls(code: code.text), fingerprint: fingerprint))
    case .listPairings:
      do {
        let clients = try store.webClients().map {
          WebClientReport(
            id: $0.id ?? 0, name: $0.name, paired: $0.pairedWall, lastSeen: $0.lastSeenWall, revoked: $0.revokedWall)
        }
        return ControlReply(ok: true, webClients: clients)
      } catch {
        return ControlReply(ok: false, message: "cannot read the paired phones: \(error)")
      }
    case .revokePairing:
      guard let id = request.id else { return ControlReply(ok: false, message: "revokePairing needs id") }
      return revoke(id: id, wall: wall)
    default:
      return ControlReply(ok: false, message: "not a pairing command")
    }
  }

  func revoke(id: Int64, wall: Double) -> ControlReply {
    do {
      guard try store.revokeWebClient(id: id, wall: wall) else {
        return ControlReply(ok: false, message: "no paired phone \(id) (see workoutctl pair --list)")
      }
    } catch {
      return ControlReply(ok: false, message: "cannot revoke phone \(id): \(error)")
    }
    tokens.withLock { tokens in tokens = tokens.filter { $0.value.id != id } }
    feed.revoke(id)
    log(.notice, "web: phone \(id) revoked")
    return ControlReply(ok: true, message: "phone \(id) revoked")
  }

  func urls(code: String) -> [String] {
    let hosts: [String]
    switch settings.address {
    case "0.0.0.0", "::", "": hosts = NetworkInterfaces.ipv4Addresses(of: settings.interface)
    default: hosts = [settings.address.contains(":") ? "[\(settings.address)]" : settings.address]
    }
    let scheme = fingerprint == nil ? "http" : "https"
    let port = self.port == (fingerprint == nil ? 80 : 443) ? "" : ":\(self.port)"
    return hosts.map { "\(scheme)://\($0)\(port)/#pair=\(code)" }
  }

  /// The answer to plain HTTP when the page is HTTPS: a page load is redirected to the same
  /// address over https (the browser keeps the `#pair=` fragment, RFC 9110 §10.2.2); anything
  /// else is refused. Nothing of the request is used.
  func plainHTTPRefusal(_ request: HTTPRequest) -> HTTPResponse {
    let message = "this board's page is served over HTTPS only"
    guard request.method == "GET" || request.method == "HEAD", !request.path.hasPrefix("/api/"),
      let host = request.header("host"), HostCheck.isField(host)
    else { return .error(400, "\(message): use https://") }
    return .error(301, "\(message)", headers: [("Location", "https://\(host)\(request.path)")])
  }
}
