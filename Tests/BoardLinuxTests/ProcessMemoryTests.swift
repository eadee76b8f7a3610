import Foundation
import Testing

@testable import LinuxSupport

#if canImport(Glibc)
  import Glibc
#endif

/// `ProcessMemory.releaseCodePages`: which mappings it lets go of (the parse of smaps), and on
/// this process's own mappings that what it leaves mapped keeps its bytes, written ones most of all.
@Suite struct ProcessMemoryTests {
  @Test func onlyAFilesUnwrittenUnlockedCodeIsReleasable() {
    // Shaped as Linux 6.x writes /proc/PID/smaps (fields trimmed to those that matter).
    let smaps = """
      55d023ed0000-55d024387000 r--p 00000000 fe:00 5375982                    /usr/bin/workoutd
      Rss:                1292 kB
      Anonymous:             0 kB
      VmFlags: rd mr mw me sd
      55d024396000-55d0256dc000 r-xp 004b6000 fe:00 5375982                    /usr/bin/workoutd
      Size:              19736 kB
      Rss:                7448 kB
      Anonymous:             0 kB
      VmFlags: rd ex mr mw me sd
      55d0257bd000-55d027c08000 rw-p 018bd000 fe:00 5375982                    /usr/bin/workoutd
      Rss:                2032 kB
      Anonymous:           120 kB
      VmFlags: rd wr mr mw me ac sd
      7f0000000000-7f0000010000 r-xp 00000000 fe:00 77                         /opt/relocated text.so
      Rss:                  64 kB
      Anonymous:             4 kB
      VmFlags: rd ex mr mw me sd
      7f0000020000-7f0000030000 r-xp 00000000 fe:00 78                         /opt/locked.so
      Rss:                  64 kB
      Anonymous:             0 kB
      VmFlags: rd ex mr mw me lo sd
      7f0000040000-7f0000050000 r-xp 00000000 fe:00 79                         /usr/lib/libold.so (deleted)
      Rss:                  16 kB
      Anonymous:             0 kB
      VmFlags: rd ex mr mw me sd
      7f0000060000-7f0000070000 r-xp 00000000 00:00 0
      Rss:                  16 kB
      Anonymous:             0 kB
      7ffd5a1f7000-7ffd5a1f9000 r-xp 00000000 00:00 0                          [vdso]
      Rss:                   8 kB
      Anonymous:             0 kB
      VmFlags: rd ex mr mw me de sd
      7f0000080000-7f0000090000 r-xp 00000000 fe:00 80                         /opt/no-anonymous-line.so
      Rss:                  16 kB
      """
    func found(_ file: String) -> [ProcessMemory.CodeMapping] {
      ProcessMemory.releasableCode(of: file, inSmaps: smaps)
    }
    #expect(
      found("/usr/bin/workoutd") == [
        .init(start: 0x55d0_2439_6000, end: 0x55d0_256d_c000, path: "/usr/bin/workoutd", residentKiB: 7448)
      ])
    #expect(
      found("/usr/lib/libold.so (deleted)") == [
        .init(start: 0x7f00_0004_0000, end: 0x7f00_0005_0000, path: "/usr/lib/libold.so (deleted)", residentKiB: 16)
      ])
    for kept in ["/opt/relocated text.so", "/opt/locked.so", "[vdso]", "", "/opt/no-anonymous-line.so", "/usr/bin"] {
      #expect(found(kept) == [], "\(kept)")
    }
    #expect(ProcessMemory.releasableCode(of: "/usr/bin/workoutd", inSmaps: "") == [])
    #expect(ProcessMemory.releasableCode(of: "/x", inSmaps: "garbage\nRss: 4 kB\n-\n/x\n") == [])
  }

  /// A private code mapping of a file, read (so resident) and one that was written before it
  /// was made executable: the first is let go of and reads the same after, the second is kept
  /// with its written byte, which letting go would have turned back into the file's.
  @Test(
    .disabled(
      if: ProcessInfo.processInfo.environment["WORKOUTD_TEST_QEMU_USER"] != nil,
      "qemu-user (make test-arm64) gives its own x86_64 process's /proc/self/smaps, not the program's"))
  func releasingLeavesWrittenPagesAndRereadsTheRest() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pm-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.appendingPathComponent("code.bin").path
    let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    try Data(repeating: 0xC3, count: pageSize * 4).write(to: URL(fileURLWithPath: path))
    let descriptor = open(path, O_RDONLY)
    #expect(descriptor >= 0)
    defer { close(descriptor) }

    func map(writing: Bool) throws -> UnsafeMutablePointer<UInt8> {
      let address = try #require(
        mmap(nil, pageSize * 4, PROT_READ | (writing ? PROT_WRITE : 0), MAP_PRIVATE, descriptor, 0))
      #expect(address != MAP_FAILED)
      let bytes = address.assumingMemoryBound(to: UInt8.self)
      if writing { bytes[pageSize] = 0x90 }  // a private copy of the second page: anonymous now
      #expect(mprotect(address, pageSize * 4, PROT_READ | PROT_EXEC) == 0, "mprotect: \(errno)")
      return bytes
    }
    let clean = try map(writing: false)
    let written = try map(writing: true)
    defer {
      munmap(clean, pageSize * 4)
      munmap(written, pageSize * 4)
    }
    var sum = 0
    for page in 0..<4 { sum += Int(clean[page * pageSize]) }  // resident now
    #expect(sum == 4 * 0xC3)

    // The resident KiB of the mapping that starts at `address`, from smaps' text.
    func resident(_ address: UnsafeMutablePointer<UInt8>, in smaps: String) -> Int? {
      let header = String(UInt(bitPattern: address), radix: 16) + "-"
      var inside = false
      for line in smaps.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard let first = fields.first else { continue }
        if !first.hasSuffix(":") {
          inside = first.hasPrefix(header)
        } else if inside, first == "Rss:", fields.count > 1 {
          return Int(fields[1])
        }
      }
      return nil
    }
    let before = try ProcessMemory.smaps()
    let releasable = ProcessMemory.releasableCode(of: path, inSmaps: before).map(\.start)
    #expect(releasable.contains(UInt(bitPattern: clean)))
    #expect(!releasable.contains(UInt(bitPattern: written)))
    #expect((resident(clean, in: before) ?? 0) >= 4 * pageSize / 1024)

    let released = try ProcessMemory.releaseCodePages(of: path)
    #expect(released >= 4 * pageSize / 1024)
    let after = try ProcessMemory.smaps()
    #expect(resident(clean, in: after) == 0)
    #expect(written[pageSize] == 0x90)
    #expect(written[0] == 0xC3)
    #expect(clean[pageSize] == 0xC3)
    // And this process's own executable, let go of, runs on.
    #expect(try ProcessMemory.releaseCodePages() > 0)
    #expect(
      try ProcessMemory.releasableCode(
        of: ProcessMemory.executablePath(), inSmaps: ProcessMemory.smaps()
      ).count > 0)
  }
}
