import Foundation
import Testing

@testable import WorkoutUpload

let platforms = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .appendingPathComponent("Platforms")

/// The fake Strava the uploader's end-to-end tests run against (UploadTests'
/// FakeStravaUploadTests), checked with Python's own http.client over TLS.
struct FakeStravaTests {
  @Test func theFakeBehavesAsStravasDocumentationSays() throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", platforms.appendingPathComponent("check_fake_strava.py").path]
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
