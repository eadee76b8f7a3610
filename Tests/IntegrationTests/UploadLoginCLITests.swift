import Foundation
import Testing
import WorkoutControl
import WorkoutTestSupport

/// `workoutctl upload login strava` against a stand-in service: the address asked for and
/// printed with what to do, the pasted line sent back; nothing pasted, nothing sent.
struct UploadLoginCLITests {
  static let address = "https://www.strava.com/oauth/authorize?client_id=4711&scope=activity%3Awrite"

  /// workoutctl with `input` on its standard input.
  func workoutctl(
    _ dir: ServiceDirectory, _ arguments: [String], input: String
  ) throws -> (
    status: Int32, output: String
  ) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binaryDirectory + "/workoutctl")
    process.arguments = arguments + ["--state-dir", dir.state, "--runtime-dir", dir.runtime]
    let output = Pipe()
    let stdin = Pipe()
    process.standardOutput = output
    process.standardError = output
    process.standardInput = stdin
    try process.run()
    try stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
  }

  @Test func theAddressIsPrintedAndThePastedLineSentToTheService() throws {
    let dir = ServiceDirectory()
    let requests = ReceivedLines()
    let server = try dir.answering(
      ControlReply(ok: true, message: "logged in to Strava", loginAddress: Self.address), requests: requests)
    defer { server.shutDown() }
    let pasted = "http://localhost/?state=&code=c0de&scope=read,activity:write"
    let login = try workoutctl(dir, ["upload", "login", "strava"], input: pasted + "\n")
    #expect(login.status == 0, "\(login.output)")
    #expect(login.output.contains("   \(Self.address)\n") && login.output.contains("paste it here"))
    #expect(login.output.hasSuffix("logged in to Strava\n"), "\(login.output)")
    let sent = try requests.lines.map { try ControlJSON.decode(ControlRequest.self, from: $0) }
    #expect(sent.map(\.command) == [.stravaLoginAddress, .stravaLogin])
    #expect(sent.last?.pasted == pasted)
  }

  @Test func nothingPastedSendsNothingAndAnotherPlatformHasNoLogin() throws {
    let dir = ServiceDirectory()
    let requests = ReceivedLines()
    let server = try dir.answering(ControlReply(ok: true, loginAddress: Self.address), requests: requests)
    defer { server.shutDown() }
    let empty = try workoutctl(dir, ["upload", "login", "strava"], input: "  \n")
    #expect(empty.status == 1 && empty.output.hasSuffix("workoutctl: nothing was pasted: not logged in to Strava\n"))
    #expect(
      try requests.lines.map { try ControlJSON.decode(ControlRequest.self, from: $0).command } == [
        .stravaLoginAddress
      ])
    let other = try workoutctl(dir, ["upload", "login", "webdav"], input: "")
    #expect(other.status == 64 && other.output.contains("\"webdav\" has no login"), "\(other.output)")
    #expect(requests.lines.count == 1)
  }

  @Test func theServicesRefusalIsSaid() throws {
    let dir = ServiceDirectory()
    let server = try dir.answering(
      ControlReply(
        ok: false, message: "Strava is not configured: add a [strava] section with the API application's client_id"))
    defer { server.shutDown() }
    let refused = try workoutctl(dir, ["upload", "login", "strava"], input: "")
    #expect(refused.status == 1 && refused.output.contains("workoutctl: Strava is not configured"), "\(refused.output)")
  }
}
