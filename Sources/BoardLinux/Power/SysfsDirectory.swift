import Foundation
import LinuxSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A sysfs directory held open while its attributes are read: each attribute one small text
/// file, read whole and trimmed of its newline. An attribute the driver does not have is
/// absent (ENOENT); one it has but cannot give now (a gauge that does not answer on its bus:
/// EIO, ENODATA, EREMOTEIO) is unreadable, with why.
struct SysfsDirectory {
  let path: String
  private let directory: FileDescriptor

  /// Opens the directory; throws what opening it gave (ENOENT: it is not there).
  init(_ path: String) throws(SystemError) {
    self.path = path
    directory = try FileDescriptor.openDirectory(path)
  }

  enum Attribute: Equatable {
    case value(String)
    case absent
    case unreadable(String)
  }

  func attribute(_ name: String) -> Attribute {
    do {
      let file = try FileDescriptor.open(name, O_RDONLY, relativeTo: directory)
      defer { try? file.close() }
      // Sysfs gives at most a page per attribute.
      let bytes = try file.read(upTo: 4096)
      return .value(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    } catch {
      return error.errno == ENOENT ? .absent : .unreadable(error.reason)
    }
  }

  /// `names`' values and the reasons of those that could not be read.
  func attributes(_ names: [String]) -> (values: [String: String], unreadable: [String: String]) {
    var values: [String: String] = [:]
    var unreadable: [String: String] = [:]
    for name in names {
      switch attribute(name) {
      case .value(let text): values[name] = text
      case .absent: break
      case .unreadable(let why): unreadable[name] = why
      }
    }
    return (values, unreadable)
  }
}
