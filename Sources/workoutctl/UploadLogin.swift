import ArgumentParser
import Foundation
import WorkoutControl

extension Upload {
  /// `workoutctl upload login strava`: the OAuth login (developers.strava.com/docs/authentication)
  /// made from the board's terminal. The service knows the client id and holds the client
  /// secret, which this command cannot read: it asks the service for the address, the rider
  /// approves in any browser, and the address the browser ends on (a localhost page that does
  /// not load) is pasted back for the service to trade its code.
  struct Login: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Let the service upload to the rider's Strava account: workoutctl upload login strava.",
      discussion:
        "Prints an address to open in a browser. Approve the upload permission there; the browser then ends on an http://localhost address that does not load: copy that whole address from its address bar and paste it here. The service trades its code for Strava's tokens and keeps them in its state directory; rides that waited for the login go then. Needs [strava] client_id in the configuration and strava_client_secret in the secrets file."
    )
    @OptionGroup var locations: Locations
    @Argument(help: ArgumentHelp("The platform: strava (the only one with a login).", valueName: "platform"))
    var platform: String

    func validate() throws {
      guard platform == "strava" else {
        throw ValidationError(
          "\"\(platform)\" has no login: only strava does (intervals.icu and WebDAV use the secrets file)")
      }
    }

    func run() throws {
      let asked = try request(ControlRequest(command: .stravaLoginAddress), to: locations)
      guard let address = asked.loginAddress else { throw fail("the service gave no Strava address") }
      // Written at once (not through print's buffer): shown before the wait for the paste.
      FileHandle.standardOutput.write(
        Data(
          """
          1. Open this address in a browser (a phone's will do) and log in to Strava:

             \(address)

          2. Approve "Upload your activities". The browser then ends on an address starting with
             http://localhost that does not load: that is expected.
          3. Copy that whole address from the address bar and paste it here, then Enter:

          """.utf8))
      guard let pasted = readLine(strippingNewline: true), !pasted.allSatisfy(\.isWhitespace) else {
        throw fail("nothing was pasted: not logged in to Strava")
      }
      // The exchange is a round trip to Strava from the service.
      let reply = try request(ControlRequest(command: .stravaLogin, pasted: pasted), to: locations, timeout: 60)
      print(reply.message ?? "logged in to Strava")
    }
  }
}
