#if canImport(Glibc)
  import Glibc
#endif

/// Times as the text formats write them.
public enum ExportTime {
  /// "2023-11-14T22:13:20Z", or with `milliseconds` "2023-11-14T22:13:20.250Z": ISO 8601 in UTC
  /// (the `Z` form GPX 1.1's xsd:dateTime and TCX take), rounded down to the unit shown.
  public static func iso8601(_ wall: Double, milliseconds: Bool = false) -> String {
    let time = UTCTime(wall: wall, rounding: .down)
    return time.dateTime + (milliseconds ? "." + zeroPadded(time.millisecond, 3) : "") + "Z"
  }
}

/// A Unix time's calendar in UTC, to the millisecond: what every export's names and times are
/// written from (one `gmtime_r`, hand-formatted digits: the same in any locale).
struct UTCTime {
  var year: Int
  var month: Int
  var day: Int
  var hour: Int
  var minute: Int
  var second: Int
  var millisecond: Int

  /// Milliseconds since 1970, either sign (before 1970 the fraction still counts up: -500 ms is
  /// 23:59:59.500 of 1969-12-31).
  init(milliseconds: Int64) {
    var (seconds, fraction) = milliseconds.quotientAndRemainder(dividingBy: 1000)
    if fraction < 0 {
      seconds -= 1
      fraction += 1000
    }
    var time = time_t(seconds)
    var parts = tm()
    gmtime_r(&time, &parts)
    year = Int(parts.tm_year) + 1900
    month = Int(parts.tm_mon) + 1
    day = Int(parts.tm_mday)
    hour = Int(parts.tm_hour)
    minute = Int(parts.tm_min)
    second = Int(parts.tm_sec)
    millisecond = Int(fraction)
  }

  init(seconds: Int64) { self.init(milliseconds: seconds * 1000) }

  /// The first and last instants whose year xsd:dateTime's four digits write, Unix seconds.
  static let writable = -62_135_596_800.0...253_402_300_799.999

  /// `wall` Unix seconds to the millisecond (`rounding`), held to `writable`: a time no clock
  /// gives, which only a damaged record holds (1e300, -inf; `Int64(_:)` would trap on it), is
  /// written as year 0001 or 9999 — visibly wrong, and still a valid time.
  init(wall: Double, rounding: FloatingPointRoundingRule) {
    let held =
      wall.isNaN ? Self.writable.lowerBound : min(max(wall, Self.writable.lowerBound), Self.writable.upperBound)
    self.init(milliseconds: Int64((held * 1000).rounded(rounding)))
  }

  /// "2023-11-14T22:13:23": ISO 8601's extended form, without zone or fraction.
  var dateTime: String {
    zeroPadded(year, 4) + "-" + zeroPadded(month, 2) + "-" + zeroPadded(day, 2) + "T" + zeroPadded(hour, 2) + ":"
      + zeroPadded(minute, 2) + ":" + zeroPadded(second, 2)
  }

  /// "20231114-221323": the basic form, for file names.
  var compact: String {
    zeroPadded(year, 4) + zeroPadded(month, 2) + zeroPadded(day, 2) + "-" + zeroPadded(hour, 2)
      + zeroPadded(minute, 2) + zeroPadded(second, 2)
  }
}

/// `value` with leading zeros to `count` digits.
func zeroPadded(_ value: Int, _ count: Int) -> String {
  let text = String(value)
  return String(repeating: "0", count: max(0, count - text.count)) + text
}
