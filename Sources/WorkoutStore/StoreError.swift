import GRDB
import WorkoutCore

/// What went wrong in the store, named by what failed. Writes that fail with `diskFull` or
/// `ioFailure` are worth retrying later; the database is left as it was (SQLite rolls back).
public enum StoreError: Error, Sendable, Hashable, CustomStringConvertible {
  case diskFull(String)
  case ioFailure(String)
  case corrupt(String)
  case readOnly(String)
  case cannotOpen(String)
  case unreadableSnapshot(sessionID: Int64, String)
  /// The database has migrations this binary does not know: a newer release wrote it.
  case newerSchema(String)
  /// The database's directory does not let this process create the database or its WAL.
  case directoryNotWritable(String)
  case failed(String)

  public var description: String {
    switch self {
    case .diskFull(let detail): "disk full: \(detail)"
    case .ioFailure(let detail): "I/O error: \(detail)"
    case .corrupt(let detail): "database corrupt: \(detail)"
    case .readOnly(let detail): "database is read-only: \(detail)"
    case .cannotOpen(let detail): "cannot open database: \(detail)"
    case .unreadableSnapshot(let id, let detail): "session \(id) snapshot unreadable: \(detail)"
    case .newerSchema(let detail): "database from a newer workoutd: \(detail)"
    case .directoryNotWritable(let detail): "directory not writable: \(detail)"
    case .failed(let detail): "database error: \(detail)"
    }
  }

  /// The failure as the runtime core weighs it: its kind (one condition however the text
  /// varies) and its words.
  public var fault: StorageFault {
    switch self {
    case .diskFull: .diskFull(description)
    case .ioFailure: .ioError(description)
    case .readOnly: .readOnly(description)
    case .corrupt: .corrupt(description)
    default: .writeFailing(description)
    }
  }

  /// Whether a later retry of the same write can succeed (space or the device may come back).
  public var isTransient: Bool {
    switch self {
    case .diskFull, .ioFailure: true
    default: false
    }
  }

  /// Whether only the operator can fix it (ownership, permissions, a downgrade): at start-up
  /// the service stops with exit code 3 and says what to do, rather than record nowhere.
  public var needsOperator: Bool {
    switch self {
    case .readOnly, .newerSchema, .directoryNotWritable: true
    default: false
    }
  }

  init(_ error: any Error) {
    if let error = error as? StoreError {
      self = error
      return
    }
    guard let error = error as? DatabaseError else {
      self = .failed("\(error)")
      return
    }
    let detail = error.message ?? "\(error.resultCode)"
    switch error.resultCode.primaryResultCode {
    case .SQLITE_FULL: self = .diskFull(detail)
    case .SQLITE_IOERR: self = .ioFailure(detail)
    case .SQLITE_CORRUPT, .SQLITE_NOTADB: self = .corrupt(detail)
    case .SQLITE_READONLY: self = .readOnly(detail)
    case .SQLITE_CANTOPEN: self = .cannotOpen(detail)
    default: self = .failed("\(error.resultCode): \(detail)")
    }
  }
}

/// Something the store did on opening that the operator should hear about.
public enum StoreNotice: Sendable, Hashable {
  case created(path: String)
  /// The database failed its integrity check, or its WAL could not be matched to it, and it
  /// was moved aside with its WAL files (never deleted).
  case movedAside(path: String, to: [String], reason: String)
  /// The last stop was not clean (the WAL still held frames): SQLite replays them, and the
  /// database gets a full check in the background (`integrityCheckIsDue`).
  case uncleanStop(path: String, walBytes: Int)
  /// A background check had found damage; this start checked again before opening.
  case checkedAgain(path: String, result: String)
}
