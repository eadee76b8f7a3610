import Foundation
import LinuxSupport
import UploadHTTP
import WorkoutTestSupport
import WorkoutUpload

/// A directory of a test's own under the system's temporary directory.
func temporaryDirectory(_ name: String) throws -> String {
  let path = FileManager.default.temporaryDirectory.appendingPathComponent(
    "upload-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
  ).path
  try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  return path
}

struct HarnessFailure: Error, CustomStringConvertible {
  var description: String
}

/// A conversation run to its end by the real client, as the uploader runs it (a step's delay is
/// the uploader's to wait; these conversations ask for none).
func drive<Conversation: UploadConversation>(
  _ conversation: inout Conversation, client: PlatformHTTPClient, file: [UInt8], fileName: String = "ride-7.fit",
  sessionID: Int64 = 7
) throws -> UploadOutcome {
  let job = UploadJob(sessionID: sessionID, target: .intervalsICU, createdAt: 1_700_000_000)
  var step = conversation.start(job: job, file: file, fileName: fileName)
  for _ in 0..<10 {
    switch step {
    case .send(let request, _):
      step = conversation.receive(client.perform(request))
    case .keep(let keep):
      throw HarnessFailure(description: "this conversation asked to keep \(keep)")
    case .finished(let outcome):
      return outcome
    }
  }
  throw HarnessFailure(description: "the conversation did not end in 10 steps")
}

/// A FIT-sized file of bytes that are not text.
func rideFile(size: Int = 48_000, seed: UInt8 = 3) -> [UInt8] {
  (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
}

/// The hex SHA-256 the fakes record, by coreutils' sha256sum.
func sha256Hex(_ bytes: [UInt8], in directory: String) throws -> String {
  let path = directory + "/hashed.bin"
  try Data(bytes).write(to: URL(fileURLWithPath: path))
  let finished = try ChildProcess.run("/usr/bin/sha256sum", [path])
  guard finished.status == 0 else { throw HarnessFailure(description: "sha256sum exited \(finished.status)") }
  return String(String(decoding: finished.output, as: UTF8.self).prefix(64))
}
