/// An HTTP-date (RFC 9110 §5.6.7) as seconds since the Unix epoch. A recipient must accept the
/// preferred IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") and the two obsolete forms, RFC 850's
/// ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime's ("Sun Nov  6 08:49:37 1994"); all are UTC.
public enum HTTPDate {
  static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

  /// The date's seconds since 1970-01-01T00:00:00Z, or nil if `text` is none of the three forms.
  public static func seconds(_ text: String) -> Int64? {
    let words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
    if words.count == 6, words[0].hasSuffix(","), words[5] == "GMT" {
      // IMF-fixdate: day-name "," SP day SP month SP year SP time SP "GMT"
      guard let day = Int(words[1]), let month = month(words[2]), let year = Int(words[3]), words[3].count == 4
      else { return nil }
      return epochSeconds(year: year, month: month, day: day, time: words[4])
    }
    if words.count == 4, words[0].hasSuffix(","), words[3] == "GMT" {
      // RFC 850: day-name "," SP day "-" month "-" 2DIGIT-year SP time SP "GMT"; a two-digit
      // year that looks more than 50 years ahead is in the past century (RFC 9110 §5.6.7).
      let parts = words[1].split(separator: "-").map(String.init)
      guard parts.count == 3, let day = Int(parts[0]), let month = month(parts[1]), parts[2].count == 2,
        let twoDigits = Int(parts[2])
      else { return nil }
      return epochSeconds(
        year: twoDigits < 70 ? 2000 + twoDigits : 1900 + twoDigits, month: month, day: day, time: words[2])
    }
    if words.count == 5, month(words[1]) != nil {
      // asctime: day-name SP month SP ( 2DIGIT / SP 1DIGIT ) SP time SP year
      guard let month = month(words[1]), let day = Int(words[2]), let year = Int(words[4]) else { return nil }
      return epochSeconds(year: year, month: month, day: day, time: words[3])
    }
    return nil
  }

  static func month(_ name: String) -> Int? {
    months.firstIndex(of: name).map { $0 + 1 }
  }

  /// Seconds since the epoch of a UTC civil date and "HH:MM:SS" (days from Howard Hinnant's
  /// proleptic Gregorian `days_from_civil`).
  static func epochSeconds(year: Int, month: Int, day: Int, time: String) -> Int64? {
    let clock = time.split(separator: ":").map { Int($0) }
    guard clock.count == 3, let hour = clock[0], let minute = clock[1], let second = clock[2],
      (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
    else { return nil }
    let shiftedYear = month <= 2 ? year - 1 : year
    let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
    let yearOfEra = shiftedYear - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    let days = era * 146_097 + dayOfEra - 719_468
    return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
  }
}
