import CTLS

#if canImport(Glibc)
  import Glibc
#endif

/// Why TLS could not be set up or a connection failed: OpenSSL's reason, in one line.
public struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
  public var description: String

  public init(_ description: String) {
    self.description = description
  }

  /// The text a shim call left in `buffer`.
  static func from(_ buffer: [CChar], _ what: String) -> TLSError {
    let reason = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return TLSError(reason.isEmpty ? what : "\(what): \(reason)")
  }
}

/// The system's OpenSSL, loaded at the first need (`ctls_load`).
func loadOpenSSL() throws(TLSError) {
  var error = [CChar](repeating: 0, count: 256)
  guard ctls_load(&error, error.count) == 0 else { throw TLSError.from(error, "no TLS") }
}

/// The board's key and certificate, as PEM, with the certificate's SHA-256 fingerprint: what
/// a browser shows for it, and what `workoutctl pair` prints so the rider can check it once.
public struct TLSIdentity: Sendable, Equatable {
  public let certificatePEM: [UInt8]
  public let keyPEM: [UInt8]
  /// SHA-256 of the certificate's DER.
  public let fingerprint: [UInt8]

  /// Checks that the two belong together (a server context is made of them) and reads the
  /// fingerprint.
  public init(certificatePEM: [UInt8], keyPEM: [UInt8]) throws(TLSError) {
    _ = try TLSServerContext(certificatePEM: certificatePEM, keyPEM: keyPEM)
    var digest = [UInt8](repeating: 0, count: 32)
    var error = [CChar](repeating: 0, count: 256)
    let status = certificatePEM.withUnsafeBufferPointer { pem in
      pem.withMemoryRebound(to: CChar.self) { ctls_fingerprint($0.baseAddress, $0.count, &digest, &error, error.count) }
    }
    guard status == 0 else { throw TLSError.from(error, "not a certificate") }
    self.certificatePEM = certificatePEM
    self.keyPEM = keyPEM
    fingerprint = digest
  }

  /// A new P-256 key and a certificate signed by it, for `commonName`, valid for the host names
  /// and addresses given (a phone's browser checks the name it used against them).
  public static func make(
    commonName: String, hostNames: [String], addresses: [String]
  ) throws(TLSError)
    -> TLSIdentity
  {
    try loadOpenSSL()
    var key: UnsafeMutablePointer<CChar>?
    var certificate: UnsafeMutablePointer<CChar>?
    var keyLength = 0
    var certificateLength = 0
    var error = [CChar](repeating: 0, count: 256)
    let status = withCStrings(hostNames) { names in
      withCStrings(addresses) { ips in
        ctls_make_identity(
          commonName, names.baseAddress, Int32(names.count), ips.baseAddress, Int32(ips.count), &key, &keyLength,
          &certificate, &certificateLength, &error, error.count)
      }
    }
    defer {
      ctls_free(key)
      ctls_free(certificate)
    }
    guard status == 0, let key, let certificate else { throw TLSError.from(error, "cannot make a key") }
    let keyPEM = UnsafeRawBufferPointer(start: key, count: keyLength)
    let certificatePEM = UnsafeRawBufferPointer(start: certificate, count: certificateLength)
    return try TLSIdentity(certificatePEM: Array(certificatePEM), keyPEM: Array(keyPEM))
  }

  /// "AB:CD:…": the fingerprint as browsers and `openssl x509 -fingerprint -sha256` show it.
  public var fingerprintText: String {
    fingerprint.map { byte in
      let digits = Array("0123456789ABCDEF")
      return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }.joined(separator: ":")
  }
}

/// `strings` as a C array of C strings, for the length of `body`.
private func withCStrings<Result>(
  _ strings: [String], _ body: (UnsafeBufferPointer<UnsafePointer<CChar>?>) -> Result
) -> Result {
  let copies = strings.map { strdup($0) }
  defer { copies.forEach { free($0) } }
  let pointers = copies.map { UnsafePointer($0) }
  return pointers.withUnsafeBufferPointer(body)
}
