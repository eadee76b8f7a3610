import Foundation
import LinuxSupport
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

/// The file formats a session is exported in.
public enum ExportFormat: String, CaseIterable, Sendable, Codable {
  /// Garmin's Flexible and Interoperable Data Transfer: what the platforms and devices speak.
  case fit
  /// GPS Exchange Format 1.1: the track as positions, one segment per running stretch, with
  /// heart rate, cadence, temperature and power in Garmin's extensions; what map tools read.
  case gpx
  /// Garmin's Training Center Database v2: the laps with their totals and every point in
  /// them; what older platforms and tools read when they take no FIT.
  case tcx
  /// One row per point, units in the column names (`CSVActivityWriter`).
  case csv

  public var fileExtension: String { rawValue }

  /// A new encoder of this format for `session`.
  public func encoder(_ session: ExportedSession) -> any ActivityEncoder {
    switch self {
    case .fit: FITActivityWriter(session)
    case .gpx: GPXActivityWriter(session)
    case .tcx: TCXActivityWriter(session)
    case .csv: CSVActivityWriter(session)
    }
  }
}

/// A stored point as the encoders get it: the row and the RR intervals (1/1024 s, oldest
/// first) that arrived in its second.
public struct ExportPoint: Sendable {
  public var point: PointRecord
  public var rrIntervals: [Int]
  /// A position off the globe (a damaged record's) is written as none: every format's
  /// coordinates are held to ±90° and ±180° (GPX's schema, FIT's semicircles).
  public init(_ point: PointRecord, rrIntervals: [Int] = []) {
    var point = point
    let onTheGlobe = point.lat.map { abs($0) <= 90 } == true && point.lon.map { abs($0) <= 180 } == true
    if !onTheGlobe {
      point.lat = nil
      point.lon = nil
    }
    self.point = point
    self.rrIntervals = rrIntervals
  }
}

/// Everything of a stored session an encoder needs except its points, which stream.
public struct ExportedSession: Sendable {
  public var session: SessionRecord
  public var summary: SessionSummary?
  public var laps: [LapRecord]
  public let events: [EventRecord]
  /// What the session recorded of the rider's settings at its start, read from `events` once
  /// (the FIT writer asks for the power averaging at every point).
  public let settings: RecordedSettings
  /// The timer's starts and stops (Unix time), oldest first: running starts it, leaving
  /// running (a pause, the stop) stops it. A GPX track segment, a FIT timer start…stop_all.
  public var timerEvents: [TimerEvent]
  /// The drinks and notes the rider gave on the phone (`annotation` events), oldest first: the
  /// moments FIT marks (user_marker events); GPX and TCX carry their words (`annotationText`).
  public var markers: [Marker]
  /// A number that names the file among the rider's (FIT's file_id serial), never 0.
  public var serial: UInt32
  /// Its time in zone and training figures, whole and per lap, as `workoutctl show` reckons
  /// them; nil when not derived (`load` derives them).
  public var figures: SessionAnalyzer.Result?
  /// A multisport workout's figures per activity (`legs`), each analysed as one stretch.
  public var legFigures: SessionAnalyzer.Result?
  /// The session's newest event when it was loaded (`WorkoutStore.latestEventID`), read before
  /// the rest: the export ledger's note of what the file holds.
  public var sourceEventID: Int64?

  public struct Marker: Sendable, Equatable {
    public var wall: Double
    /// A drink's millilitres; nil for a note.
    public var millilitres: Double?
  }

  public struct TimerEvent: Sendable, Equatable {
    public var wall: Double
    public var start: Bool
  }

  public init(session: SessionRecord, summary: SessionSummary?, laps: [LapRecord], events: [EventRecord]) {
    self.session = session
    self.summary = summary
    self.laps = laps
    self.events = events
    settings = RecordedSettings(events: events)
    timerEvents = Self.timerEvents(events)
    markers = events.filter {
      $0.kind == SessionEvent.Kind.annotation.rawValue && ["drink", "note"].contains($0.cause)
    }
    .sorted { $0.wall < $1.wall }.map { Marker(wall: $0.wall, millilitres: $0.cause == "drink" ? $0.value : nil) }
    // The UUID's first 32 bits: what the file name carries too.
    let serial = UInt32(ExportFile.shortID(of: session), radix: 16) ?? 0
    self.serial = serial == 0 ? 1 : serial
  }

  /// The rider's notes from the phone page (`annotation` events), in order, in one line:
  /// "drink 500 ml at 13:05:10Z; a note at 13:20:00Z; RPE 7 (very hard); mood slightly pleasant";
  /// nil without any. Where a format has a free-text field for the workout (GPX trk desc, TCX
  /// Activity Notes), it carries this.
  public var annotationText: String? {
    let notes = events.filter { $0.kind == SessionEvent.Kind.annotation.rawValue }.compactMap { event -> String? in
      guard let detail = event.detail, !detail.isEmpty else { return nil }
      switch event.cause {
      case "rpe": return detail
      case "mood": return "mood \(detail)"
      default:
        let time = UTCTime(wall: event.wall, rounding: .down)
        return "\(detail) at \(time.dateTime.suffix(8))Z"
      }
    }
    return notes.isEmpty ? nil : notes.joined(separator: "; ")
  }

  /// The session's rows from `store`, and its figures from its points (read a page at a time,
  /// before the file's writer reads them again: TCX gives a lap's calories before its points).
  public static func load(_ session: SessionRecord, from store: WorkoutStore) throws(ExportError) -> ExportedSession {
    do {
      let latest = try store.latestEventID(sessionID: session.id)
      var exported = ExportedSession(
        session: session, summary: try store.summary(of: session), laps: try store.laps(sessionID: session.id),
        events: try store.events(sessionID: session.id))
      exported.sourceEventID = latest
      let settings = exported.settings
      var lapEnds: [Double] = []
      for lap in exported.laps { lapEnds.append((lapEnds.last ?? 0) + lap.timer) }
      var analyzer = SessionAnalyzer(
        zones: settings.zones, lapEnds: lapEnds, endTimer: exported.summary?.totals.timer ?? session.timer,
        ftp: settings.ftp, rider: settings.rider)
      var legAnalyzer = exported.legs.map { legs in
        SessionAnalyzer(
          zones: settings.zones, lapEnds: legs.map { lapEnds[$0.laps.upperBound - 1] },
          endTimer: exported.summary?.totals.timer ?? session.timer, ftp: settings.ftp, rider: settings.rider)
      }
      var from = 0
      while true {
        let points = try store.points(sessionID: session.id, from: from, limit: ExportFile.page)
        for point in points {
          let sample = TrainingSample(timer: point.timer, heartRate: point.hr, power: point.power)
          analyzer.add(sample)
          legAnalyzer?.add(sample)
        }
        guard points.count == ExportFile.page, let last = points.last else { break }
        from = last.seq + 1
      }
      exported.figures = analyzer.finish()
      exported.legFigures = legAnalyzer?.finish()
      return exported
    } catch {
      throw ExportError("session \(session.id): \(error)")
    }
  }

  static func timerEvents(_ events: [EventRecord]) -> [TimerEvent] {
    var out: [TimerEvent] = []
    var running = false
    for event in events.sorted(by: { $0.wall < $1.wall }) where event.kind == SessionEvent.Kind.transition.rawValue {
      let nowRunning = event.toState == SessionState.running.rawValue
      if nowRunning != running {
        out.append(TimerEvent(wall: event.wall, start: nowRunning))
        running = nowRunning
      }
    }
    return out
  }

  /// How the rider counted average power when the session ran (its `powerAveraging` event);
  /// a session from before that setting averaged with the zeros.
  public var powerAveraging: PowerAveraging { settings.powerAveraging }

  /// A multisport workout's activities, each as the laps it closed (its last one ends with
  /// trigger `activityEnd`, the workout's last with `sessionEnd`); nil for a workout of one
  /// activity. FIT writes each as a session of its own sport (FIT SDK, "Multisport").
  public var legs: [(type: ActivityType?, laps: Range<Int>)]? {
    let changes = events.filter { $0.kind == SessionEvent.Kind.activity.rawValue }.sorted { $0.wall < $1.wall }
    guard !changes.isEmpty, !laps.isEmpty else { return nil }
    let types = [ActivityType(rawValue: session.activity)] + changes.map { $0.detail.flatMap(ActivityType.init) }
    var legs: [(ActivityType?, Range<Int>)] = []
    var first = 0
    for (index, lap) in laps.enumerated()
    where LapSummary.Trigger(rawValue: lap.trigger) == .activityEnd || index == laps.count - 1 {
      legs.append((legs.count < types.count ? types[legs.count] : nil, first..<index + 1))
      first = index + 1
    }
    return legs.count > 1 ? legs : nil
  }

  /// When the session started (its first start, else when it was opened), Unix time.
  public var start: Double { session.startWall ?? session.openedWall }
  /// When it ended (else its last lap's end, else its start), Unix time.
  public var end: Double { session.endWall ?? laps.last?.endWall ?? start }
}

/// The power of a stretch of points (a lap, the session), tallied as they stream by, to average
/// as the rider chose: the stored laps and totals average with the zeros.
struct PowerTally: Sendable {
  private(set) var sum = 0
  private(set) var seconds = 0
  private(set) var pedalled = 0

  mutating func add(_ watts: Int?) {
    guard let watts, watts >= 0 else { return }
    sum += watts
    seconds += 1
    if watts > 0 { pedalled += 1 }
  }

  func average(_ averaging: PowerAveraging) -> Double? {
    let count = averaging == .withZeros ? seconds : pedalled
    return count > 0 ? Double(sum) / Double(count) : nil
  }
}

/// A file format's writer for one session, fed as the points stream by: `begin()`, then
/// `point(_:)` for each point in order, then `finish()`; each returns the bytes to append.
/// The same session always gives the same bytes.
public protocol ActivityEncoder {
  init(_ session: ExportedSession)
  mutating func begin() -> [UInt8]
  mutating func point(_ point: ExportPoint) -> [UInt8]
  mutating func finish() -> ActivityEncoderEnd
}

public struct ActivityEncoderEnd: Sendable {
  /// The last bytes of the file.
  public var tail: [UInt8]
  /// Bytes that replace the file's first bytes once all is written (FIT's header, which
  /// holds the data's size); empty for the other formats.
  public var head: [UInt8]
  /// The points written (FIT records, GPX/TCX track points, CSV rows).
  public var points: Int
  public init(tail: [UInt8], head: [UInt8] = [], points: Int) {
    self.tail = tail
    self.head = head
    self.points = points
  }
}

/// Writes a stored session's file into a directory, as its points stream from the store (a
/// page at a time: memory stays flat however long the ride). Written to a temporary name in
/// that directory, synced, renamed, and the directory synced (`DurableFile`): a power cut
/// leaves either the whole file under its name or none (and a temporary file the next export
/// replaces); a failure leaves none.
public enum ExportFile {
  /// Points read from the store at a time.
  static let page = 250
  /// The most bytes given at a time: a page of TCX's points is 125 KB, which each of 16
  /// phones downloading at once held twice (here and in its connection's buffer).
  static let chunkBytes = 16384

  /// The first 8 hex digits of the session's UUID: with the start time to the second, unique
  /// among any rider's sessions, from any board or database.
  public static func shortID(of session: SessionRecord) -> String {
    let short = String(session.uuid.filter(\.isHexDigit).prefix(8)).lowercased()
    return short.isEmpty ? String(session.id) : short
  }

  /// "20261124-103015Z-3f2a9c1e.fit": the start in UTC and the session's short id; the same
  /// session always gets the same name, and names sort by start.
  public static func name(for session: SessionRecord, format: ExportFormat) -> String {
    let start = UTCTime(wall: session.startWall ?? session.openedWall, rounding: .down)
    return "\(start.compact)Z-\(shortID(of: session)).\(format.fileExtension)"
  }

  /// The export table's key for a directory: its canonical absolute path (realpath(3), links
  /// and `..` resolved), so the service, `workoutctl export` and `copy-exports` name one
  /// directory alike however it was given. nil when it cannot be resolved (errno says why).
  public static func ledgerKey(forDirectory path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// A file written.
  public struct Written: Sendable, Equatable {
    public var path: String
    public var name: String
    public var bytes: Int64
    public var points: Int
    /// The session's rows a damaged record made unreadable, left out of the file.
    public var unreadable = UnreadableRows()
    /// What it was made from (`ExportedSession.sourceEventID`).
    public var sourceEventID: Int64?

    /// "(1200 points, 48213 bytes)", and what was left out when something was.
    public var counts: String {
      "(\(points) points, \(bytes) bytes\(unreadable.isEmpty ? "" : "; left out as unreadable: \(unreadable.description)"))"
    }
  }

  /// What a session's files are made of besides its points, read once for all its formats:
  /// its summary, laps and events, and the count of its rows a damaged record made unreadable
  /// (three scans of its rows).
  public struct Source: Sendable {
    public var exported: ExportedSession
    public var unreadable: UnreadableRows

    public static func load(_ session: SessionRecord, from store: WorkoutStore) throws(ExportError) -> Source {
      let exported = try ExportedSession.load(session, from: store)
      do {
        return Source(exported: exported, unreadable: try store.unreadableRows(sessionID: session.id))
      } catch {
        throw ExportError("session \(session.id): \(error)")
      }
    }
  }

  /// Writes `session`'s file in `format` into `directory`.
  @discardableResult
  public static func write(
    _ session: SessionRecord, from store: WorkoutStore, format: ExportFormat, into directory: String
  ) throws(ExportError) -> Written {
    try write(Source.load(session, from: store), from: store, format: format, into: directory)
  }

  /// Writes the file in `format` of the session `source` was loaded for into `directory`, its
  /// points read from `store`.
  @discardableResult
  public static func write(
    _ source: Source, from store: WorkoutStore, format: ExportFormat, into directory: String
  ) throws(ExportError) -> Written {
    let session = source.exported.session
    let name = name(for: session, format: format)
    let path = directory + "/" + name
    let file: DurableFile
    do {
      file = try DurableFile.begin(path: path)
    } catch {
      throw ExportError(error.description)
    }
    var size: Int64 = 0
    func append(_ bytes: [UInt8]) throws(ExportError) {
      size += Int64(bytes.count)
      do {
        try file.write(bytes)
      } catch {
        throw ExportError(error.description)
      }
    }
    let (end, _) = try encode(source, from: store, format: format, emit: append)
    try append(end.tail)
    if !end.head.isEmpty {
      do {
        try file.write(end.head, at: 0)
      } catch {
        throw ExportError("cannot write the start of \(file.temporaryPath): \(String(cString: strerror(error.errno)))")
      }
    }
    do {
      try file.commit()
    } catch {
      throw ExportError(error.description)
    }
    return Written(
      path: path, name: name, bytes: size, points: end.points, unreadable: source.unreadable,
      sourceEventID: source.exported.sourceEventID)
  }

  /// Runs `format`'s encoder over the session's points as they are read from `store`, a page
  /// at a time, giving `emit` each page's bytes as they are made: what every export is made
  /// by, to a file (`write`) or a connection (`stream`). `through`: the last point to read
  /// (nil: all). Returns the encoder's end, its tail not yet given, and the last point read.
  static func encode(
    _ source: Source, from store: WorkoutStore, format: ExportFormat, through last: Int? = nil,
    emit: ([UInt8]) throws(ExportError) -> Void
  ) throws(ExportError) -> (end: ActivityEncoderEnd, lastSeq: Int?) {
    let session = source.exported.session
    var encoder = format.encoder(source.exported)
    try emit(encoder.begin())
    var from = 0
    var lastSeq: Int?
    while true {
      var points: [PointRecord]
      var intervals: [Int: [Int]] = [:]
      let full: Bool
      do {
        points = try store.points(sessionID: session.id, from: from, limit: page)
        full = points.count == page
        if let last { points.removeAll { $0.seq > last } }
        if let first = points.first, let last = points.last {
          for row in try store.rrIntervals(sessionID: session.id, seqs: first.seq...last.seq) {
            intervals[row.seq, default: []].append(row.interval)
          }
        }
      } catch {
        throw ExportError("session \(session.id): \(error)")
      }
      var chunk: [UInt8] = []
      for point in points {
        chunk += encoder.point(ExportPoint(point, rrIntervals: intervals[point.seq] ?? []))
        if chunk.count >= chunkBytes {
          try emit(chunk)
          chunk.removeAll(keepingCapacity: true)
        }
      }
      try emit(chunk)
      lastSeq = points.last?.seq ?? lastSeq
      guard full, let next = points.last, next.seq != last else { break }
      from = next.seq + 1
    }
    return (encoder.finish(), lastSeq)
  }
}
