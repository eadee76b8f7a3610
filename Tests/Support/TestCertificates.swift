import Foundation
import LinuxSupport

/// A certificate authority of a test's own and a server certificate it signed, made with the
/// `openssl` command (Debian's openssl package) in a directory: what an HTTPS server written
/// for the tests serves, and the CA file its client trusts instead of the system's store.
public struct TestCertificates: Sendable {
  /// The CA's certificate (PEM): the file a client is told to trust.
  public let caFile: String
  /// The server's certificate (PEM), for `hosts` (DNS names and IP addresses).
  public let certificateFile: String
  public let keyFile: String

  public struct Failure: Error, CustomStringConvertible {
    public var description: String
  }

  /// Makes a P-256 CA named `name` and a certificate for `hosts` signed by it, valid for two
  /// days from now, in `directory` (made if missing): `name`-ca.pem, `name`-server.pem and
  /// `name`-server.key.
  public init(in directory: String, name: String = "test", hosts: [String] = ["localhost", "127.0.0.1"]) throws {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let prefix = directory + "/" + name
    caFile = prefix + "-ca.pem"
    certificateFile = prefix + "-server.pem"
    keyFile = prefix + "-server.key"
    let caKey = prefix + "-ca.key"
    let request = prefix + "-server.csr"
    let extensions = prefix + "-server.ext"
    let names = hosts.map { $0.first(where: \.isLetter) == nil || $0.contains(":") ? "IP:\($0)" : "DNS:\($0)" }
    try "subjectAltName=\(names.joined(separator: ","))\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
      .write(toFile: extensions, atomically: true, encoding: .utf8)
    let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    try Self.openssl(
      ["req", "-x509"] + key + ["-keyout", caKey, "-out", caFile, "-days", "2", "-subj", "/CN=\(name) CA"])
    try Self.openssl(
      ["req"] + key + ["-keyout", keyFile, "-out", request, "-subj", "/CN=\(hosts.first ?? "localhost")"])
    try Self.openssl([
      "x509", "-req", "-in", request, "-CA", caFile, "-CAkey", caKey, "-CAcreateserial", "-out", certificateFile,
      "-days", "2", "-extfile", extensions,
    ])
  }

  static func openssl(_ arguments: [String]) throws {
    let path = ["/usr/bin/openssl", "/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    guard let path else { throw Failure(description: "no openssl command (Debian's openssl package)") }
    let finished = try ChildProcess.run(path, arguments)
    guard finished.status == 0 else {
      throw Failure(description: "openssl \(arguments.prefix(2).joined(separator: " ")) exited \(finished.status)")
    }
  }
}
