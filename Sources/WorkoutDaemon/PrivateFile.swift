import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A file of secrets the rider gives the service (the ANT+ network key, the platforms' keys):
/// like ssh with a private key, one that every user can read is refused, so a secret that has
/// leaked is said so rather than used.
struct PrivateFile {
  let path: String
  /// What the file holds, for the messages ("the ANT+ network key's file").
  let holds: String

  struct Problem: Error, CustomStringConvertible {
    var description: String
  }

  /// The file's text.
  func read() throws(Problem) -> String {
    var status = stat()
    guard stat(path, &status) == 0 else {
      throw Problem(description: "\(path): \(String(cString: strerror(errno))) (\(holds))")
    }
    guard status.st_mode & S_IFMT == S_IFREG else { throw Problem(description: "\(path) is not a file (\(holds))") }
    if status.st_mode & S_IROTH != 0 {
      throw Problem(
        description:
          "\(path) can be read by every user: it holds \(holds); keep it to the service (chmod 600, owned by workoutd)")
    }
    guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
      throw Problem(description: "\(path) cannot be read by the service (owned by workoutd, mode 600?)")
    }
    return text
  }
}
