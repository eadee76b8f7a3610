import LinuxSupport

#if canImport(Glibc)
  import Glibc
#endif

/// Writes files as a POSIX ustar archive (POSIX.1 `pax`, "ustar Interchange Format") to a
/// descriptor: what `workoutctl export --out -` sends down a pipe, so one ssh command carries
/// any number of rides with their names (`| tar -x`). Each member is a 512-byte header, the
/// file's bytes, and zeros to the next 512-byte boundary; two zero blocks end the archive.
public struct TarStream {
  public static let blockSize = 512
  private let descriptor: Int32
  /// What to call the output in messages ("standard output").
  private let label: String
  public private(set) var bytesWritten: Int64 = 0

  public init(descriptor: Int32, label: String) {
    self.descriptor = descriptor
    self.label = label
  }

  /// Appends the regular file at `path` under `name` (a plain file name: ustar keeps up to 100
  /// bytes here, and our export names are about 30).
  public mutating func append(file path: String, as name: String, mode: UInt32 = 0o640) throws(ExportError) {
    let input: FileDescriptor
    do {
      input = try FileDescriptor.open(path, O_RDONLY)
    } catch {
      throw ExportError("cannot open \(path): \(error.reason)")
    }
    defer { try? input.close() }
    guard let info = try? input.status(), info.st_mode & S_IFMT == S_IFREG else {
      throw ExportError("\(path) is not a regular file")
    }
    let size = Int64(info.st_size)
    try write(try Self.header(name: name, size: size, mode: mode, modified: Int64(info.st_mtim.tv_sec)))
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    var left = size
    while left > 0 {
      let count: Int
      do {
        count = try input.read(into: &buffer, limit: Int(min(Int64(buffer.count), left)))
      } catch {
        throw ExportError("cannot read \(path): \(error.reason)")
      }
      guard count > 0 else { throw ExportError("cannot read \(path): it got shorter") }
      try write(buffer[..<count])
      left -= Int64(count)
    }
    let padding = Int((Int64(Self.blockSize) - size % Int64(Self.blockSize)) % Int64(Self.blockSize))
    try write([UInt8](repeating: 0, count: padding))
  }

  /// The end of the archive: two zero blocks.
  public mutating func finish() throws(ExportError) {
    try write([UInt8](repeating: 0, count: 2 * Self.blockSize))
  }

  /// A ustar header block: name, mode, owner 0, size, mtime, checksum, type '0' (a regular file),
  /// magic "ustar\0" and version "00"; the numbers in octal, NUL-terminated.
  static func header(name: String, size: Int64, mode: UInt32, modified: Int64) throws(ExportError) -> [UInt8] {
    let nameBytes = Array(name.utf8)
    guard !nameBytes.isEmpty, nameBytes.count <= 100, !nameBytes.contains(0) else {
      throw ExportError("\"\(name)\" cannot be a tar member's name (1 to 100 bytes)")
    }
    // 11 octal digits hold sizes below 8 GiB.
    guard size >= 0, size < 0o77777777777 else { throw ExportError("\(name) is too large for a ustar archive") }
    var block = [UInt8](repeating: 0, count: blockSize)
    func put(_ bytes: [UInt8], at offset: Int) {
      for (index, byte) in bytes.enumerated() { block[offset + index] = byte }
    }
    func octal(_ value: Int64, digits: Int) -> [UInt8] {
      let text = String(value, radix: 8)
      return Array((String(repeating: "0", count: max(0, digits - text.count)) + text).utf8) + [0]
    }
    put(nameBytes, at: 0)
    put(octal(Int64(mode & 0o7777), digits: 7), at: 100)
    put(octal(0, digits: 7), at: 108)  // uid
    put(octal(0, digits: 7), at: 116)  // gid
    put(octal(size, digits: 11), at: 124)
    put(octal(max(0, modified), digits: 11), at: 136)
    put(Array("0".utf8), at: 156)  // typeflag: a regular file
    put(Array("ustar".utf8) + [0], at: 257)
    put(Array("00".utf8), at: 263)
    // The checksum is the sum of the header's bytes with its own field taken as eight spaces.
    put([UInt8](repeating: 0x20, count: 8), at: 148)
    let sum = block.reduce(0) { $0 + Int64($1) }
    put(octal(sum, digits: 6) + [0x20], at: 148)
    return block
  }

  private mutating func write<Bytes: Collection>(_ bytes: Bytes) throws(ExportError) where Bytes.Element == UInt8 {
    let array = Array(bytes)
    var offset = 0
    while offset < array.count {
      let n = array[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
      if n < 0 {
        if errno == EINTR { continue }
        throw ExportError(
          errno == EPIPE
            ? "\(label) was closed before the archive was whole (the reading end went away)"
            : "cannot write to \(label): \(String(cString: strerror(errno)))")
      }
      offset += n
    }
    bytesWritten += Int64(array.count)
  }
}
