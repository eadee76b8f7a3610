import WorkoutStore

/// What an export run writes: session by session, each session's formats in a row, so its
/// laps, events and damaged rows are read once for all of them (`ExportFile.Source`), not once
/// a format. The service's exporter and `workoutctl export` both plan and write through it.
public struct ExportPlan: Sendable, Equatable {
  public struct Job: Sendable, Equatable {
    public var sessionID: Int64
    public var formats: [ExportFormat]
  }

  /// In the order they are written.
  public var jobs: [Job]
  /// The formats whose list of sessions could not be read, with why: the rest of the plan stands.
  public var unlisted: [String] = []

  /// `formats` of each of `sessionIDs`, in that order.
  public init(sessionIDs: [Int64], formats: [ExportFormat]) {
    jobs = sessionIDs.map { Job(sessionID: $0, formats: formats) }
  }

  /// The ended sessions with no current file in `destination` in one of `formats`: none yet,
  /// or one made before a later event (`WorkoutStore.sessionIDsNotExported`); oldest first.
  public static func notExported(formats: [ExportFormat], destination: String, in store: WorkoutStore) -> ExportPlan {
    var pending: [Int64: [ExportFormat]] = [:]
    var unlisted: [String] = []
    for format in formats {
      do {
        for id in try store.sessionIDsNotExported(format: format.rawValue, destination: destination) {
          pending[id, default: []].append(format)
        }
      } catch {
        unlisted.append("cannot list the sessions to export as \(format.rawValue.uppercased()): \(error)")
      }
    }
    var plan = ExportPlan(sessionIDs: [], formats: [])
    plan.jobs = pending.sorted { $0.key < $1.key }.map { Job(sessionID: $0.key, formats: $0.value) }
    plan.unlisted = unlisted
    return plan
  }

  /// What became of one file of the plan.
  public enum Outcome {
    /// Written, with its row for the export table (`destination`'s, at the time it was done).
    case written(ExportFile.Written, ExportRecord)
    /// Not written: the session could not be read, or its file not written.
    case failed(sessionID: Int64, format: ExportFormat, any Error)
  }

  /// Writes the plan's files into `directory`, telling `done` of each: a failure does not stop
  /// the run unless `done` throws. A session deleted meanwhile is passed over.
  public func write(
    from store: WorkoutStore, into directory: String, destination: String, wallNow: () -> Double,
    _ done: (Outcome) throws -> Void
  ) rethrows {
    for job in jobs {
      let source: ExportFile.Source
      do {
        guard let session = try store.session(id: job.sessionID) else { continue }
        source = try ExportFile.Source.load(session, from: store)
      } catch {
        for format in job.formats { try done(.failed(sessionID: job.sessionID, format: format, error)) }
        continue
      }
      for format in job.formats {
        let written: ExportFile.Written
        do {
          written = try ExportFile.write(source, from: store, format: format, into: directory)
        } catch {
          try done(.failed(sessionID: job.sessionID, format: format, error))
          continue
        }
        let entry = ExportRecord(
          sessionID: job.sessionID, format: format.rawValue, destination: destination, name: written.name,
          bytes: written.bytes, points: written.points, writtenWall: wallNow(), sourceEventID: written.sourceEventID)
        try done(.written(written, entry))
      }
    }
  }
}
