/// A store write the engine asked for: the commands of one engine step (one transaction), and
/// the clocks they were made at.
public struct HeldWrite: Sendable, Hashable {
  public var commands: [EngineCommand]
  public var stamp: ClockStamp

  /// What the write holds, for the line that says it was given up.
  public var summary: String {
    commands.map { command in
      switch command {
      case .openSession(let s): "open session \(s.id)"
      case .recordEvent(_, let e): "event \(e.kind.rawValue)"
      case .recordPoint(let id, let p): "point \(p.sequence) of session \(id)"
      case .recordRRIntervals(let id, let sequence, let rr):
        "\(rr.count) RR intervals of point \(sequence) of session \(id)"
      case .recordLap(let id, let lap): "lap \(lap.number) of session \(id)"
      case .saveSnapshot(let s): "snapshot of session \(s.id)"
      case .finalizeSession(let id, _): "summary of session \(id)"
      default: "\(command)"
      }
    }.joined(separator: ", ")
  }
}

/// Why the store refused a write, by the kind of failure the rider is told about: a disk
/// that stays full is one condition however its messages vary. Each carries the store's words.
public enum StorageFault: Error, Sendable, Hashable {
  case diskFull(String)
  case ioError(String)
  case readOnly(String)
  case corrupt(String)
  case writeFailing(String)

  /// The condition, as the log line and `workoutctl status` name it.
  public var condition: String {
    switch self {
    case .diskFull: "disk full"
    case .ioError: "I/O error"
    case .readOnly: "read-only"
    case .corrupt: "corrupt"
    case .writeFailing: "write failing"
    }
  }

  /// The store's own words.
  public var reason: String {
    switch self {
    case .diskFull(let reason), .ioError(let reason), .readOnly(let reason), .corrupt(let reason),
      .writeFailing(let reason):
      reason
    }
  }
}

/// The write-behind queue: writes wait here in order until the store takes them. A write the
/// store refuses, whatever the error, stays with everything after it and is tried again (at
/// the next write, or `retryInterval` later): nothing is given up while the service runs,
/// short of `limit` held writes. Pure: the caller does the writing and says how it went.
public struct WriteBehind: Sendable {
  /// About a day of seconds: beyond this the oldest held write is given up, loudly.
  public var limit: Int
  /// Host seconds between tries while the store refuses and nothing new arrives.
  public var retryInterval: Double
  private var held: [HeldWrite] = []
  private var head = 0
  /// Why writes fail, while they do.
  public private(set) var failure: StorageFault?
  /// When (host monotonic) the next try is due while writes fail.
  public private(set) var retryAt = -Double.infinity

  public init(limit: Int = 86_400, retryInterval: Double = 1) {
    self.limit = limit
    self.retryInterval = retryInterval
  }

  public var count: Int { held.count - head }
  public var next: HeldWrite? { head < held.count ? held[head] : nil }

  /// Holds a write; returns one given up (the oldest) when more than `limit` are held.
  public mutating func hold(_ write: HeldWrite) -> HeldWrite? {
    held.append(write)
    guard count > limit else { return nil }
    let dropped = held[head]
    head += 1
    return dropped
  }

  /// The head write was committed. True when that caught up with a failure (all written).
  public mutating func committed() -> Bool {
    guard head < held.count else { return false }
    head += 1
    guard head == held.count else { return false }
    held.removeAll(keepingCapacity: held.count < 4096)
    head = 0
    guard failure != nil else { return false }
    failure = nil
    return true
  }

  /// The head write was refused at host time `host`.
  public mutating func refused(_ fault: StorageFault, host: Double) {
    failure = fault
    retryAt = host + retryInterval
  }

  /// Whether a retry is due (writes are failing and `retryInterval` has passed).
  public func retryDue(host: Double) -> Bool { failure != nil && host >= retryAt }
}
