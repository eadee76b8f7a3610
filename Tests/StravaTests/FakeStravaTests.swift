import Foundation
import Testing

/// The fake Strava the uploader's end-to-end tests run against, checked with Python's own
/// http.client over TLS before the project's client is pointed at it.
struct FakeStravaTests {
  @Test func theFakeBehavesAsStravasDocumentationSays() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", root.appendingPathComponent("Platforms/check_fake_strava.py").path]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let words = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(words)")
    #expect(words.contains("all checks hold"))
  }
}
