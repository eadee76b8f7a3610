#if canImport(Glibc)
  import Glibc
#endif

/// What a privileged helper expects to find under a directory it trusts.
public enum FileKind: Sendable, Equatable {
  case regular, directory
}

/// A file a privileged helper would not open, and why: the file named as the rider or the log
/// sees it.
public struct RefusedFile: Error, Sendable, Equatable, CustomStringConvertible {
  public enum Reason: Sendable, Equatable {
    /// A symbolic link, in its place or on the way to it: never followed.
    case symlink
    /// An absolute path, or one with `..`, `.` or an empty component.
    case outside
    /// Not what was expected: "a FIFO", "a directory", ...
    case kind(String)
    case owner(found: uid_t, expected: uid_t)
    /// It could not be opened or examined (ENOENT, EACCES, ...).
    case failed(SystemError)
  }
  public var path: String
  public var reason: Reason

  public init(_ path: String, _ reason: Reason) {
    self.path = path
    self.reason = reason
  }

  public var description: String {
    switch reason {
    case .symlink: "\(path) is refused: it is a symbolic link, not followed"
    case .outside: "\(path) is refused: it is not a plain name beneath its directory (absolute, or with ..)"
    case .kind(let found): "\(path) is refused: it is \(found)"
    case .owner(let found, let expected): "\(path) is refused: it belongs to uid \(found), not to uid \(expected)"
    case .failed(let error): "cannot open \(path): \(error.reason)"
    }
  }

  /// The errno when it could not be opened (ENOENT: not there), nil when it was refused.
  public var errno: Int32? {
    if case .failed(let error) = reason { return error.errno }
    return nil
  }
}

extension FileDescriptor {
  /// Opens `path` (relative) beneath this directory for reading, as a privileged helper must
  /// open what an unprivileged user can change: one component at a time with
  /// openat(O_NOFOLLOW), each checked with fstat to be a directory (the last: `kind`) owned by
  /// `owner`. A symlink anywhere, `..`, an absolute path, a FIFO or device, or another owner
  /// (a hard link to someone else's file) is refused. `shownAs` is this directory's path, for
  /// messages. (openat2's RESOLVE_BENEATH would do the walk in one call, but not the owner and
  /// type checks of each step; this works on every kernel.)
  public func openBeneath(
    _ path: String, expecting kind: FileKind, ownedBy owner: uid_t, shownAs base: String
  ) throws(RefusedFile) -> FileDescriptor {
    let shown = base + "/" + path
    let components = path.split(separator: "/", omittingEmptySubsequences: false)
    guard !path.hasPrefix("/"), !components.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
      throw RefusedFile(shown, .outside)
    }
    var current = self
    for (index, component) in components.enumerated() {
      let last = index == components.count - 1
      current = try current.openChecked(
        String(component), expecting: last ? kind : .directory, ownedBy: owner, shownAs: shown)
    }
    return current
  }

  /// Opens the directory at `path`, which a privileged helper trusts for its place (the state
  /// directory named in its unit; its parents are root's): not through a symlink in its own
  /// place, and owned by `owner`.
  public static func openTrustedDirectory(_ path: String, ownedBy owner: uid_t) throws(RefusedFile) -> FileDescriptor {
    let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    let slash = trimmed.lastIndex(of: "/")
    let parentPath = slash.map { $0 == trimmed.startIndex ? "/" : String(trimmed[..<$0]) } ?? "."
    let name = slash.map { String(trimmed[trimmed.index(after: $0)...]) } ?? trimmed
    if name.isEmpty { throw RefusedFile(path, .outside) }
    let parent: FileDescriptor
    do {
      parent = try openDirectory(parentPath)
    } catch {
      throw RefusedFile(parentPath, .failed(error))
    }
    return try parent.openBeneath(name, expecting: .directory, ownedBy: owner, shownAs: parentPath)
  }

  /// One step of `openBeneath`: `name` in this directory. Non-blocking, so a FIFO is refused
  /// rather than waited on; no controlling terminal from a tty.
  private func openChecked(
    _ name: String, expecting kind: FileKind, ownedBy owner: uid_t, shownAs shown: String
  ) throws(RefusedFile) -> FileDescriptor {
    let opened: FileDescriptor
    do {
      opened = try FileDescriptor.open(name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, relativeTo: self)
    } catch {
      throw RefusedFile(shown, error.errno == ELOOP ? .symlink : .failed(error))
    }
    let info: stat
    do {
      info = try opened.status()
    } catch {
      throw RefusedFile(shown, .failed(error))
    }
    let type = info.st_mode & S_IFMT
    guard type == (kind == .regular ? S_IFREG : S_IFDIR) else {
      throw RefusedFile(
        shown,
        .kind(
          (Self.kindNames[type] ?? "of an unknown type")
            + (kind == .regular ? ", not a regular file" : ", not a directory")))
    }
    guard info.st_uid == owner else { throw RefusedFile(shown, .owner(found: info.st_uid, expected: owner)) }
    // Back to blocking reads for the copy.
    let flags = fcntl(opened.rawValue, F_GETFL)
    if flags >= 0 { _ = fcntl(opened.rawValue, F_SETFL, flags & ~O_NONBLOCK) }
    return opened
  }

  private static let kindNames: [mode_t: String] = [
    S_IFREG: "a regular file", S_IFDIR: "a directory", S_IFIFO: "a FIFO", S_IFCHR: "a character device",
    S_IFBLK: "a block device", S_IFSOCK: "a socket",
  ]
}
