import Foundation
import LinuxSupport

#if canImport(Glibc)
  import Glibc
#endif

/// Why a copy failed, by what the rider can do about it.
public enum CopyError: Error, Sendable, Equatable, CustomStringConvertible {
  /// No room left on the target (ENOSPC, EDQUOT).
  case full(String)
  /// The target cannot be written (EROFS, EACCES, EPERM).
  case readOnly(String)
  /// The target went away mid-copy (a stick pulled: EIO, ENODEV, ENXIO, ESHUTDOWN, ENOENT on
  /// what was just there).
  case gone(String)
  /// Our own file to copy is missing or unreadable: nothing on the target is touched.
  case source(String)
  /// Anything else, with the call and its reason.
  case failed(String)

  public var description: String {
    switch self {
    case .full(let text), .readOnly(let text), .gone(let text), .source(let text), .failed(let text): text
    }
  }

  /// Sorts an errno from the target into what it means for the rider.
  static func target(_ code: Int32, _ what: String) -> CopyError {
    let reason = "\(what): \(String(cString: strerror(code)))"
    switch code {
    case ENOSPC, EDQUOT: return .full(reason)
    case EROFS, EACCES, EPERM: return .readOnly(reason)
    case EIO, ENODEV, ENXIO, ESHUTDOWN, ENOENT, ENOTCONN: return .gone(reason)
    default: return .failed(reason)
    }
  }
}

/// Copies export files into a directory of their own on another file system (a USB stick's
/// `workoutd/`): each to a temporary name, synced, renamed, the directory synced, so a stick
/// pulled at any moment holds whole files under their real names or a hidden `.partial` that
/// the next copy replaces. Everything on the target is reached through the directory's own
/// descriptor with `O_NOFOLLOW`: a symlink planted on the stick (as `workoutd`, or under a
/// file's name) is refused, never followed into our own files.
public final class ExportCopier {
  public let directory: String
  private let descriptor: FileDescriptor

  /// Opens `root/name`, making it (mode 0755) if missing; refuses a symlink or a non-directory.
  public init(root: String, name: String = "workoutd") throws(CopyError) {
    directory = root + "/" + name
    let rootDescriptor: FileDescriptor
    do {
      rootDescriptor = try FileDescriptor.openDirectory(root)
    } catch {
      throw .target(error.errno, "cannot open \(root)")
    }
    if mkdirat(rootDescriptor.rawValue, name, 0o755) != 0 && errno != EEXIST {
      throw .target(errno, "cannot make \(directory)")
    }
    do {
      descriptor = try FileDescriptor.open(name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, relativeTo: rootDescriptor)
    } catch {
      throw error.errno == ELOOP || error.errno == ENOTDIR
        ? .failed("\(directory) is not a directory (a symlink or a file is in its place); it is left alone")
        : .target(error.errno, "cannot open \(directory)")
    }
  }

  /// Copies `name` from the exports directory `source` (shown as `sourceDirectory`) in under
  /// the same name; returns the bytes copied. The name comes from the export table, which the
  /// service's user can write: it is opened beneath `source` only, no symlink followed, and
  /// must be a regular file of `owner`'s (`FileDescriptor.openBeneath`), or it is refused as
  /// a `.source` error and the copy goes on with the others.
  @discardableResult
  public func copy(
    _ name: String, from source: FileDescriptor, shownAs sourceDirectory: String, ownedBy owner: uid_t
  ) throws(CopyError) -> Int64 {
    // One name in the directory, not a hidden one (our own temporary files are).
    guard !name.contains("/"), !name.hasPrefix(".") else {
      throw .source(RefusedFile(sourceDirectory + "/" + name, .outside).description)
    }
    let sourcePath = sourceDirectory + "/" + name
    let input: FileDescriptor
    do {
      input = try source.openBeneath(name, expecting: .regular, ownedBy: owner, shownAs: sourceDirectory)
    } catch {
      throw .source("\(error)")
    }
    // A temporary file a pulled stick kept from an earlier copy is removed first.
    let output: DurableFile
    do {
      output = try DurableFile.begin(name, in: descriptor, shownAs: directory, mode: 0o644)
    } catch {
      throw .target(error.errno, error.what)
    }
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    var copied: Int64 = 0
    while true {
      let count: Int
      do {
        count = try input.read(into: &buffer)
      } catch {
        throw .source("cannot read \(sourcePath): \(String(cString: strerror(error.errno)))")
      }
      if count == 0 { break }
      do {
        try output.write(Array(buffer[0..<count]))
      } catch {
        throw .target(error.errno, error.what)
      }
      copied += Int64(count)
    }
    // A FAT driver reports a full or vanished stick at the latest at the sync. It keeps
    // directory entries in the device's buffers, which fsync of the directory does not write
    // (only a `dirsync` mount does): without syncing the whole file system, a rename could be
    // lost to a pull although recorded as copied (seen on Linux 6.12 in the board VM: the file
    // missing on the stick, the ledger saying it was there).
    do {
      try output.commit(syncingFileSystem: true)
    } catch {
      throw .target(error.errno, error.what)
    }
    return copied
  }
}

/// A USB stick's name in the export table, `usb:<filesystem UUID>`: the UUID udev found on the
/// partition (its `/dev/disk/by-uuid` link), so the same stick is the same target in any port
/// and under any kernel name.
public enum StickIdentity {
  /// The name for the partition `device` ("/dev/sda1"); nil when no by-uuid link leads to it
  /// (a file system without a UUID, or not a block device udev has seen). Links are matched by
  /// the kernel name they point at ("../../sda1"), not by resolving them: in the copier's
  /// sandbox (a private /dev) only the links are there, not the device.
  public static func targetName(forDevice device: String, byUUID directory: String = "/dev/disk/by-uuid") -> String? {
    let wanted = kernelName(of: device)
    guard !wanted.isEmpty, let listing = opendir(directory) else { return nil }
    defer { closedir(listing) }
    while let entry = readdir(listing) {
      let uuid = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      guard !uuid.hasPrefix("."), let target = linkTarget(directory + "/" + uuid) else { continue }
      if lastComponent(target) == wanted { return "usb:" + uuid }
    }
    return nil
  }

  /// A file system mounted from the disk that holds `name` ("sda1", or a whole disk "sdb"),
  /// as "sda2 on /": a USB disk the board runs from (a Pi booting from a USB SSD) is not a
  /// stick to copy rides onto, however its partitions look. nil when none is mounted.
  /// `mountinfo` is /proc/self/mountinfo's text (its third field is the device's
  /// major:minor); `sysClassBlock` is sysfs's /sys/class/block.
  public static func mountedFileSystem(
    onDiskOf name: String, mountinfo: String, sysClassBlock: String = "/sys/class/block"
  ) -> String? {
    let own = sysClassBlock + "/" + name
    let isPartition = access(own + "/partition", F_OK) == 0
    guard let disk = ExportFile.ledgerKey(forDirectory: isPartition ? own + "/.." : own) else { return nil }
    var devices: [String: String] = [:]  // major:minor -> kernel name
    if let number = firstLine(disk + "/dev") { devices[number] = lastComponent(disk) }
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: disk)) ?? []
    where access(disk + "/" + entry + "/partition", F_OK) == 0 {
      if let number = firstLine(disk + "/" + entry + "/dev") { devices[number] = entry }
    }
    for line in mountinfo.split(separator: "\n") {
      // mountinfo(5): ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ...
      let fields = line.split(separator: " ", maxSplits: 5)
      guard fields.count > 4, let partition = devices[String(fields[2])] else { continue }
      return "\(partition) on \(fields[4])"
    }
    return nil
  }

  /// Whether the kernel found block device `name` write-protected (sysfs `ro`: a stick's
  /// lock switch, or a card reader's for the card).
  public static func isWriteProtected(_ name: String, sysClassBlock: String = "/sys/class/block") -> Bool {
    firstLine(sysClassBlock + "/" + name + "/ro") == "1"
  }

  private static func firstLine(_ path: String) -> String? {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
    return text.split(separator: "\n").first.map { $0.trimmingCharacters(in: .whitespaces) }
  }

  /// "sda1" for "/dev/sda1", or for a link to it that can be resolved.
  public static func kernelName(of device: String) -> String {
    lastComponent(ExportFile.ledgerKey(forDirectory: device) ?? device)
  }

  private static func lastComponent(_ path: String) -> String {
    String(path.split(separator: "/").last ?? "")
  }

  private static func linkTarget(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink(path, &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
