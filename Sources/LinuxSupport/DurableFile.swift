#if canImport(Glibc)
  import Glibc
#endif

/// Why a durable write failed: what it was doing, on which path, and the errno.
public struct DurableFileError: Error, Sendable, Hashable, CustomStringConvertible {
  /// "cannot write /var/lib/workoutd/.sensors.json.partial"
  public var what: String
  public var errno: Int32

  public init(_ what: String, errno: Int32) {
    self.what = what
    self.errno = errno
  }

  /// "cannot write /var/lib/workoutd/.sensors.json.partial: No space left on device"
  public var description: String { "\(what): \(String(cString: strerror(errno)))" }
}

/// A file replaced whole or not at all: written under a temporary name in its directory,
/// synced, renamed over the file's name, and the directory synced. A power cut or a crash
/// leaves the old file or the new one under the name, never part of one (and at worst a
/// temporary file, which the next write of the same file replaces). Everything is reached
/// through the directory's descriptor, and the temporary file is opened with `O_NOFOLLOW`:
/// a symlink planted under its name is refused, never followed.
///
/// `begin`, then `write` (appending, or at an offset) as often as needed, then `commit`. Not
/// committed, the temporary file is removed (`abort`, or when released); a failed `commit`
/// removes it too unless the rename had happened.
public final class DurableFile {
  /// The file's path as messages show it.
  public let path: String
  /// The temporary file's path as messages show it.
  public let temporaryPath: String
  /// The directory's path as messages show it.
  public let directoryPath: String
  private let name: String
  private let temporaryName: String
  private let directory: FileDescriptor
  private let file: FileDescriptor
  private var finished = false

  /// ".NAME.partial": what an interrupted write of NAME leaves.
  public static func temporaryName(for name: String) -> String { "." + name + ".partial" }

  /// Starts replacing the file `name` in the open `directory` (shown as `directoryPath`). The
  /// temporary file is ".NAME.partial", or NAME and `temporarySuffix` when given; one a cut
  /// left is removed first.
  public static func begin(
    _ name: String, in directory: FileDescriptor, shownAs directoryPath: String,
    temporarySuffix: String? = nil, mode: mode_t = 0o640
  ) throws(DurableFileError) -> DurableFile {
    try DurableFile(
      name, in: directory, directoryPath: directoryPath, prefix: directoryPath + "/", temporarySuffix: temporarySuffix,
      mode: mode)
  }

  /// Starts replacing the file at `path`; the temporary file is in the same directory.
  public static func begin(
    path: String, temporarySuffix: String? = nil, mode: mode_t = 0o640
  ) throws(DurableFileError) -> DurableFile {
    let slash = path.lastIndex(of: "/")
    let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
    let parent = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    // Messages name the paths as the caller gave them ("sensors.json", not "./sensors.json").
    let prefix = slash.map { String(path[...$0]) } ?? ""
    let directory: FileDescriptor
    do {
      directory = try FileDescriptor.openDirectory(parent)
    } catch {
      // What the caller would see without the directory's descriptor: the file not made.
      let temporaryName = temporarySuffix.map { name + $0 } ?? Self.temporaryName(for: name)
      throw DurableFileError("cannot create \(prefix + temporaryName)", errno: error.errno)
    }
    return try DurableFile(
      name, in: directory, directoryPath: parent, prefix: prefix, temporarySuffix: temporarySuffix, mode: mode)
  }

  private init(
    _ name: String, in directory: FileDescriptor, directoryPath: String, prefix: String, temporarySuffix: String?,
    mode: mode_t
  ) throws(DurableFileError) {
    let temporaryName = temporarySuffix.map { name + $0 } ?? Self.temporaryName(for: name)
    path = prefix + name
    temporaryPath = prefix + temporaryName
    self.directoryPath = directoryPath
    self.name = name
    self.temporaryName = temporaryName
    self.directory = directory
    _ = unlinkat(directory.rawValue, temporaryName, 0)
    do {
      file = try FileDescriptor.open(
        temporaryName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode, relativeTo: directory)
    } catch {
      throw DurableFileError("cannot create \(prefix + temporaryName)", errno: error.errno)
    }
  }

  deinit { abort() }

  /// Appends `bytes`.
  public func write(_ bytes: [UInt8]) throws(DurableFileError) {
    let written = bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try file.writeAll(raw) } }
    if case .failure(let error) = written {
      throw DurableFileError("cannot write \(temporaryPath)", errno: error.errno)
    }
  }

  /// Writes `bytes` at `offset` (over what is there, or into a hole `setSize` made).
  public func write(_ bytes: [UInt8], at offset: Int64) throws(DurableFileError) {
    let written = bytes.withUnsafeBytes { raw in
      Result { () throws(SystemError) in try file.writeAll(raw, at: offset) }
    }
    if case .failure(let error) = written {
      throw DurableFileError("cannot write \(temporaryPath)", errno: error.errno)
    }
  }

  /// Makes the file `size` bytes long: what is not written reads as zeros and takes no room.
  public func setSize(_ size: Int64) throws(DurableFileError) {
    do {
      try file.truncate(to: size)
    } catch {
      throw DurableFileError("cannot size \(temporaryPath)", errno: error.errno)
    }
  }

  /// Syncs the file, closes it, renames it over the file's name and syncs the directory; with
  /// `syncingFileSystem`, then the directory's whole file system too (FAT keeps directory
  /// entries in the device's buffers, which fsync of the directory does not write out).
  /// Until the rename, a failure removes the temporary file.
  public func commit(syncingFileSystem: Bool = false) throws(DurableFileError) {
    guard !finished else { return }
    finished = true
    do {
      try file.sync()
    } catch {
      discard()
      throw DurableFileError("cannot sync \(temporaryPath)", errno: error.errno)
    }
    do {
      try file.close()
    } catch {
      discard()
      throw DurableFileError("cannot close \(temporaryPath)", errno: error.errno)
    }
    guard renameat(directory.rawValue, temporaryName, directory.rawValue, name) == 0 else {
      let code = Glibc.errno
      discard()
      throw DurableFileError("cannot rename \(temporaryPath) to \(path)", errno: code)
    }
    do {
      try directory.sync()
    } catch {
      throw DurableFileError("cannot sync \(directoryPath)", errno: error.errno)
    }
    if syncingFileSystem {
      do {
        try directory.syncFileSystem()
      } catch {
        throw DurableFileError("cannot sync the file system of \(directoryPath)", errno: error.errno)
      }
    }
  }

  /// Gives up: closes and removes the temporary file; the file under its name is untouched.
  public func abort() {
    guard !finished else { return }
    finished = true
    discard()
  }

  private func discard() {
    try? file.close()
    _ = unlinkat(directory.rawValue, temporaryName, 0)
  }
}
