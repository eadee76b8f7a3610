import CLinuxShims

#if canImport(Glibc)
  import Glibc
#endif

/// The process's own memory, for a service that lives for months on a board with little.
public enum ProcessMemory {
  /// Makes every thread allocate from malloc's one main arena (glibc gives each thread that
  /// allocates beside another an arena of its own, up to 8 per CPU, and each keeps what it freed
  /// for its next use). The service's threads are few and rarely allocate at the same moment;
  /// one arena makes the integrity check's and the exporter's freed memory the engine's too
  /// (peak RSS at a start after a kill -9 on a 1 GB database: 16.0 -> 15.4 MiB, make bench).
  /// Call it before any thread is started.
  @discardableResult
  public static func useOneHeapArena() -> Bool {
    shim_use_one_malloc_arena() == 1
  }

  /// Gives the heap's free memory back to the kernel (malloc_trim(3)): glibc keeps what a
  /// thread freed in that thread's arena for its next use, so a rare large job (a catch-up of
  /// exports) would otherwise stay in the service's resident size. True if any was released.
  @discardableResult
  public static func releaseFreeHeap() -> Bool {
    shim_release_free_heap() == 1
  }

  /// A mapping of a file's machine code (an `r-xp` line of /proc/PID/smaps).
  public struct CodeMapping: Sendable, Hashable {
    public var start: UInt
    public var end: UInt
    public var path: String
    /// Its pages resident in this process, KiB (smaps' `Rss`).
    public var residentKiB: Int
  }

  /// The mappings of `smaps` (the text of /proc/PID/smaps) whose pages this process can let go
  /// of and read back from their file unchanged: `file`'s code, private, with no page of its
  /// own (`Anonymous: 0`: a page written, by a text relocation say, would go back to the file's
  /// bytes) and not locked. Data is never among them, read-only data included: RELRO is written
  /// at start and only then made read-only.
  public static func releasableCode(of file: String, inSmaps smaps: String) -> [CodeMapping] {
    var found: [CodeMapping] = []
    var current: CodeMapping?
    var unwritten = false
    var locked = false
    func finish() {
      if let mapping = current, unwritten, !locked { found.append(mapping) }
      current = nil
    }
    for line in smaps.split(separator: "\n", omittingEmptySubsequences: true) {
      let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
      guard let first = fields.first else { continue }
      if !first.hasSuffix(":") {
        // A mapping's header: "start-end perms offset device inode [path]".
        finish()
        unwritten = false
        locked = false
        let bounds = first.split(separator: "-")
        guard fields.count == 6, fields[1] == "r-xp", file.hasPrefix("/"), fields[5].drop(while: { $0 == " " }) == file,
          bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16), end > start
        else { continue }
        current = CodeMapping(start: start, end: end, path: file, residentKiB: 0)
        continue
      }
      guard current != nil, fields.count > 1 else { continue }
      switch first {
      case "Rss:": current?.residentKiB = Int(fields[1]) ?? 0
      case "Anonymous:": unwritten = fields[1] == "0"
      case "VmFlags:": locked = line.split(separator: " ").contains("lo")
      default: break
      }
    }
    finish()
    return found
  }

  /// Lets go of the resident pages of `file`'s code in this process (`releasableCode`), by
  /// default the executable's own, with madvise(MADV_DONTNEED): the next instruction on such a
  /// page maps it again from the page cache, or reads it from the file. The service's start-up
  /// runs code no recorded second runs (the configuration, the migrations, the resume), which
  /// the kernel's fault-around maps 64 KiB at a time; without this its pages stay in the
  /// service's resident size for months. Only one file's: the executable cannot be unmapped
  /// between smaps' reading and the advice (a library could be, and its range reused for
  /// data), and the shared libraries' code is resident for every process that runs them anyway.
  /// Returns the KiB that were resident.
  @discardableResult
  public static func releaseCodePages(of file: String? = nil) throws(SystemError) -> Int {
    let path: String
    if let file { path = file } else { path = try executablePath() }
    let smaps = try Self.smaps()
    var released = 0
    for mapping in releasableCode(of: path, inSmaps: smaps) {
      try retryingInterrupts("madvise", mapping.path) {
        madvise(UnsafeMutableRawPointer(bitPattern: mapping.start), Int(mapping.end - mapping.start), MADV_DONTNEED)
      }
      released += mapping.residentKiB
    }
    return released
  }

  /// This process's executable as smaps names it (" (deleted)" after when it was replaced on
  /// disk since it started, as in both).
  static func executablePath() throws(SystemError) -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 16)
    let length = try retryingInterrupts("readlink", "/proc/self/exe") {
      readlink("/proc/self/exe", &buffer, buffer.count - 1)
    }
    return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// /proc/self/smaps: each mapping of this process and what of it is resident.
  static func smaps() throws(SystemError) -> String {
    String(decoding: try FileDescriptor.contents(of: "/proc/self/smaps"), as: UTF8.self)
  }
}
