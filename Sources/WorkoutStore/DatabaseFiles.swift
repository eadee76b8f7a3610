import Foundation
import LinuxSupport

#if canImport(Glibc)
  import Glibc
#endif

/// The files of one SQLite database in WAL mode, looked at before SQLite opens them: SQLite
/// itself quietly resets a WAL it cannot use (a bad header, or a database file that is gone),
/// and with it every second of the ride that was only in the WAL.
struct DatabaseFiles {
  let path: String
  var wal: String { path + "-wal" }
  var shm: String { path + "-shm" }

  /// What the WAL beside the database says about the last stop.
  enum WALCondition: Equatable {
    /// Nothing in it: absent or empty (SQLite's last connection checkpoints and truncates a
    /// persistent WAL to zero bytes), or its room kept with no frame of its header's in it
    /// (`WorkoutStore.closeKeepingWAL`, `preallocateWAL`): the last stop was clean, or came
    /// before anything was written.
    case empty
    /// Frames a clean close would have checkpointed: the service crashed, was killed or lost
    /// power. SQLite replays them; the database deserves an integrity check.
    case uncleanStop(bytes: Int)
    /// A WAL that cannot belong to this database: SQLite would throw it away.
    case unmatched(String)
  }

  /// Checks the WAL header against the SQLite file format (https://sqlite.org/fileformat.html,
  /// "WAL File Format"): magic 0x377f0682/3, format 3007000, the page size of the database, and
  /// the header's own checksum; and that there is a database for it to belong to.
  func walCondition() -> WALCondition {
    guard let walSize = Self.size(of: wal), walSize > 0 else { return .empty }
    guard let start = Self.read(wal, bytes: 56), start.count >= 32 else {
      return .unmatched("its WAL (\(walSize) bytes) is shorter than a WAL header")
    }
    // Zeros where the header and the first frame's header would be: room made for the WAL
    // whose header never reached the disk (a power cut while it was made). SQLite ignores
    // such a WAL, and there is nothing in it to lose.
    if start.count == 56, start.allSatisfy({ $0 == 0 }) { return .empty }
    let header = Array(start.prefix(32))
    let magic = Self.bigEndian32(header, at: 0)
    guard magic & 0xFFFF_FFFE == 0x377F_0682 else {
      return .unmatched("its WAL (\(walSize) bytes) does not start with a WAL header")
    }
    guard Self.bigEndian32(header, at: 4) == 3_007_000 else {
      return .unmatched("its WAL has an unknown format version \(Self.bigEndian32(header, at: 4))")
    }
    let bigEndianSums = magic & 1 == 1
    let (s0, s1) = Self.walChecksum(Array(header[0..<24]), bigEndian: bigEndianSums)
    guard s0 == Self.bigEndian32(header, at: 24), s1 == Self.bigEndian32(header, at: 28) else {
      return .unmatched("its WAL header's checksum is wrong")
    }
    let databaseSize = Self.size(of: path) ?? 0
    guard databaseSize > 0 else {
      return .unmatched("the database is empty (\(databaseSize) bytes) beside a WAL of \(walSize) bytes")
    }
    if let databaseHeader = Self.read(path, bytes: 100), databaseHeader.count >= 18 {
      // Offset 16: page size, big-endian; 1 means 65536.
      let raw = Int(databaseHeader[16]) << 8 | Int(databaseHeader[17])
      let pageSize = raw == 1 ? 65536 : raw
      let walPageSize = Int(Self.bigEndian32(header, at: 8))
      guard pageSize == walPageSize else {
        return .unmatched("its WAL is for pages of \(walPageSize) bytes, the database's are \(pageSize)")
      }
    }
    // A frame is the header's only if it carries the header's salts (SQLite's recovery reads
    // frames from the first until one does not): without a first frame, none.
    guard start.count == 56, Array(start[40..<48]) == Array(header[16..<24]) else { return .empty }
    return .uncleanStop(bytes: walSize)
  }

  /// A WAL header (https://sqlite.org/fileformat.html, "WAL File Format") for pages of
  /// `pageSize` with fresh random salts and no frame: what SQLite writes when it starts a WAL
  /// afresh, so that SQLite, this release and earlier ones all read it as an empty WAL, and
  /// frames still in the file from before (their salts are the old ones) as none. Checksums
  /// in the machine's byte order (little-endian: magic 0x377f0682), as SQLite writes them.
  static func emptyWALHeader(pageSize: Int, checkpointSequence: UInt32, avoidingSalt: [UInt8]) -> [UInt8] {
    var header = [UInt8](repeating: 0, count: 32)
    func put(_ value: UInt32, at index: Int) {
      for byte in 0..<4 { header[index + byte] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(byte))) }
    }
    put(0x377F_0682, at: 0)
    put(3_007_000, at: 4)
    put(UInt32(pageSize), at: 8)
    put(checkpointSequence, at: 12)
    repeat {
      put(UInt32.random(in: 0...UInt32.max), at: 16)
      put(UInt32.random(in: 0...UInt32.max), at: 20)
    } while Array(header[16..<24]) == avoidingSalt
    let (s0, s1) = walChecksum(Array(header[0..<24]), bigEndian: false)
    put(s0, at: 24)
    put(s1, at: 28)
    return header
  }

  /// The WAL checksum: pairs of 32-bit words, s0 += x0 + s1, s1 += x1 + s0, modulo 2^32.
  static func walChecksum(_ bytes: [UInt8], bigEndian: Bool) -> (UInt32, UInt32) {
    var s0: UInt32 = 0
    var s1: UInt32 = 0
    var index = 0
    while index + 8 <= bytes.count {
      let x0 = word(bytes, at: index, bigEndian: bigEndian)
      let x1 = word(bytes, at: index + 4, bigEndian: bigEndian)
      s0 = s0 &+ x0 &+ s1
      s1 = s1 &+ x1 &+ s0
      index += 8
    }
    return (s0, s1)
  }

  private static func word(_ bytes: [UInt8], at index: Int, bigEndian: Bool) -> UInt32 {
    let b = bytes[index..<index + 4].map(UInt32.init)
    return bigEndian ? b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3] : b[3] << 24 | b[2] << 16 | b[1] << 8 | b[0]
  }

  static func bigEndian32(_ bytes: [UInt8], at index: Int) -> UInt32 {
    word(bytes, at: index, bigEndian: true)
  }

  static func size(of path: String) -> Int? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Int(info.st_size)
  }

  /// The first `bytes` bytes of the file at `path` (fewer if it is shorter); nil if it cannot
  /// be read.
  static func read(_ path: String, bytes: Int) -> [UInt8]? {
    try? FileDescriptor.open(path, O_RDONLY).read(upTo: bytes)
  }

  // MARK: - Who may write

  /// Why this process cannot write `path` (a file, or a directory's entries), or nil if it can.
  /// `access(2)` answers for the real user, which is the service's own.
  static func notWritable(_ path: String) -> String? {
    guard access(path, W_OK) != 0 else { return nil }
    let reason = String(cString: strerror(errno))
    return "\(reason); it belongs to \(owner(of: path)), this process runs as \(userName(getuid()))"
  }

  static func owner(of path: String) -> String {
    var info = stat()
    guard stat(path, &info) == 0 else { return "?" }
    let mode = String(info.st_mode & 0o7777, radix: 8)
    return "\(userName(info.st_uid)):\(groupName(info.st_gid)), mode \(mode)"
  }

  static func userName(_ uid: uid_t) -> String {
    guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
    return String(cString: name)
  }

  static func groupName(_ gid: gid_t) -> String {
    guard let entry = getgrgid(gid), let name = entry.pointee.gr_name else { return "gid \(gid)" }
    return String(cString: name)
  }

  static var processOwner: String { "\(userName(getuid())):\(groupName(getgid()))" }
}
