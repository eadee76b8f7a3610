#if canImport(Glibc)
  import Glibc
#endif

/// The names in the directory at `path` (opendir(3), readdir(3)), without "." and "..", sorted;
/// a directory that cannot be opened is a `SystemError` (ENOENT: there is none).
public func directoryEntries(_ path: String) throws(SystemError) -> [String] {
  guard let stream = opendir(path) else { throw SystemError.last("opendir", path) }
  defer { closedir(stream) }
  var names: [String] = []
  while let entry = readdir(stream) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    if name != ".", name != ".." { names.append(name) }
  }
  return names.sorted()
}
