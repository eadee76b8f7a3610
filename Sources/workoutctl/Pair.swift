import ArgumentParser
import Foundation
import WorkoutControl
import WorkoutCore
import WorkoutExport

struct Pair: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Pair a phone with the board's web page ([web] enabled): a one-time code and its QR code.",
    discussion:
      "Open the URL on the phone (or scan the QR code, or type the code on the page): the phone gets a token of its own, kept until revoked. The code works once, for 5 minutes."
  )
  @OptionGroup var locations: Locations
  @Flag(help: "List the paired phones.") var list = false
  @Option(help: "Revoke phone ID (see --list).") var revoke: Int64?
  @Flag(help: "Print the reply as JSON.") var json = false
  @Flag(help: "No QR code.") var noQR = false

  func run() throws {
    if let revoke {
      let reply = try request(ControlRequest(command: .revokePairing, id: revoke), to: locations, timeout: 20)
      print(reply.message ?? "phone \(revoke) revoked")
      return
    }
    if list {
      let reply = try request(ControlRequest(command: .listPairings), to: locations, timeout: 20)
      let clients = reply.webClients ?? []
      if json {
        print(try ControlJSON.encode(clients))
        return
      }
      guard !clients.isEmpty else {
        print("no phones paired (workoutctl pair)")
        return
      }
      for client in clients {
        let paired = ExportTime.iso8601(client.paired)
        let seen = client.lastSeen.map { "last seen \(ExportTime.iso8601($0))" } ?? "not seen since pairing"
        let revoked = client.revoked.map { "  REVOKED \(ExportTime.iso8601($0))" } ?? ""
        print("\(client.id)  paired \(paired), \(seen)\(revoked)  \(TerminalText.escaped(client.name.prefix(60)))")
      }
      return
    }
    let reply = try request(ControlRequest(command: .pair), to: locations, timeout: 20)
    guard let pairing = reply.pairing else { throw fail("the service sent no code") }
    if json {
      print(try ControlJSON.encode(pairing))
      return
    }
    print(
      "pairing code: \(pairing.code)  (valid \(wholeNumberText((pairing.expiresIn / 60).rounded(.down))) minutes, once)"
    )
    for url in pairing.urls { print("open on the phone: \(url)") }
    if let fingerprint = pairing.fingerprint {
      print("the board's certificate, SHA-256: \(fingerprint)")
      print("  the phone warns that it does not know it: check that it shows this fingerprint, once")
    } else {
      print("plain HTTP ([web] tls = false): anyone on this network can read the phone's token")
    }
    if !noQR, let url = pairing.urls.first {
      do {
        print(try TerminalQR.render(url))
      } catch {
        FileHandle.standardError.write(Data("workoutctl: no QR code: \(error)\n".utf8))
      }
    }
  }
}
