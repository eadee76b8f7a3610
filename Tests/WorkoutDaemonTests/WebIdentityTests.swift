import Foundation
import Logging
import Testing
import WebTLS
import WorkoutWeb

@testable import WorkoutDaemon

/// The page's TLS identity: made once, kept, replaced only when unusable; the administrator's
/// own files used as given, or refused in words.
struct WebIdentityTests {
  let directory = NSTemporaryDirectory() + "workoutd-tls-" + UUID().uuidString
  let lines = CollectedLines()

  init() throws {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
  }

  var log: Logger {
    let lines = self.lines
    return Logger(label: "test") { _ in JournaldLogHandler(minimum: .debug, environment: [:]) { lines.append($0) } }
  }

  /// The DER inside a PEM certificate.
  func der(_ pem: [UInt8]) throws -> [UInt8] {
    let text = String(decoding: pem, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    return Array(try #require(Data(base64Encoded: text)))
  }

  @Test func theBoardsCertificateIsMadeOnceAndKept() throws {
    let made = try WebIdentity.load(WebSettings(), stateDirectory: directory, log: log)
    // The fingerprint is SHA-256 of the certificate's DER, as browsers show it.
    #expect(made.fingerprint == SHA256.hash(try der(made.certificatePEM)))
    #expect(made.fingerprintText.count == 95 && made.fingerprintText.split(separator: ":").count == 32)
    #expect(lines.count(containing: "made the board's certificate, SHA-256 fingerprint \(made.fingerprintText)") == 1)
    let key = try FileManager.default.attributesOfItem(atPath: directory + "/web-key.pem")
    #expect((key[.posixPermissions] as? Int) == 0o600, "the key is the service's alone")
    let kept = try WebIdentity.load(WebSettings(), stateDirectory: directory, log: log)
    #expect(kept == made, "a restart keeps the certificate the rider checked")
    #expect(lines.count(containing: "made the board's certificate") == 1)
  }

  @Test func anUnusableCertificateIsReplacedAndSaidSo() throws {
    let first = try WebIdentity.load(WebSettings(), stateDirectory: directory, log: log)
    try Data("-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n".utf8).write(
      to: URL(fileURLWithPath: directory + "/web-certificate.pem"))
    let second = try WebIdentity.load(WebSettings(), stateDirectory: directory, log: log)
    #expect(second.fingerprint != first.fingerprint)
    #expect(lines.count(containing: "the board's certificate is unusable") == 1)
    #expect(try WebIdentity.load(WebSettings(), stateDirectory: directory, log: log) == second)
  }

  @Test func theAdministratorsFilesAreUsedOrRefusedInWords() throws {
    let one = try TLSIdentity.make(commonName: "a", hostNames: ["a"], addresses: ["192.0.2.1"])
    let other = try TLSIdentity.make(commonName: "b", hostNames: ["b"], addresses: [])
    try Data(one.certificatePEM).write(to: URL(fileURLWithPath: directory + "/my.crt"))
    try Data(one.keyPEM).write(to: URL(fileURLWithPath: directory + "/my.key"))
    try Data(other.keyPEM).write(to: URL(fileURLWithPath: directory + "/other.key"))
    var settings = WebSettings()
    settings.certificate = directory + "/my.crt"
    settings.key = directory + "/my.key"
    #expect(try WebIdentity.load(settings, stateDirectory: directory, log: log) == one)
    #expect(!FileManager.default.fileExists(atPath: directory + "/web-key.pem"), "none of the board's own made")

    settings.key = directory + "/other.key"
    #expect {
      _ = try WebIdentity.load(settings, stateDirectory: directory, log: log)
    } throws: { error in
      "\(error)".contains("my.crt and \(directory)/other.key") && "\(error)".contains("tls = false")
    }
    settings.key = directory + "/missing.key"
    #expect {
      _ = try WebIdentity.load(settings, stateDirectory: directory, log: log)
    } throws: { error in "\(error)".contains("missing.key") && "\(error)".contains("No such file") }
  }

  @Test func aKeyAndCertificateNotMadeForEachOtherAreRefused() throws {
    let one = try TLSIdentity.make(commonName: "a", hostNames: [], addresses: [])
    let other = try TLSIdentity.make(commonName: "b", hostNames: [], addresses: [])
    #expect(throws: TLSError.self) { _ = try TLSIdentity(certificatePEM: one.certificatePEM, keyPEM: other.keyPEM) }
    #expect(throws: TLSError.self) { _ = try TLSIdentity(certificatePEM: Array("x".utf8), keyPEM: one.keyPEM) }
  }
}
