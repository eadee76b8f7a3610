import Foundation
import LinuxSupport
import WorkoutControl
import WorkoutCore
import WorkoutExport
import WorkoutReports
import WorkoutStore
import WorkoutWeb

/// The rides as the phone's pages read them: the list, one ride's figures and charts, and its
/// files, all from a reading connection of their own.
extension WebRoutes {
  /// A connection of its own for the pages' reads (WAL: beside the engine's writes, never
  /// holding them up), opened per request with a small cache: a file reads its points in
  /// order, a page at a time, and a 256 KiB cache held 215 KiB more a download for nothing.
  func readingStore() throws(StoreError) -> WorkoutStore {
    try WorkoutStore.openForReading(at: store.path, cacheKiB: 32)
  }

  func rides() -> HTTPResponse {
    do {
      let reader = try readingStore()
      let list = try reader.sessions(limit: 200).map { try SessionSummaryJSON(record: $0, store: reader) }
      return .json(200, try ControlJSON.encode(list))
    } catch {
      return .error(503, "cannot read the sessions: \(error)")
    }
  }

  /// What the ride page draws: the summary, laps, events, time in zone and metrics (as `show`
  /// gives them), and at most `chartPoints` points for the charts (every n-th).
  static let chartPoints = 600

  /// Read whole (its rows are few: 500 notes at most), written a piece at a time (`write`).
  struct RideJSON: Encodable {
    var session: SessionSummaryJSON
    var laps: [LapRecord]
    var events: [EventRecord]
    var training: TrainingJSON
    var samples: Samples
    var formats: [String]
    /// Its rows a damaged record made unreadable, left out of all of the above (as `show` says).
    var unreadable: UnreadableRows
    /// The board's battery through the ride (`show`'s line and the level a minute); none
    /// without a gauge.
    var battery: Battery?

    struct Battery: Encodable {
      var summary: String
      /// Minutes from the first sample, and the level then, %.
      var minutes: [Double]
      var level: [Double?]

      init?(_ samples: [BatterySampleRecord]) {
        guard let summary = BatterySampleRecord.summaryLine(samples), let first = samples.first else { return nil }
        self.summary = summary
        minutes = samples.map { ($0.wall - first.wall) / 60 }
        level = samples.map(\.level)
      }
    }

    struct Samples: Encodable {
      var timer: [Double] = []
      var distance: [Double] = []
      var latitude: [Double?] = []
      var longitude: [Double?] = []
      var altitude: [Double?] = []
      var speed: [Double?] = []
      var heartRate: [Int?] = []
      var power: [Int?] = []
      var cadence: [Double?] = []
      /// The road's roughness, RMS m/s² (`TrackPoint.vibration`): the page's chart and the
      /// track's colours.
      var vibration: [Double?] = []
    }

    /// The JSON `ControlJSON.encode` makes of it, byte for byte (keys sorted), each event
    /// and lap encoded on its own: a 12-hour ride's is 0.4 MB, and JSONEncoder's tree of it
    /// whole took 14 MB a request (16 phones at once: 261 MB peak).
    func write(to emit: ([UInt8]) throws -> Void) throws {
      func json(_ value: some Encodable) throws { try emit(Array(try ControlJSON.encode(value).utf8)) }
      func text(_ text: String) throws { try emit(Array(text.utf8)) }
      func list(_ values: [some Encodable]) throws {
        try text("[")
        for (index, value) in values.enumerated() {
          if index > 0 { try text(",") }
          try json(value)
        }
        try text("]")
      }
      var opening = "{"
      func member(_ key: String, _ value: () throws -> Void) throws {
        try text(opening + "\"" + key + "\":")
        opening = ","
        try value()
      }
      if let battery { try member("battery") { try json(battery) } }
      try member("events") { try list(events) }
      try member("formats") { try json(formats) }
      try member("laps") { try list(laps) }
      try member("samples") { try json(samples) }
      try member("session") { try json(session) }
      try member("training") { try json(training) }
      try member("unreadable") { try json(unreadable) }
      try text("}")
    }
  }

  /// The ride's JSON, or nil when there is no such session.
  func ride(_ id: Int64) throws -> RideJSON? {
    let reader = try readingStore()
    guard let record = try reader.session(id: id) else { return nil }
    let summary = try SessionSummaryJSON(record: record, store: reader)
    let laps = try reader.laps(sessionID: id)
    let events = try reader.events(sessionID: id)
    let training = try TrainingJSON(
      store: reader, sessionID: id, endTimer: summary.timer, events: events, laps: laps,
      firstActivity: summary.activity)
    let count = try reader.pointCount(sessionID: id)
    let step = max(1, (count + Self.chartPoints - 1) / Self.chartPoints)
    var samples = RideJSON.Samples()
    var from = 0
    while true {
      let page = try reader.points(sessionID: id, from: from, limit: 250)
      guard let last = page.last else { break }
      for point in page where point.seq % step == 0 {
        samples.timer.append(point.timer)
        samples.distance.append(point.distance)
        samples.latitude.append(point.lat)
        samples.longitude.append(point.lon)
        samples.altitude.append(point.altBaro ?? point.altGPS)
        samples.speed.append(point.wheelSpeed ?? point.speed)
        samples.heartRate.append(point.hr)
        samples.power.append(point.power)
        samples.cadence.append(point.cadence)
        samples.vibration.append(point.vibration)
      }
      from = last.seq + 1
    }
    return RideJSON(
      session: summary, laps: laps, events: events, training: training, samples: samples,
      formats: ExportFormat.allCases.map(\.rawValue), unreadable: try reader.unreadableRows(sessionID: id),
      battery: RideJSON.Battery(try reader.batterySamples(sessionID: id)))
  }

}

extension WebServer {
  /// The ride page's JSON, in chunks as it is encoded (`RideJSON.write`): memory per phone is
  /// the ride's rows and a chunk, not the whole text and JSONEncoder's tree of it.
  func sendRide(_ id: Int64, to client: any WebConnection) {
    var body: ChunkedBody?
    do {
      guard let ride = try routes.ride(id) else {
        try? client.send(HTTPResponse.error(404, "no session \(id)").serialized(keepAlive: false))
        return
      }
      let head = HTTPResponse(status: 200, contentType: "application/json")
      body = ChunkedBody(connection: client, head: head.head(contentLength: nil, keepAlive: false))
      try ride.write { bytes in try body?.write(bytes) }
      try body?.finish()
    } catch {
      guard body?.started != true else { return }
      try? client.send(HTTPResponse.error(503, "cannot read session \(id): \(error)").serialized(keepAlive: false))
    }
  }

  /// Sends the session's file as the exporter makes it (`ExportFile.stream`: the same bytes
  /// as the file exported after the ride, point pages read from the store, nothing staged),
  /// in chunks, so memory stays flat however long the ride and however many download it. A
  /// failure before the first byte is answered with a status; after it, the body ends without
  /// its last chunk, so the browser shows a failed download, never a short file as whole. A
  /// phone that stops reading ends it at the send timeout; stopping the service, at the next
  /// page.
  func sendFile(of id: Int64, format: ExportFormat, to client: any WebConnection) {
    let types: [ExportFormat: String] = [
      .fit: "application/vnd.ant.fit", .gpx: "application/gpx+xml", .tcx: "application/vnd.garmin.tcx+xml",
      .csv: "text/csv; charset=utf-8",
    ]
    var body: ChunkedBody?
    do {
      let reader = try routes.readingStore()
      guard let record = try reader.session(id: id) else {
        try? client.send(HTTPResponse.error(404, "no session \(id)").serialized(keepAlive: false))
        return
      }
      let source = try ExportFile.Source.load(record, from: reader)
      let name = ExportFile.name(for: record, format: format)
      let head = HTTPResponse(
        status: 200, contentType: types[format], headers: [("Content-Disposition", "attachment; filename=\"\(name)\"")])
      body = ChunkedBody(connection: client, head: head.head(contentLength: nil, keepAlive: false))
      try ExportFile.stream(source, from: reader, format: format, cancelled: { stopping.isStopRequested }) {
        bytes throws(ExportError) in
        do {
          try body?.write(bytes)
        } catch {
          throw ExportError("the phone stopped taking it: \(error)")
        }
      }
      try body?.finish()
    } catch {
      log(.warning, "web: cannot send session \(id)'s \(format.rawValue): \(error)")
      guard body?.started != true else { return }
      try? client.send(HTTPResponse.error(503, "cannot make the file: \(error)").serialized(keepAlive: false))
    }
  }
}

/// A response body sent in chunks as it is made, a TLS record's worth at a time (16 KiB, its
/// framing included: one record per chunk over HTTPS). Its buffer never grows past that and
/// is framed in place, so a connection holds 16 KiB however big the pieces written (16 phones
/// downloading at once: Benchmarks/downloads.py). The head goes with the first chunk, so until
/// then the response can still be an error.
struct ChunkedBody {
  /// The data of a chunk: 16 KiB less "3ff8\r\n" before it and "\r\n" after.
  static let chunkSize = 16_384 - 8
  static let framing = 6
  let connection: any WebConnection
  let head: [UInt8]
  private(set) var started = false
  /// The chunk being filled, after `framing` bytes kept for its size line.
  private var buffer: [UInt8] = []

  init(connection: any WebConnection, head: [UInt8]) {
    self.connection = connection
    self.head = head
    buffer.reserveCapacity(Self.framing + Self.chunkSize + 2)
    buffer.append(contentsOf: repeatElement(0, count: Self.framing))
  }

  mutating func write(_ bytes: [UInt8]) throws {
    var rest = bytes[...]
    while !rest.isEmpty {
      let room = Self.framing + Self.chunkSize - buffer.count
      buffer.append(contentsOf: rest.prefix(room))
      rest = rest.dropFirst(room)
      if buffer.count == Self.framing + Self.chunkSize { try flush() }
    }
  }

  /// The rest, and the last chunk that says the body is whole.
  mutating func finish() throws {
    try flush()
    try send(HTTPResponse.chunk([])[...])
  }

  private mutating func flush() throws {
    let size = buffer.count - Self.framing
    guard size > 0 else { return }
    // The size line right-aligned in the room kept for it (a chunk is at most 4 hex digits).
    let line = Array((String(size, radix: 16) + "\r\n").utf8)
    let first = Self.framing - line.count
    buffer.replaceSubrange(first..<Self.framing, with: line)
    buffer.append(contentsOf: [13, 10])
    try send(buffer[first...])
    buffer.removeSubrange(Self.framing...)
  }

  private mutating func send(_ bytes: ArraySlice<UInt8>) throws {
    if started { return try connection.send(bytes) }
    started = true
    try connection.send(head)
    try connection.send(bytes)
  }
}
