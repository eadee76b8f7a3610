import LinuxSupport
import Logging
import WebTLS

#if canImport(Glibc)
  import Glibc
#endif

/// The page's TLS identity: the administrator's certificate and key when `[web]` names them;
/// otherwise the board's own, made at first start in the state directory and kept, because the
/// rider trusts it by its fingerprint (a new one means checking it on the phone again).
enum WebIdentity {
  static let certificateName = "web-certificate.pem"
  static let keyName = "web-key.pem"

  static func load(_ settings: WebSettings, stateDirectory: String, log: Logger) throws(WebServerError) -> TLSIdentity {
    if let certificate = settings.certificate, let key = settings.key {
      do {
        return try TLSIdentity(certificatePEM: try read(certificate), keyPEM: try read(key))
      } catch {
        throw .tls("\(certificate) and \(key): \(error)")
      }
    }
    let certificatePath = stateDirectory + "/" + certificateName
    let keyPath = stateDirectory + "/" + keyName
    let kept: TLSIdentity?
    do {
      kept = try TLSIdentity(certificatePEM: try read(certificatePath), keyPEM: try read(keyPath))
    } catch let error as SystemError where error.errno == ENOENT {
      kept = nil
    } catch {
      log(
        .warning,
        "web: the board's certificate is unusable (\(error)); a new one replaces it, so the phone warns once more")
      kept = nil
    }
    if let kept { return kept }
    let names = boardNames()
    let identity: TLSIdentity
    do {
      identity = try TLSIdentity.make(
        commonName: names.hostNames.first ?? "workoutd", hostNames: names.hostNames, addresses: names.addresses)
      // The key first, readable by the service only: a certificate on disk always has its key.
      try write(identity.keyPEM, to: keyPath, mode: 0o600)
      try write(identity.certificatePEM, to: certificatePath, mode: 0o644)
    } catch {
      throw .tls("cannot make the board's certificate in \(stateDirectory): \(error)")
    }
    log(.notice, "web: made the board's certificate, SHA-256 fingerprint \(identity.fingerprintText)")
    return identity
  }

  /// What a phone may call the board: its host name, that name on mDNS (`.local`) and
  /// `localhost`; its IPv4 addresses now and IPv6 loopback.
  static func boardNames() -> (hostNames: [String], addresses: [String]) {
    var buffer = [CChar](repeating: 0, count: 256)
    var hostNames: [String] = []
    if gethostname(&buffer, buffer.count - 1) == 0 {
      let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      // RFC 1123 names only: anything else cannot be a certificate's DNS name.
      let valid =
        !host.isEmpty && host.utf8.allSatisfy { $0 < 128 && (isalnum(Int32($0)) != 0 || $0 == 0x2D || $0 == 0x2E) }
      if valid { hostNames = host.hasSuffix(".local") ? [host] : [host, host + ".local"] }
    }
    if !hostNames.contains("localhost") { hostNames.append("localhost") }
    return (hostNames, NetworkInterfaces.ipv4Addresses() + ["::1"])
  }

  private static func read(_ path: String) throws(SystemError) -> [UInt8] {
    let file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW)
    defer { try? file.close() }
    return try file.readToEnd()
  }

  private static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws(DurableFileError) {
    let file = try DurableFile.begin(path: path, mode: mode)
    try file.write(bytes)
    try file.commit()
  }
}
