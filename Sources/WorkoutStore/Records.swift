import Foundation
import GRDB
import GRDBSQLite
import WorkoutCore

// One record type per table, GRDB-style. Column names are the schema's (see Schema.swift):
// each property's name in snake case, through GRDB's column coding strategies (`SnakeCaseColumns`).

/// A record whose columns are its properties' names in snake case (`openedWall` is
/// `opened_wall`, `sessionID` is `session_id`). Encoding is GRDB's `convertToSnakeCase`;
/// decoding turns a column back into the property's name with Swift's convention for acronyms
/// (GRDB's `convertFromSnakeCase` would look for `sessionId`).
public protocol SnakeCaseColumns: FetchableRecord, EncodableRecord {}

extension SnakeCaseColumns {
  public static var databaseColumnEncodingStrategy: DatabaseColumnEncodingStrategy { .convertToSnakeCase }
  public static var databaseColumnDecodingStrategy: DatabaseColumnDecodingStrategy {
    .custom { ColumnKey(propertyFor: $0) }
  }
}

/// A property's coding key made from its column's name.
struct ColumnKey: CodingKey {
  /// Words written in capitals in property names, after the Swift API Design Guidelines.
  static let acronyms: Set<Substring> = ["id", "gps", "hr"]

  var stringValue: String
  var intValue: Int? { nil }

  init(stringValue: String) { self.stringValue = stringValue }
  init?(intValue: Int) { nil }

  /// `session_id` → `sessionID`, `alt_gps` → `altGPS`, `opened_wall` → `openedWall`.
  init(propertyFor column: String) {
    let words = column.split(separator: "_")
    var name = words.first.map(String.init) ?? column
    for word in words.dropFirst() {
      name += Self.acronyms.contains(word) ? word.uppercased() : word.prefix(1).uppercased() + word.dropFirst()
    }
    stringValue = name
  }
}

/// A row of `session`: one workout. `snapshot` carries everything needed to resume it.
public struct SessionRecord: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord, SnakeCaseColumns {
  public static let databaseTableName = "session"

  public var id: Int64
  /// The session's identity beyond this database (migration v7): a random UUID, lower case.
  public var uuid: String
  public var activity: String
  public var state: String
  public var openedWall: Double
  public var startWall: Double?
  public var endWall: Double?
  public var elapsed: Double
  public var timer: Double
  public var distance: Double
  public var ascent: Double
  public var descent: Double
  public var points: Int
  /// The resume checkpoint: JSON of `ActiveSession`, written when the session changes and
  /// every `SessionEngine.checkpointInterval` points (see `ResumeCheckpoint`).
  public var snapshot: String
  /// `ResumeCheckpoint.format` of `snapshot` (migration v4; 1 for what earlier releases wrote).
  public var snapshotVersion: Int
  /// JSON of `SessionSummary`, once finalised.
  public var summary: String?
  /// The clock reading of the last commit, to measure the gap after a restart.
  public var clockEpoch: String
  public var clockMonotonic: Double
  public var clockWall: Double
  public var clockWallTrusted: Bool

  public var lastCommit: ClockStamp {
    ClockStamp(
      epoch: clockEpoch, moment: Moment(monotonic: clockMonotonic, wall: clockWall),
      wallTrusted: clockWallTrusted)
  }
}

extension SessionRecord {
  /// Read column by column, each as what it can be: a damaged row (a NULL where the schema
  /// says NOT NULL, from a flipped type byte; text in a number) must still be resumed, closed
  /// or exported, never an error that hides the session (`Decodable` threw, and the service
  /// started with nothing to resume and the session neither resumed nor closed). What cannot
  /// be read falls back to what the rest of the record gives: the figures to 0 (resume
  /// rebuilds them; `show` reads a finished session's summary), the clock reading to unknown
  /// (no gap is measured), the checkpoint to none (the session is rebuilt from its events and
  /// points), the activity and state to "" (the event log decides the state; an unknown
  /// activity closes the session as the compatibility rule says). The service's next
  /// checkpoint writes the state, figures and clock reading anew.
  public init(row: Row) throws {
    id = try row.decode(forColumn: "id")
    uuid = row.readable(String.self, "uuid") ?? ""
    activity = row.readable(String.self, "activity") ?? ""
    state = row.readable(String.self, "state") ?? ""
    startWall = row.measurement("start_wall")
    endWall = row.measurement("end_wall")
    clockWall = row.measurement("clock_wall") ?? .nan
    openedWall = row.measurement("opened_wall") ?? startWall ?? clockWall
    elapsed = row.measurement("elapsed") ?? 0
    timer = row.measurement("timer") ?? 0
    distance = row.measurement("distance") ?? 0
    ascent = row.measurement("ascent") ?? 0
    descent = row.measurement("descent") ?? 0
    points = row.count("points", in: 0...Int(Int32.max)) ?? 0
    snapshot = row.readable(String.self, "snapshot") ?? ""
    snapshotVersion = row.count("snapshot_version", in: 0...Int(Int32.max)) ?? 0
    summary = row.readable(String.self, "summary")
    clockEpoch = row.readable(String.self, "clock_epoch") ?? ""
    clockMonotonic = row.measurement("clock_monotonic") ?? .nan
    clockWallTrusted = row.readable(Bool.self, "clock_wall_trusted") ?? false
  }
}

/// A row of `event`: a transition, a lap, a recovery, a device or storage happening.
public struct EventRecord: Codable, Sendable, Hashable, FetchableRecord, MutablePersistableRecord, SnakeCaseColumns {
  public static let databaseTableName = "event"

  public var id: Int64?
  /// nil for events of the service itself (no session was live).
  public var sessionID: Int64?
  public var wall: Double
  public var monotonic: Double
  public var clockEpoch: String
  public var kind: String
  public var fromState: String?
  public var toState: String?
  public var cause: String?
  public var detail: String?
  public var value: Double?

  public mutating func didInsert(_ inserted: InsertionSuccess) {
    id = inserted.rowID
  }
}

extension EventRecord {
  /// Events whose time or kind cannot be read (a damaged record) are left out where events
  /// are read (`readableSQL`); the rest of a row is read as what it can be (see
  /// `SessionRecord.init(row:)`): an unreadable clock epoch is none, an unreadable state,
  /// cause, detail or value is none.
  public init(row: Row) throws {
    id = row.readable(Int64.self, "id")
    sessionID = row.readable(Int64.self, "session_id")
    wall = row.measurement("wall") ?? .nan
    monotonic = row.measurement("monotonic") ?? .nan
    clockEpoch = row.readable(String.self, "clock_epoch") ?? ""
    kind = row.readable(String.self, "kind") ?? ""
    fromState = row.readable(String.self, "from_state")
    toState = row.readable(String.self, "to_state")
    cause = row.readable(String.self, "cause")
    detail = row.readable(String.self, "detail")
    value = row.measurement("value")
  }

  /// The condition under which an event row can be placed and told: a time and a kind.
  static let readableSQL = ReadableColumns.condition(numbers: ["wall", "monotonic"], texts: ["kind"])
}

/// A row of `point`: one recorded second. A point whose place in the ride cannot be read
/// (`readableSQL`) is left out wherever points are read, and counted (`unreadableRows`).
public struct PointRecord: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord, SnakeCaseColumns {
  public static let databaseTableName = "point"

  public var sessionID: Int64
  public var seq: Int
  public var wall: Double
  public var monotonic: Double
  public var elapsed: Double
  public var timer: Double
  public var distance: Double
  public var lat: Double?
  public var lon: Double?
  public var altGPS: Double?
  public var altBaro: Double?
  public var speed: Double?
  public var hr: Int?
  public var cadence: Double?
  public var power: Int?
  public var temperature: Double?
  public var fixDim: Int?
  public var hError: Double?
  /// Pa, from the barometer (migration v3).
  public var pressure: Double?
  /// %RH, from a BME280 (migration v3).
  public var humidity: Double?
  /// m/s, from a wheel sensor (migration v6).
  public var wheelSpeed: Double?
  /// The road's feel from the inertial sensor (migration v13): RMS m/s² about the second's
  /// mean, and the peak, m/s² with gravity in it (`TrackPoint`).
  public var vibration: Double?
  public var peakAcceleration: Double?

}

/// A row of `export`: a session's file in one format, written into one destination.
public struct ExportRecord: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord, SnakeCaseColumns {
  public static let databaseTableName = "export"

  public var sessionID: Int64
  /// "fit", "gpx", "tcx", "csv".
  public var format: String
  /// The directory written into (its absolute path), or another copier's key for where it went.
  public var destination: String
  /// The file's name there.
  public var name: String
  public var bytes: Int64
  public var points: Int
  /// When it was written, Unix time.
  public var writtenWall: Double
  /// The session's newest event when the file was made (`WorkoutStore.latestEventID`): a later
  /// one makes the file stale. nil: a row of an earlier release, taken as current.
  public var sourceEventID: Int64?

  public init(
    sessionID: Int64, format: String, destination: String, name: String, bytes: Int64, points: Int,
    writtenWall: Double, sourceEventID: Int64? = nil
  ) {
    self.sourceEventID = sourceEventID
    self.sessionID = sessionID
    self.format = format
    self.destination = destination
    self.name = name
    self.bytes = bytes
    self.points = points
    self.writtenWall = writtenWall
  }
}

/// A row of `rr_interval`: one RR interval of a heart-rate strap.
public struct RRIntervalRecord: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord, SnakeCaseColumns {
  public static let databaseTableName = "rr_interval"

  public var sessionID: Int64
  /// The point of the second it arrived in.
  public var seq: Int
  /// Its place among that second's intervals, from 0, oldest first.
  public var position: Int
  /// 1/1024 s.
  public var interval: Int

  static let insertSQL = "INSERT OR REPLACE INTO rr_interval (session_id, seq, position, interval) VALUES (?, ?, ?, ?)"

  /// Milliseconds, as HRV tools show them.
  public var milliseconds: Double { Double(interval) * 1000 / 1024 }
}

/// A row of `battery_sample`: the board's battery at one moment of a session.
public struct BatterySampleRecord: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord, SnakeCaseColumns {
  public static let databaseTableName = "battery_sample"

  public var sessionID: Int64
  /// The service's run the monotonic time is of (`ClockStamp.epoch`).
  public var clockEpoch: String
  public var monotonic: Double
  public var wall: Double
  /// %, volts, amperes (negative while discharging), where the gauge gives them.
  public var level: Double?
  public var voltage: Double?
  public var current: Double?
  /// The power_supply's status (`BatteryReading.Status`).
  public var status: String

  static let insertSQL = """
    INSERT OR REPLACE INTO battery_sample (session_id, clock_epoch, monotonic, wall, level, voltage, current, status)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
    """

  /// The drain between the first and the last sample with a level on battery, % per hour (by
  /// wall time: a ride resumed after a restart spans boots); nil under ten minutes.
  public static func drainPerHour(_ samples: [BatterySampleRecord]) -> Double? {
    let levelled = samples.filter { $0.level != nil }
    guard let first = levelled.first, let last = levelled.last, let a = first.level, let b = last.level,
      last.wall - first.wall >= 600
    else { return nil }
    return (a - b) / ((last.wall - first.wall) / 3600)
  }

  /// `workoutctl show`'s line: "battery 80 % at the start, 62 % at the end, drain 12.0 %/h";
  /// nil when the board recorded no level.
  public static func summaryLine(_ samples: [BatterySampleRecord]) -> String? {
    let levels = samples.compactMap(\.level)
    guard let first = levels.first, let last = levels.last else { return nil }
    var text = "battery \(BatteryWatch.percent(first)) at the start, \(BatteryWatch.percent(last)) at the end"
    if let drain = drainPerHour(samples) {
      text += ", drain \(BatteryWatch.percent((drain * 10).rounded() / 10).dropLast(2)) %/h"
    }
    return text
  }
}

/// A row of `lap`.
public struct LapRecord: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord, SnakeCaseColumns {
  public static let databaseTableName = "lap"

  public var sessionID: Int64
  public var number: Int
  public var startWall: Double
  public var endWall: Double
  public var trigger: String
  public var elapsed: Double
  public var timer: Double
  public var distance: Double
  public var ascent: Double
  public var descent: Double
  public var avgSpeed: Double?
  public var maxSpeed: Double?
  public var avgHR: Double?
  public var maxHR: Double?
  public var avgCadence: Double?
  public var maxCadence: Double?
  public var avgPower: Double?
  public var maxPower: Double?

}

extension EventRecord {
  public init(sessionID: Int64?, event: SessionEvent, epoch: String) {
    self.init(
      id: nil, sessionID: sessionID, wall: event.moment.wall, monotonic: event.moment.monotonic,
      clockEpoch: epoch, kind: event.kind.rawValue, fromState: event.from?.rawValue,
      toState: event.to?.rawValue, cause: event.cause, detail: event.detail, value: event.value)
  }
}

extension PointRecord {
  init(sessionID: Int64, point: TrackPoint) {
    self.init(
      sessionID: sessionID, seq: point.sequence, wall: point.moment.wall,
      monotonic: point.moment.monotonic, elapsed: point.elapsed, timer: point.timer,
      distance: point.distance, lat: point.latitude, lon: point.longitude, altGPS: point.altitude,
      altBaro: point.barometricAltitude, speed: point.speed, hr: point.heartRate, cadence: point.cadence,
      power: point.power, temperature: point.temperature, fixDim: point.fixDimension,
      hError: point.horizontalError, pressure: point.pressure, humidity: point.humidity,
      wheelSpeed: point.wheelSpeed, vibration: point.vibration, peakAcceleration: point.peakAcceleration)
  }
}

extension PointRecord {
  /// The point as the engine made it.
  public var trackPoint: TrackPoint {
    var point = TrackPoint(
      sequence: seq, moment: Moment(monotonic: monotonic, wall: wall), elapsed: elapsed, timer: timer,
      distance: distance)
    point.latitude = lat
    point.longitude = lon
    point.altitude = altGPS
    point.barometricAltitude = altBaro
    point.pressure = pressure
    point.speed = speed
    point.heartRate = hr
    point.cadence = cadence
    point.power = power
    point.temperature = temperature
    point.humidity = humidity
    point.wheelSpeed = wheelSpeed
    point.vibration = vibration
    point.peakAcceleration = peakAcceleration
    point.fixDimension = fixDim
    point.horizontalError = hError
    return point
  }

  /// What a heart rate or a power can be: BLE's fields are 16 bits (uint16 bpm, sint16 W
  /// recorded from 0).
  static let counts = 0...65_535

  /// The condition under which a point row can be placed in its ride: its sequence, times and
  /// cumulative distance are numbers. A damaged record's NULL or text there (SQLite checks a
  /// page's structure, not its values) is a second that cannot be read: it is left out, and
  /// counted where the rider is told, rather than an error that loses the whole ride's resume
  /// and exports (a NULL) or a second placed in 1970 at distance 0 (text reads as 0).
  static let readableSQL = ReadableColumns.condition(
    integers: ["seq"], numbers: ["wall", "monotonic", "elapsed", "timer", "distance"])

  /// Read column by column rather than through `Decodable`: exports and the ride page read
  /// every point of a session, and the generic path (a coding key made from each column's name,
  /// for every column of every row) was most of their CPU and touched much more code. Errors
  /// are GRDB's, as with `Decodable`: a NULL where a value must be, a missing column.
  public init(row: Row) throws {
    sessionID = try row.decode(forColumn: "session_id")
    seq = try row.decode(forColumn: "seq")
    wall = try row.decode(forColumn: "wall")
    monotonic = try row.decode(forColumn: "monotonic")
    elapsed = try row.decode(forColumn: "elapsed")
    timer = try row.decode(forColumn: "timer")
    distance = try row.decode(forColumn: "distance")
    // What the sensors measured is read as what it can be: a value a damaged record holds
    // (text in a REAL column, a heart rate of 1e300) is no value, never an error that loses
    // the ride's export or a trap in the sums over it.
    lat = row.measurement("lat")
    lon = row.measurement("lon")
    altGPS = row.measurement("alt_gps")
    altBaro = row.measurement("alt_baro")
    speed = row.measurement("speed")
    hr = row.count("hr", in: Self.counts)
    cadence = row.measurement("cadence")
    power = row.count("power", in: Self.counts)
    temperature = row.measurement("temperature")
    fixDim = row.count("fix_dim", in: 0...3)
    hError = row.measurement("h_error")
    pressure = row.measurement("pressure")
    humidity = row.measurement("humidity")
    wheelSpeed = row.measurement("wheel_speed")
    vibration = row.measurement("vibration")
    peakAcceleration = row.measurement("peak_acceleration")
  }

  /// One prepared statement for every recorded second (GRDB's `insert` would build its
  /// arguments through a dictionary each time).
  static let insertSQL = """
    INSERT OR REPLACE INTO point (session_id, seq, wall, monotonic, elapsed, timer, distance, lat, lon, alt_gps,
      alt_baro, speed, hr, cadence, power, temperature, fix_dim, h_error, pressure, humidity, wheel_speed,
      vibration, peak_acceleration)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    """

  /// Binds the point to `insertSQL`'s 23 parameters with SQLite's own calls, for the
  /// service's one insert a recorded second: GRDB's `StatementArguments` (an array of
  /// `DatabaseValueConvertible` existentials, checked, then bound) cost more than the
  /// insert's own B-tree work. The statement must be reset (not mid-step).
  func bind(to statement: SQLiteStatement) {
    var index: Int32 = 0
    func real(_ value: Double?) {
      index += 1
      if let value { sqlite3_bind_double(statement, index, value) } else { sqlite3_bind_null(statement, index) }
    }
    func integer(_ value: Int?) {
      index += 1
      if let value { sqlite3_bind_int64(statement, index, Int64(value)) } else { sqlite3_bind_null(statement, index) }
    }
    index += 1
    sqlite3_bind_int64(statement, index, sessionID)
    integer(seq)
    real(wall)
    real(monotonic)
    real(elapsed)
    real(timer)
    real(distance)
    real(lat)
    real(lon)
    real(altGPS)
    real(altBaro)
    real(speed)
    integer(hr)
    real(cadence)
    integer(power)
    real(temperature)
    integer(fixDim)
    real(hError)
    real(pressure)
    real(humidity)
    real(wheelSpeed)
    real(vibration)
    real(peakAcceleration)
  }

  var insertArguments: StatementArguments {
    [
      sessionID, seq, wall, monotonic, elapsed, timer, distance, lat, lon, altGPS, altBaro, speed, hr, cadence,
      power, temperature, fixDim, hError, pressure, humidity, wheelSpeed, vibration, peakAcceleration,
    ]
  }
}

extension LapRecord {
  /// Laps whose number or times cannot be read (a damaged record) are left out where laps are
  /// read (`readableSQL`); the rest of a row is read as what it can be (see
  /// `SessionRecord.init(row:)`): an unreadable total is 0, an average or maximum none.
  public init(row: Row) throws {
    sessionID = try row.decode(forColumn: "session_id")
    number = try row.decode(forColumn: "number")
    startWall = try row.decode(forColumn: "start_wall")
    endWall = try row.decode(forColumn: "end_wall")
    trigger = row.readable(String.self, "trigger") ?? LapSummary.Trigger.lapPress.rawValue
    elapsed = row.measurement("elapsed") ?? 0
    timer = row.measurement("timer") ?? 0
    distance = row.measurement("distance") ?? 0
    ascent = row.measurement("ascent") ?? 0
    descent = row.measurement("descent") ?? 0
    avgSpeed = row.measurement("avg_speed")
    maxSpeed = row.measurement("max_speed")
    avgHR = row.measurement("avg_hr")
    maxHR = row.measurement("max_hr")
    avgCadence = row.measurement("avg_cadence")
    maxCadence = row.measurement("max_cadence")
    avgPower = row.measurement("avg_power")
    maxPower = row.measurement("max_power")
  }

  /// The condition under which a lap row can be placed: its number and times are numbers.
  static let readableSQL = ReadableColumns.condition(integers: ["number"], numbers: ["start_wall", "end_wall"])

  /// The lap's totals as far as the row keeps them (counts and sums of samples are not kept).
  var summary: LapSummary {
    var totals = IntervalTotals()
    totals.elapsed = elapsed
    totals.timer = timer
    totals.distance = distance
    totals.ascent = ascent
    totals.descent = descent
    return LapSummary(
      number: number, start: Moment(monotonic: .nan, wall: startWall), end: Moment(monotonic: .nan, wall: endWall),
      totals: totals, trigger: LapSummary.Trigger(rawValue: trigger) ?? .lapPress)
  }
}

extension LapRecord {
  init(sessionID: Int64, lap: LapSummary) {
    let totals = lap.totals
    self.init(
      sessionID: sessionID, number: lap.number, startWall: lap.start.wall, endWall: lap.end.wall,
      trigger: lap.trigger.rawValue, elapsed: totals.elapsed, timer: totals.timer,
      distance: totals.distance, ascent: totals.ascent, descent: totals.descent, avgSpeed: totals.averageSpeed,
      maxSpeed: totals.maxSpeed,
      avgHR: totals.heartRate.mean, maxHR: totals.heartRate.maximum, avgCadence: totals.cadence.mean,
      maxCadence: totals.cadence.maximum, avgPower: totals.power.mean, maxPower: totals.power.maximum)
  }
}

/// One sensor channel over a session's points: how many recorded seconds have a value, and
/// their mean and maximum (in the column's unit).
public struct ChannelTotals: Codable, Sendable, Hashable {
  /// The point column, by what it is.
  public enum Channel: String, Codable, Sendable, CaseIterable {
    case heartRate = "hr"
    case power
    case cadence
    case wheelSpeed = "wheel_speed"
    case gpsSpeed = "speed"
  }

  public var channel: Channel
  public var seconds: Int
  public var average: Double?
  public var maximum: Double?
}

/// A row of `web_client`: a phone paired with the web server (`workoutctl pair`).
public struct WebClientRecord: Codable, Sendable, Hashable, FetchableRecord, MutablePersistableRecord,
  SnakeCaseColumns
{
  public static let databaseTableName = "web_client"

  public var id: Int64?
  /// What the phone's browser called itself when it paired (its User-Agent, shortened).
  public var name: String
  /// SHA-256 of its token, hex.
  public var tokenHash: String
  public var pairedWall: Double
  public var lastSeenWall: Double?
  public var revokedWall: Double?

  public init(
    id: Int64? = nil, name: String, tokenHash: String, pairedWall: Double, lastSeenWall: Double? = nil,
    revokedWall: Double? = nil
  ) {
    self.id = id
    self.name = name
    self.tokenHash = tokenHash
    self.pairedWall = pairedWall
    self.lastSeenWall = lastSeenWall
    self.revokedWall = revokedWall
  }

  public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// The SQL condition under which a row of a damaged record can still be placed: each named
/// column holds what its type says. SQLite checks a page's structure, not its values, so a
/// flipped type byte can leave a NULL or text where the schema says a number.
enum ReadableColumns {
  static func condition(integers: [String] = [], numbers: [String] = [], texts: [String] = []) -> String {
    (integers.map { "typeof(\($0)) = 'integer'" } + numbers.map { "typeof(\($0)) IN ('real', 'integer')" }
      + texts.map { "typeof(\($0)) = 'text'" }).joined(separator: " AND ")
  }
}
