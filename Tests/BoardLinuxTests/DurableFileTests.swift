import Foundation
import LinuxSupport
import Testing

/// `DurableFile`: the file under its name is the old one until `commit` puts the new one there
/// whole; a write given up leaves nothing behind. `FileDescriptor` closes once.
final class DurableFileTests {
  let dir: String

  init() throws {
    var template = Array((NSTemporaryDirectory() + "/durable-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
    dir = String(cString: made)
  }

  deinit { try? FileManager.default.removeItem(atPath: dir) }

  private func contents(_ path: String) -> String? {
    (try? Data(contentsOf: URL(fileURLWithPath: path))).map { String(decoding: $0, as: UTF8.self) }
  }

  private func names() -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
  }

  @Test func commitPutsTheNewFileWholeUnderTheName() throws {
    let path = dir + "/roster.json"
    try "old\n".write(toFile: path, atomically: false, encoding: .utf8)
    let reader = try FileDescriptor.open(path, O_RDONLY)
    let file = try DurableFile.begin(path: path, mode: 0o600)
    #expect(file.temporaryPath == dir + "/.roster.json.partial")
    try file.write(Array("new ".utf8))
    try file.write(Array("text\n".utf8))
    #expect(contents(path) == "old\n", "the old file until the commit")
    #expect(names() == [".roster.json.partial", "roster.json"])
    try file.commit()
    #expect(contents(path) == "new text\n")
    #expect(names() == ["roster.json"], "the temporary file is gone")
    var info = stat()
    #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
    // Renamed over, not written into: a reader of the old file still reads the old bytes.
    var buffer = [UInt8](repeating: 0, count: 16)
    let count = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
    #expect(String(decoding: buffer[..<count], as: UTF8.self) == "old\n")
    #expect(try reader.status().st_ino != info.st_ino)
    try file.commit()
    #expect(contents(path) == "new text\n", "a second commit does nothing")
  }

  @Test func theHeadIsWrittenAtOffsetZeroAndTheSizeSetAhead() throws {
    let path = dir + "/ride.fit"
    let file = try DurableFile.begin(path: path, temporarySuffix: ".tmp")
    #expect(file.temporaryPath == path + ".tmp")
    try file.write(Array("....body".utf8))
    try file.write(Array("HEAD".utf8), at: 0)
    try file.write(Array("!".utf8))
    try file.commit()
    #expect(contents(path) == "HEADbody!", "pwrite leaves the file offset at the end")

    let image = try DurableFile.begin(path: dir + "/drive.img")
    try image.setSize(1 << 20)
    try image.write([0x55, 0xAA], at: 510)
    try image.commit()
    let bytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/drive.img"))
    #expect(bytes.count == 1 << 20 && bytes[510] == 0x55 && bytes[511] == 0xAA && bytes[0] == 0)
  }

  @Test func aWriteGivenUpLeavesTheOldFileAndNoTemporaryOne() throws {
    let path = dir + "/contents"
    try "old".write(toFile: path, atomically: false, encoding: .utf8)
    let aborted = try DurableFile.begin(path: path)
    try aborted.write(Array("half".utf8))
    aborted.abort()
    aborted.abort()
    #expect(names() == ["contents"] && contents(path) == "old")
    do {
      let released = try DurableFile.begin(path: path)
      try released.write(Array("half".utf8))
    }
    #expect(names() == ["contents"] && contents(path) == "old", "released without a commit")
    try DurableFile.begin(path: dir + "/new").abort()
    #expect(names() == ["contents"], "nothing made")
  }

  @Test func aLeftoverOrAPlantedSymlinkIsReplacedNotFollowed() throws {
    let target = dir + "/precious"
    try "mine".write(toFile: target, atomically: false, encoding: .utf8)
    try FileManager.default.createDirectory(atPath: dir + "/stick", withIntermediateDirectories: false)
    try FileManager.default.createSymbolicLink(atPath: dir + "/stick/.a.fit.partial", withDestinationPath: target)
    let stick = try FileDescriptor.openDirectory(dir + "/stick", flags: O_NOFOLLOW)
    let file = try DurableFile.begin("a.fit", in: stick, shownAs: "stick", mode: 0o644)
    #expect(file.path == "stick/a.fit" && file.temporaryPath == "stick/.a.fit.partial")
    try file.write(Array("ride".utf8))
    try file.commit(syncingFileSystem: true)
    #expect(contents(target) == "mine")
    #expect(contents(dir + "/stick/a.fit") == "ride")
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/stick") == ["a.fit"])
  }

  @Test func failuresNameTheStepAndThePath() throws {
    #expect(throws: DurableFileError("cannot create \(dir)/missing/.file.partial", errno: ENOENT)) {
      try DurableFile.begin(path: dir + "/missing/file")
    }
    // The name taken by a directory with something in it: the rename fails, nothing is left.
    try FileManager.default.createDirectory(atPath: dir + "/taken/inside", withIntermediateDirectories: true)
    let file = try DurableFile.begin(path: dir + "/taken")
    try file.write(Array("x".utf8))
    let error = #expect(throws: DurableFileError.self) { try file.commit() }
    #expect(error?.what == "cannot rename \(dir)/.taken.partial to \(dir)/taken")
    #expect(error?.description.hasSuffix(": Is a directory") == true, "\(String(describing: error))")
    #expect(names() == ["taken"])
  }

  @Test func aDescriptorIsClosedOnce() throws {
    let first = try FileDescriptor.open("/dev/null", O_RDONLY)
    try first.close()
    #expect(first.isClosed)
    // Linux hands out the lowest free number: likely `first`'s again, which must stay open.
    let second = try FileDescriptor.open("/dev/null", O_RDONLY)
    try first.close()
    #expect(fcntl(second.rawValue, F_GETFD) == FD_CLOEXEC, "a second close does nothing; close-on-exec")
    var ends: [Int32] = [-1, -1]
    #expect(pipe(&ends) == 0)
    let reader = FileDescriptor(owning: ends[0])
    do {
      let writer = FileDescriptor(owning: ends[1])
      try [UInt8(ascii: "x")].withUnsafeBytes { try writer.writeAll($0) }
    }
    var buffer = [UInt8](repeating: 0, count: 4)
    let got = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
    let end = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
    #expect(got == 1 && end == 0, "the write end closed when released: the reader sees the end")
  }
}
