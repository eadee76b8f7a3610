import Foundation
import Testing
import WorkoutExport

#if canImport(Glibc)
  import Glibc
#endif

/// The archive `workoutctl export --out -` sends, read back by GNU tar and by Python's
/// tarfile (two independent readers of the POSIX ustar format).
@Suite("tar archives on a descriptor")
struct TarStreamTests {
  @Test("files of every size around a block boundary come out whole, named, mode 0640, in order")
  func membersReadBackByTarAndTarfile() throws {
    let directory = ExportDirectory()
    let sizes = [0, 1, 511, 512, 513, 70_000]
    var names: [String] = []
    for (index, size) in sizes.enumerated() {
      let name = "20110925-130021Z-0000000\(index).fit"
      let bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) })
      try bytes.write(to: URL(fileURLWithPath: directory.path + "/" + name))
      names.append(name)
    }
    let archivePath = directory.path + "/rides.tar"
    let output = open(archivePath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    try #require(output >= 0)
    var archive = TarStream(descriptor: output, label: archivePath)
    for name in names { try archive.append(file: directory.path + "/" + name, as: name) }
    try archive.finish()
    close(output)
    let size = try FileManager.default.attributesOfItem(atPath: archivePath)[.size] as? Int
    #expect(size.map { $0 % 512 } == 0)
    #expect(Int64(size ?? 0) == archive.bytesWritten)

    let extracted = directory.path + "/out"
    try FileManager.default.createDirectory(atPath: extracted, withIntermediateDirectories: true)
    let listed = try #require(try runTool("tar", ["-tvf", archivePath], in: directory))
    let listing = listed.output
    #expect(listed.status == 0, "\(listed.errors)")
    let lines = listing.split(separator: "\n")
    #expect(lines.count == names.count)
    #expect(lines.allSatisfy { $0.hasPrefix("-rw-r-----") }, "\(listing)")
    #expect(lines.map { String($0.split(separator: " ").last ?? "") } == names)
    let extract = try #require(try runTool("tar", ["-xf", archivePath, "-C", extracted], in: directory))
    #expect(extract.status == 0, "\(extract.errors)")
    for name in names {
      #expect(
        try Data(contentsOf: URL(fileURLWithPath: extracted + "/" + name))
          == Data(contentsOf: URL(fileURLWithPath: directory.path + "/" + name)), "\(name)")
    }
    let script = """
      import tarfile, sys
      with tarfile.open(sys.argv[1], format=tarfile.USTAR_FORMAT) as t:
          for m in t.getmembers():
              assert m.isfile() and m.mode == 0o640, (m.name, m.mode)
              print(m.name, m.size)
      """
    let python = try #require(try runTool("python3", ["-c", script, archivePath], in: directory))
    #expect(python.status == 0, "\(python.errors)")
    #expect(python.output == zip(names, sizes).map { "\($0) \($1)\n" }.joined())
  }

  @Test("a name a ustar header cannot hold is refused, not cut")
  func longNamesAreRefused() {
    let directory = ExportDirectory()
    FileManager.default.createFile(atPath: directory.path + "/a", contents: Data())
    var archive = TarStream(descriptor: -1, label: "nowhere")
    #expect(throws: ExportError.self) {
      try archive.append(file: directory.path + "/a", as: String(repeating: "x", count: 101))
    }
    #expect(throws: ExportError.self) { try archive.append(file: directory.path + "/a", as: "") }
  }

  @Test("a reader that goes away mid-archive is an error that says so")
  func aClosedPipeIsReported() throws {
    let directory = ExportDirectory()
    let file = directory.path + "/big.fit"
    try Data(count: 256 * 1024).write(to: URL(fileURLWithPath: file))
    var ends: [Int32] = [0, 0]
    try #require(pipe(&ends) == 0)
    close(ends[0])
    let previous = signal(SIGPIPE, SIG_IGN)
    defer {
      signal(SIGPIPE, previous)
      close(ends[1])
    }
    var archive = TarStream(descriptor: ends[1], label: "standard output")
    #expect {
      try archive.append(file: file, as: "big.fit")
    } throws: { error in
      (error as? ExportError)?.description.contains("standard output was closed before the archive was whole") == true
    }
  }
}
