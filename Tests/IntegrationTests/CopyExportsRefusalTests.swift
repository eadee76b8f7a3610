import Foundation
import Testing
import WorkoutStore
import WorkoutTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// `workoutctl copy-exports` runs with CAP_DAC_OVERRIDE (workoutd-usb@.service) on what the
/// `workoutd` user can change: the exports directory, the export table, the database. Each
/// attack of the security review (issue 57) is refused, naming the file and why, and the rest
/// of the copy goes on. The target is a plain directory here (no stick needed); a file of
/// another user's needs root.
@Suite(.serialized)
struct CopyExportsRefusalTests {
  /// A recorded ride's exports, a target directory and a secret beside the state directory.
  func setUp() throws -> (dir: ServiceDirectory, exports: String, ours: [String: Data], target: String) {
    let (dir, exports, ours) = try CopyExportsTests().recorded(1)
    let target = dir.path + "/stick"
    try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
    try Data("secret".utf8).write(to: URL(fileURLWithPath: dir.path + "/secret"))
    return (dir, exports, ours, target)
  }

  /// Adds an export row naming `name` in `destination`, as a forger with the database would.
  func forge(_ name: String, format: String, destination: String, in dir: ServiceDirectory) throws {
    let ledger = try WorkoutStore.openForExportLedger(at: dir.database)
    try ledger.recordExport(
      ExportRecord(
        sessionID: 1, format: format, destination: destination, name: name, bytes: 6, points: 0, writtenWall: 0))
  }

  /// copy-exports, killed after 60 s (a FIFO opened for reading waits for a writer): SIGKILL,
  /// as the test process's blocked signals are the child's too.
  func copy(_ dir: ServiceDirectory, to target: String) throws -> (status: Int32, output: String) {
    try run(
      "/usr/bin/timeout",
      ["-s", "KILL", "60", binaryDirectory + "/workoutctl", "copy-exports", "--to", target, "--as", "usb:TEST"]
        + ["--state-dir", dir.state, "--runtime-dir", dir.runtime])
  }

  func files(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
  }

  @Test func aSymlinkedExportsDirectoryIsRefusedAndNothingThereIsRead() throws {
    let (dir, exports, _, target) = try setUp()
    // The exports directory is a symlink to a directory of secrets, and a row names one.
    let elsewhere = dir.path + "/elsewhere"
    try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
    try Data("secret".utf8).write(to: URL(fileURLWithPath: elsewhere + "/shadow"))
    try FileManager.default.removeItem(atPath: exports)
    try FileManager.default.createSymbolicLink(atPath: exports, withDestinationPath: elsewhere)
    try forge("shadow", format: "x", destination: elsewhere, in: dir)

    let refused = try copy(dir, to: target)
    #expect(refused.status == 1, "\(refused.output)")
    #expect(refused.output.contains("\(exports) is refused: it is a symbolic link"), "\(refused.output)")
    #expect(!files(target + "/workoutd").contains("shadow"))
  }

  @Test func forgedRowsAndPlantedFilesAreRefusedEachNamedAndOursAreCopied() throws {
    let (dir, exports, ours, target) = try setUp()
    try Data("x".utf8).write(to: URL(fileURLWithPath: dir.path + "/x"))
    try FileManager.default.createSymbolicLink(atPath: exports + "/link.fit", withDestinationPath: dir.path + "/secret")
    var forged = ["/etc/shadow", "../../x", "link.fit"]
    // Another user's file (a hard link to one would look so): only as root can one be made.
    if geteuid() == 0 {
      try Data("theirs".utf8).write(to: URL(fileURLWithPath: exports + "/theirs.fit"))
      #expect(chown(exports + "/theirs.fit", 65534, 65534) == 0)
      forged.append("theirs.fit")
    }
    for (index, name) in forged.enumerated() {
      try forge(name, format: "forged\(index)", destination: exports, in: dir)
    }

    let copied = try copy(dir, to: target)
    #expect(copied.status == 13, "\(copied.output)")
    #expect(copied.output.contains("\(exports)//etc/shadow is refused: it is not a plain name"), "\(copied.output)")
    #expect(copied.output.contains("\(exports)/../../x is refused: it is not a plain name"), "\(copied.output)")
    #expect(copied.output.contains("\(exports)/link.fit is refused: it is a symbolic link"), "\(copied.output)")
    if geteuid() == 0 {
      #expect(
        copied.output.contains("\(exports)/theirs.fit is refused: it belongs to uid 65534, not to uid 0"),
        "\(copied.output)")
    }
    // Ours are copied all the same, and only they.
    #expect(files(target + "/workoutd") == ours.keys.sorted())
    for (name, data) in ours { #expect(FileManager.default.contents(atPath: target + "/workoutd/" + name) == data) }
    let recorded = try WorkoutStore.openForReading(at: dir.database).exports(sessionID: 1)
    #expect(recorded.filter { $0.destination == "usb:TEST" }.map(\.name).sorted() == ours.keys.sorted())
  }

  @Test func aFIFONamedByARowIsRefusedWithoutWaiting() throws {
    let (dir, exports, ours, target) = try setUp()
    #expect(mkfifo(exports + "/fifo.fit", 0o600) == 0)
    try forge("fifo.fit", format: "fifo", destination: exports, in: dir)
    let copied = try copy(dir, to: target)
    #expect(copied.status == 13, "not killed after 60 s (137): \(copied.output)")
    #expect(
      copied.output.contains("\(exports)/fifo.fit is refused: it is a FIFO, not a regular file"), "\(copied.output)")
    #expect(files(target + "/workoutd") == ours.keys.sorted())
  }

  @Test func aSymlinkedDatabaseIsRefused() throws {
    let (dir, _, _, target) = try setUp()
    // The database moved away and a symlink left under its name: another database (someone
    // else's) would be read and written with CAP_DAC_OVERRIDE.
    let other = dir.path + "/other"
    try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
    for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: dir.database + suffix) {
      try FileManager.default.moveItem(atPath: dir.database + suffix, toPath: other + "/workoutd.db" + suffix)
    }
    try FileManager.default.createSymbolicLink(atPath: dir.database, withDestinationPath: other + "/workoutd.db")
    let refused = try copy(dir, to: target)
    #expect(refused.status == 1, "\(refused.output)")
    #expect(
      refused.output.contains("the copies cannot be recorded: \(dir.database) is refused: it is a symbolic link"),
      "\(refused.output)")
    #expect(files(target + "/workoutd").isEmpty)
  }
}
