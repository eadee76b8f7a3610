import BoardLinux
import Foundation
import LinuxSupport
import Testing

/// `PowerOffRequest`: the flag the poweroff path unit watches, written whole.
final class PowerOffRequestTests {
  let dir: String

  init() throws {
    var template = Array((NSTemporaryDirectory() + "/poweroff-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
    dir = String(cString: made)
  }

  deinit { try? FileManager.default.removeItem(atPath: dir) }

  @Test func theFlagIsWrittenWithItsReasonAndNothingElse() throws {
    let request = PowerOffRequest(runtimeDirectory: dir)
    #expect(request.path == dir + "/poweroff")
    try request.request(reason: "low battery: session 3 ended and exported")
    #expect(
      try String(contentsOfFile: request.path, encoding: .utf8) == "low battery: session 3 ended and exported\n")
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["poweroff"], "no temporary file left")
    // Asked again (a second ride ending before the poweroff came): the flag is replaced.
    try request.request(reason: "again")
    #expect(try String(contentsOfFile: request.path, encoding: .utf8) == "again\n")
  }

  @Test func aMissingRuntimeDirectoryIsAnError() {
    #expect(throws: DurableFileError.self) {
      try PowerOffRequest(runtimeDirectory: dir + "/gone").request(reason: "low battery")
    }
  }
}
