import Foundation
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// A recorded ride for the simulated board (see board/sim/make-replay.py for how one is made):
///
///     # comment lines, among them "# start: 2011-09-25T13:00:21Z"
///     t,kind,lat,lon,alt,speed,hr,cadence,temperature,power
///     0,press,start
///     1,rec,43.713393,-79.3660663,75.2,5.888,161,71,21,245
///
/// `rec` rows are instants of the world, one per second of the original recording; `press`
/// rows are the rider's buttons (start, lap, stop). The power column came later: files with the
/// first header (no `power`, 9 fields a `rec` row) are read as they always were.
/// What a ride file's header says.
public struct ReplayRideHeader: Sendable, Hashable {
  /// UTC seconds since 1970 of t = 0.
  public var startWall: Double
  /// The header's "device totals" line, as `key=value` pairs (for comparisons in tests).
  public var deviceTotals: [String: String]
  /// Where it was read from.
  public var source: String
  /// Whether the rows carry the power column (the current header) or not (the first one).
  public var hasPowerColumn: Bool
}

/// One row of a ride: an instant of the world, or a rider's press.
public enum ReplayRow: Sendable, Hashable {
  case record(ReplayRide.Record)
  case press(ReplayRide.Press)

  public var time: Double {
    switch self {
    case .record(let record): record.time
    case .press(let press): press.time
    }
  }
}

/// Something that hands out a ride's rows in order.
public protocol ReplayRowSource {
  mutating func nextRow() -> ReplayRow?
}

/// A ride file read row by row, in constant memory however long the ride.
/// `@unchecked Sendable`: a reader (its FILE and position) belongs to one replay, which reads it
/// from one thread at a time: the loop at full speed, or the replay's own thread.
public final class ReplayRideReader: ReplayRowSource, @unchecked Sendable {
  public let header: ReplayRideHeader
  private let file: UnsafeMutablePointer<FILE>
  private var lineNumber = 0
  private var lastTime = -Double.infinity
  /// The first malformed row met by `nextRow()` (which then ends the ride).
  public private(set) var error: ReplayRide.FormatError?

  /// Opens `path` and reads its header (comment lines and the column header).
  public init(path: String) throws(ReplayRide.FormatError) {
    guard let file = fopen(path, "r") else {
      throw ReplayRide.FormatError(source: path, line: 0, problem: "cannot open: \(String(cString: strerror(errno)))")
    }
    self.file = file
    var startWall: Double?
    var totals: [String: String] = [:]
    var sawColumns = false
    var hasPowerColumn = false
    while !sawColumns {
      guard let line = Self.readLine(file) else { break }
      lineNumber += 1
      if line.isEmpty { continue }
      if line.hasPrefix("#") {
        if line.hasPrefix("# start: ") {
          let text = String(line.dropFirst("# start: ".count))
          guard let wall = Self.parseUTC(text) else {
            fclose(file)
            throw ReplayRide.FormatError(
              source: path, line: lineNumber, problem: "start time \"\(text)\" is not yyyy-MM-ddTHH:mm:ssZ")
          }
          startWall = wall
        } else if line.hasPrefix("# device totals: ") {
          for pair in line.dropFirst("# device totals: ".count).split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { totals[parts[0].trimmingCharacters(in: .whitespaces)] = String(parts[1]) }
          }
        }
        continue
      }
      switch line {
      case ReplayRide.columnHeader: hasPowerColumn = true
      case ReplayRide.firstColumnHeader: hasPowerColumn = false
      default:
        fclose(file)
        throw ReplayRide.FormatError(
          source: path, line: lineNumber,
          problem: "expected the column header \"\(ReplayRide.columnHeader)\", found \"\(line.prefix(60))\"")
      }
      sawColumns = true
    }
    guard sawColumns else {
      fclose(file)
      throw ReplayRide.FormatError(source: path, line: lineNumber, problem: "no column header")
    }
    guard let startWall else {
      fclose(file)
      throw ReplayRide.FormatError(source: path, line: lineNumber, problem: "no \"# start:\" line")
    }
    header = ReplayRideHeader(
      startWall: startWall, deviceTotals: totals, source: path, hasPowerColumn: hasPowerColumn)
  }

  deinit { fclose(file) }

  /// The next row; nil at the end (or, after a malformed row, with `error` set).
  public func nextRow() -> ReplayRow? {
    guard error == nil else { return nil }
    do {
      return try readRow()
    } catch {
      self.error = error
      return nil
    }
  }

  /// The next row, or the error of a malformed one.
  public func readRow() throws(ReplayRide.FormatError) -> ReplayRow? {
    while let line = Self.readLine(file) {
      lineNumber += 1
      if line.isEmpty || line.hasPrefix("#") { continue }
      let row = try ReplayRide.parseRow(
        line, source: header.source, line: lineNumber, hasPowerColumn: header.hasPowerColumn)
      if row.time < lastTime {
        throw ReplayRide.FormatError(
          source: header.source, line: lineNumber, problem: "time \(row.time) goes backwards")
      }
      lastTime = row.time
      return row
    }
    return nil
  }

  /// Reads the whole file once, to report a malformed row before the ride starts. Also says
  /// whether the rider ever presses start: a ride without one records nothing unless a session
  /// is started another way (`workoutctl start`, a button), which the caller should say.
  public static func validate(
    path: String
  ) throws(ReplayRide.FormatError) -> (header: ReplayRideHeader, records: Int, pressesStart: Bool) {
    let reader = try ReplayRideReader(path: path)
    var records = 0
    var pressesStart = false
    while let row = try reader.readRow() {
      switch row {
      case .record: records += 1
      case .press(let press): pressesStart = pressesStart || press.request == .start
      }
    }
    guard records > 0 else {
      throw ReplayRide.FormatError(source: path, line: reader.lineNumber, problem: "no records")
    }
    return (reader.header, records, pressesStart)
  }

  private static func readLine(_ file: UnsafeMutablePointer<FILE>) -> String? {
    var buffer: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(buffer) }
    let count = getline(&buffer, &capacity, file)
    guard count >= 0, let buffer else { return nil }
    var line = String(cString: buffer)
    // By scalars: "\r\n" is one Character in Swift, so `hasSuffix("\n")` misses a CRLF line end
    // (a ride file saved on Windows) and its header would not match.
    while let last = line.unicodeScalars.last, last == "\n" || last == "\r" {
      line.unicodeScalars.removeLast()
    }
    return line
  }

  /// An RFC 3339 date-time without fractional seconds (`2024-05-01T07:30:00Z`, or with an
  /// offset such as `+02:00`), as seconds since 1970. Parsed here, not by Foundation's
  /// ISO8601DateFormatter: that one loads ICU's calendar and time-zone data, several MiB of the
  /// simulated board's resident memory for one date.
  static func parseUTC(_ text: String) -> Double? {
    let bytes = Array(text.utf8)
    guard bytes.count == 20 || bytes.count == 25 else { return nil }
    func digits(_ start: Int, _ count: Int) -> Int? {
      var value = 0
      for byte in bytes[start..<start + count] {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        value = value * 10 + Int(byte - UInt8(ascii: "0"))
      }
      return value
    }
    func separator(_ index: Int, _ characters: String) -> Bool {
      characters.utf8.contains(bytes[index])
    }
    guard separator(4, "-"), separator(7, "-"), separator(10, "Tt"), separator(13, ":"), separator(16, ":"),
      let year = digits(0, 4), let month = digits(5, 2), let day = digits(8, 2),
      let hour = digits(11, 2), let minute = digits(14, 2), let second = digits(17, 2),
      (1...12).contains(month), (1...CivilCalendar.daysIn(month: Int64(month), year: Int64(year))).contains(Int64(day)),
      hour < 24, minute < 60, second < 60
    else { return nil }
    var offset = 0
    if bytes.count == 20 {
      guard separator(19, "Zz") else { return nil }
    } else {
      guard separator(19, "+-"), separator(22, ":"), let hours = digits(20, 2), let minutes = digits(23, 2),
        hours < 24, minutes < 60
      else { return nil }
      offset = (hours * 3600 + minutes * 60) * (bytes[19] == UInt8(ascii: "-") ? -1 : 1)
    }
    let days = Int(CivilCalendar.daysSince1970(year: Int64(year), month: Int64(month), day: Int64(day)))
    return Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
  }
}

/// A whole ride in memory (for tests and tools; the simulated board streams with
/// `ReplayRideReader`).
public struct ReplayRide: Sendable {
  public struct Record: Sendable, Hashable {
    public var time: Double
    public var latitude: Double?
    public var longitude: Double?
    public var altitude: Double?
    public var speed: Double?
    public var heartRate: Int?
    public var cadence: Double?
    public var temperature: Double?
    /// W, from a power meter.
    public var power: Int? = nil
  }

  /// The columns of a ride file; `firstColumnHeader` is the one before the power column.
  public static let columnHeader = "t,kind,lat,lon,alt,speed,hr,cadence,temperature,power"
  public static let firstColumnHeader = "t,kind,lat,lon,alt,speed,hr,cadence,temperature"

  public struct Press: Sendable, Hashable {
    public var time: Double
    public var request: SessionRequest
  }

  public var header: ReplayRideHeader
  public var records: [Record]
  public var presses: [Press]

  public var startWall: Double { header.startWall }
  public var deviceTotals: [String: String] { header.deviceTotals }
  public var source: String { header.source }

  /// A malformed ride file, with where and what.
  public struct FormatError: Error, Sendable, CustomStringConvertible {
    public var source: String
    public var line: Int
    public var problem: String
    public var description: String { "\(source):\(line): \(problem)" }
  }

  public static func load(path: String) throws(FormatError) -> ReplayRide {
    let reader = try ReplayRideReader(path: path)
    var records: [Record] = []
    var presses: [Press] = []
    while let row = try reader.readRow() {
      switch row {
      case .record(let record): records.append(record)
      case .press(let press): presses.append(press)
      }
    }
    guard !records.isEmpty else { throw FormatError(source: path, line: 0, problem: "no records") }
    return ReplayRide(header: reader.header, records: records, presses: presses)
  }

  /// The rows in time order (presses before records at the same time, as in the files).
  public var rows: Rows { Rows(records: records, presses: presses) }

  public struct Rows: ReplayRowSource, Sendable {
    let records: [Record]
    let presses: [Press]
    var recordIndex = 0
    var pressIndex = 0

    public mutating func nextRow() -> ReplayRow? {
      let record = recordIndex < records.count ? records[recordIndex] : nil
      let press = pressIndex < presses.count ? presses[pressIndex] : nil
      if let press, record == nil || press.time <= record!.time {
        pressIndex += 1
        return .press(press)
      }
      guard let record else { return nil }
      recordIndex += 1
      return .record(record)
    }
  }

  /// Parses one data row (`t,kind,...`).
  static func parseRow(
    _ line: String, source: String, line lineNumber: Int, hasPowerColumn: Bool = true
  ) throws(FormatError) -> ReplayRow {
    func problem(_ text: String) -> FormatError { FormatError(source: source, line: lineNumber, problem: text) }
    let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    guard fields.count >= 2, let time = Double(fields[0]), time.isFinite else {
      throw problem("a row must start with a time in seconds")
    }
    switch fields[1] {
    case "press":
      guard fields.count >= 3, let request = SessionRequest(rawValue: fields[2]) else {
        throw problem("a press names start, pause, resume, lap or stop")
      }
      return .press(Press(time: time, request: request))
    case "rec":
      let fieldCount = hasPowerColumn ? 10 : 9
      guard fields.count == fieldCount else {
        throw problem("a rec row has \(fieldCount) fields, this one has \(fields.count)")
      }
      func number(_ index: Int, _ name: String, _ range: ClosedRange<Double>) throws(FormatError) -> Double? {
        let text = fields[index]
        if text.isEmpty { return nil }
        guard let value = Double(text), range.contains(value) else {
          throw problem("\(name) \"\(text)\" is not a number in \(range)")
        }
        return value
      }
      let record = Record(
        time: time, latitude: try number(2, "lat", -90...90), longitude: try number(3, "lon", -180...180),
        altitude: try number(4, "alt", -500...9000), speed: try number(5, "speed", 0...200),
        heartRate: try number(6, "hr", 0...255).map { Int($0) }, cadence: try number(7, "cadence", 0...300),
        temperature: try number(8, "temperature", -60...80),
        // 3,000 W is past any rider's sprint; a meter's glitch above it is a malformed row
        power: hasPowerColumn ? try number(9, "power", 0...3000).map { Int($0.rounded()) } : nil)
      if (record.latitude == nil) != (record.longitude == nil) { throw problem("lat and lon come together") }
      return .record(record)
    default:
      throw problem("unknown row kind \"\(fields[1])\"")
    }
  }
}
