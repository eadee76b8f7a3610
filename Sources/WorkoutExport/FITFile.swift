import Foundation
import WorkoutCore
import WorkoutStore

#if canImport(Glibc)
  import Glibc
#endif

/// Why an export could not be written: the message names the file and the failure.
public struct ExportError: Error, Sendable, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// Writes a stored session's FIT file into a directory, as its points stream from the store
/// (a page at a time: memory stays flat however long the ride). Written to a temporary name in
/// that directory, synced, renamed, and the directory synced: a power cut leaves either the
/// whole file under its name or none (and a temporary file the next export replaces).
public enum FITFile {
  /// Points read from the store at a time.
  static let page = 2_000

  /// "20261124-103015Z-42.fit": the start in UTC and the session's number; the same session
  /// always gets the same name.
  public static func name(for session: SessionRecord) -> String {
    let start = session.startWall ?? session.openedWall
    var time = time_t(start.rounded(.down))
    var parts = tm()
    gmtime_r(&time, &parts)
    let stamp = String(
      format: "%04d%02d%02d-%02d%02d%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    return "\(stamp)-\(session.id).fit"
  }

  /// Writes `session`'s FIT file into `directory`; returns its path and the records written.
  @discardableResult
  public static func write(
    _ session: SessionRecord, from store: WorkoutStore, into directory: String
  ) throws(ExportError) -> (path: String, records: Int) {
    let path = directory + "/" + name(for: session)
    let temporary = directory + "/." + name(for: session) + ".partial"
    let summary: SessionSummary?
    let laps: [LapRecord]
    let events: [EventRecord]
    do {
      summary = try store.summary(of: session)
      laps = try store.laps(sessionID: session.id)
      events = try store.events(sessionID: session.id)
    } catch {
      throw ExportError("session \(session.id): \(error)")
    }
    // A serial that names the file among the rider's: the session's start, which the same
    // database never gives two sessions.
    let serial = UInt32(truncatingIfNeeded: Int64((session.startWall ?? session.openedWall).rounded(.down)))
    var writer = FITActivityWriter(session: session, summary: summary, laps: laps, events: events, serial: serial)

    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
    guard descriptor >= 0 else { throw ExportError("cannot create \(temporary): \(String(cString: strerror(errno)))") }
    var closed = false
    defer {
      if !closed { close(descriptor) }
    }
    func append(_ bytes: [UInt8]) throws(ExportError) {
      var offset = 0
      while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        if n < 0 {
          if errno == EINTR { continue }
          throw ExportError("cannot write \(temporary): \(String(cString: strerror(errno)))")
        }
        offset += n
      }
    }
    try append(FITActivityWriter.headerPlaceholder)
    try append(writer.begin())
    var from = 0
    while true {
      let points: [PointRecord]
      do {
        points = try store.points(sessionID: session.id, from: from, limit: page)
      } catch {
        throw ExportError("session \(session.id): \(error)")
      }
      var chunk: [UInt8] = []
      for point in points { chunk += writer.point(point) }
      try append(chunk)
      guard points.count == page, let last = points.last else { break }
      from = last.seq + 1
    }
    let (tail, finished) = writer.finish()
    try append(tail)
    try append(finished.crc)
    let headerWritten = finished.header.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    guard headerWritten == finished.header.count else {
      throw ExportError("cannot write the header of \(temporary): \(String(cString: strerror(errno)))")
    }
    guard fsync(descriptor) == 0 else {
      throw ExportError("cannot sync \(temporary): \(String(cString: strerror(errno)))")
    }
    closed = true
    close(descriptor)
    guard rename(temporary, path) == 0 else {
      throw ExportError("cannot rename \(temporary) to \(path): \(String(cString: strerror(errno)))")
    }
    let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if directoryDescriptor >= 0 {
      _ = fsync(directoryDescriptor)
      close(directoryDescriptor)
    }
    return (path, finished.records)
  }
}
