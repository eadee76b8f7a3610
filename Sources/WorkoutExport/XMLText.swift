/// The text the XML encoders (GPX, TCX) write, formatted by hand: the same value always gives
/// the same characters, whatever the locale (a decimal point is always '.').
enum XMLText {
  /// `text` with the five characters XML reserves replaced by their entities, so it can stand
  /// in element content and in double-quoted attributes alike.
  static func escaped(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    for character in text.unicodeScalars {
      switch character {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&apos;"
      // XML 1.0 allows no control characters but tab, newline and carriage return: dropped.
      case "\u{0}"..."\u{8}", "\u{B}", "\u{C}", "\u{E}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}": continue
      default: out.unicodeScalars.append(character)
      }
    }
    return out
  }

  /// `value` with exactly `places` decimals, rounded half away from zero ("-0.0" never: a
  /// value that rounds to zero is "0.0"); nil when it is not finite or too large to format.
  static func decimal(_ value: Double, places: Int) -> String? {
    var scale = 1.0
    for _ in 0..<places { scale *= 10 }
    let scaled = (value.magnitude * scale).rounded()
    guard scaled.isFinite, scaled < 9e15 else { return nil }
    let units = Int64(scaled)
    let divisor = Int64(scale)
    let whole = String(units / divisor)
    let sign = value < 0 && units != 0 ? "-" : ""
    guard places > 0 else { return sign + whole }
    let fraction = String(units % divisor)
    return sign + whole + "." + String(repeating: "0", count: places - fraction.count) + fraction
  }

  /// `value` rounded to the nearest integer, when that lies in `range`.
  static func integer(_ value: Double, in range: ClosedRange<Int>) -> String? {
    guard value.isFinite, value.magnitude < 1e9 else { return nil }
    let rounded = Int(value.rounded())
    return range.contains(rounded) ? String(rounded) : nil
  }

  /// XML Schema's dateTime of a Unix time in UTC: "2023-11-14T22:13:23Z", with milliseconds
  /// ("…23.250Z") only when the time, rounded to the millisecond, has a fraction of a second.
  static func time(_ wall: Double) -> String {
    let time = UTCTime(wall: wall, rounding: .toNearestOrAwayFromZero)
    return time.dateTime + (time.millisecond != 0 ? "." + zeroPadded(time.millisecond, 3) : "") + "Z"
  }
}

/// Which running stretch of the timer a point belongs to: the stretches begin at the timer's
/// starts, so a stretch holds the points from one start until the next, including those of
/// the pause that ends it. Points come in time order, so a cursor over the starts suffices.
struct RunningStretches {
  private let starts: [Double]
  private var started = 0

  init(_ timerEvents: [ExportedSession.TimerEvent]) {
    starts = timerEvents.filter(\.start).map(\.wall)
  }

  /// The stretch of a point at `wall` (0 for the first stretch, and for points before it).
  mutating func stretch(at wall: Double) -> Int {
    while started < starts.count, starts[started] <= wall { started += 1 }
    return max(0, started - 1)
  }
}
