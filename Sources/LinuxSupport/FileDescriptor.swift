import CLinuxShims
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// An open file descriptor, owned: closed exactly once, by `close()` (from any thread, first
/// come) or when released. Its calls are retried when a signal interrupts them (EINTR), except
/// `close`: Linux releases the descriptor whatever close(2) returns, so a second close could
/// close a descriptor another thread has just been given the same number for. Sockets, device
/// files and files alike are held in one.
public final class FileDescriptor: Sendable {
  public let rawValue: Int32
  private let closed = Atomic<Bool>(false)
  public var isClosed: Bool { closed.load(ordering: .acquiring) }

  /// Takes over `rawValue`, an open descriptor nothing else will close.
  public init(owning rawValue: Int32) {
    self.rawValue = rawValue
  }

  deinit {
    if !isClosed { _ = Glibc.close(rawValue) }
  }

  /// Opens `path` (relative to `directory` when given, as openat(2) does), close-on-exec.
  public static func open(
    _ path: String, _ flags: Int32, mode: mode_t = 0, relativeTo directory: FileDescriptor? = nil
  ) throws(SystemError) -> FileDescriptor {
    let at = directory?.rawValue ?? AT_FDCWD
    let fd = try retryingInterrupts("open", path) { openat(at, path, flags | O_CLOEXEC, mode) }
    return FileDescriptor(owning: fd)
  }

  /// Opens the directory at `path` for reading (to fsync it, or to open files relative to it).
  public static func openDirectory(_ path: String, flags: Int32 = 0) throws(SystemError) -> FileDescriptor {
    try open(path, O_RDONLY | O_DIRECTORY | flags)
  }

  /// Closes it, once: a later call does nothing. Never retried; a failure (EIO of a network or
  /// FAT file system writing back, EINTR) is thrown, the descriptor closed all the same.
  public func close() throws(SystemError) {
    guard closed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
      return
    }
    if Glibc.close(rawValue) != 0 { throw SystemError.last("close") }
  }

  /// Writes all of `bytes`, however many write(2) calls that takes.
  public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
    var done = 0
    while done < bytes.count {
      done += try retryingInterrupts("write") { Glibc.write(rawValue, bytes.baseAddress! + done, bytes.count - done) }
    }
  }

  /// Writes all of `bytes` at `offset`, however many pwrite(2) calls that takes; the file
  /// offset stays where it was.
  public func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
    var done = 0
    while done < bytes.count {
      done += try retryingInterrupts("pwrite") {
        pwrite(rawValue, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
      }
    }
  }

  /// Writes all of `bytes` at `offset`, as `writeAll(_:at:)`.
  public func write(_ bytes: ArraySlice<UInt8>, at offset: Int64) throws(SystemError) {
    try bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try writeAll(raw, at: offset) } }.get()
  }

  /// Reads what is there, up to `buffer.count` bytes; 0 at the end of the file.
  public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
    try retryingInterrupts("read") { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
  }

  /// Reads what is there into `buffer`, up to its size or `limit` bytes; 0 at the end of the file.
  public func read(into buffer: inout [UInt8], limit: Int = .max) throws(SystemError) -> Int {
    let count = buffer.withUnsafeMutableBytes { raw in
      Result { () throws(SystemError) in
        try read(into: UnsafeMutableRawBufferPointer(rebasing: raw[..<min(raw.count, limit)]))
      }
    }
    return try count.get()
  }

  /// Reads to the end of the file: for a /proc or sysfs file, whose size is not known before
  /// it is read.
  public func readToEnd() throws(SystemError) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16384)
    while true {
      let count = try read(into: &chunk)
      if count == 0 { return bytes }
      bytes += chunk[..<count]
    }
  }

  /// Reads up to `count` bytes from the start of what is left, fewer only at the end of the file.
  public func read(upTo count: Int) throws(SystemError) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    var done = 0
    while done < count {
      let got = try bytes.withUnsafeMutableBytes { raw in
        Result { () throws(SystemError) in try read(into: UnsafeMutableRawBufferPointer(rebasing: raw[done...])) }
      }.get()
      if got == 0 { break }
      done += got
    }
    return Array(bytes[..<done])
  }

  /// The bytes of the file at `path`, read to its end.
  public static func contents(of path: String) throws(SystemError) -> [UInt8] {
    let file = try open(path, O_RDONLY)
    do {
      return try file.readToEnd()
    } catch {
      throw SystemError(error.call, errno: error.errno, context: path)
    }
  }

  /// flock(2) LOCK_EX|LOCK_NB: true when this open file now holds the lock, false when another
  /// holds it. Held until this descriptor is closed (or the process ends, however it ends).
  public func tryLockExclusive() throws(SystemError) -> Bool {
    if flock(rawValue, LOCK_EX | LOCK_NB) == 0 { return true }
    let error = Glibc.errno
    if error == EWOULDBLOCK { return false }
    throw SystemError("flock", errno: error)
  }

  /// fsync(2): the file's data and metadata on the device.
  public func sync() throws(SystemError) {
    try retryingInterrupts("fsync") { fsync(rawValue) }
  }

  /// fdatasync(2): the file's data on the device, and the metadata needed to read it back.
  public func syncData() throws(SystemError) {
    try retryingInterrupts("fdatasync") { fdatasync(rawValue) }
  }

  /// syncfs(2): everything of the file system it is on, on the device.
  public func syncFileSystem() throws(SystemError) {
    try retryingInterrupts("syncfs") { shim_syncfs(rawValue) }
  }

  /// ftruncate(2): makes the file `size` bytes long (sparse where it grows).
  public func truncate(to size: Int64) throws(SystemError) {
    try retryingInterrupts("ftruncate") { ftruncate(rawValue, off_t(size)) }
  }

  /// fstat(2).
  public func status() throws(SystemError) -> stat {
    var info = stat()
    try retryingInterrupts("fstat") { fstat(rawValue, &info) }
    return info
  }
}
