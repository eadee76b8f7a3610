import WorkoutCore

/// gpsd's times and numbers, read from a line's bytes in place (`GPSDJSON`'s scanner and TPV
/// reader use these).
extension GPSDJSON {
  /// Parses gpsd's ISO 8601 UTC time, "2019-04-06T23:57:24.020Z" (fraction optional, up to
  /// nanoseconds), into a `GPSDTime`; nil unless the text is exactly that shape with fields in
  /// range. Seconds up to 60 are accepted (a leap second).
  public static func parseTime(_ text: some StringProtocol) -> GPSDTime? {
    Array(text.utf8).withUnsafeBufferPointer { parseTime($0) }
  }

  /// As `parseTime(_:)`, over the text's bytes.
  static func parseTime(_ b: UnsafeBufferPointer<UInt8>) -> GPSDTime? {
    guard b.count >= 20, b.count <= 40 else { return nil }
    func digits(_ range: Range<Int>) -> Int64? {
      var value: Int64 = 0
      for i in range {
        let c = b[i]
        guard c >= 48, c <= 57 else { return nil }
        value = value * 10 + Int64(c - 48)
      }
      return value
    }
    guard b[4] == 45, b[7] == 45, b[10] == 84, b[13] == 58, b[16] == 58,
      let year = digits(0..<4), let month = digits(5..<7), let day = digits(8..<10),
      let hour = digits(11..<13), let minute = digits(14..<16), let second = digits(17..<19)
    else { return nil }
    var index = 19
    var nanoseconds: Int64 = 0
    if b[index] == 46 {  // "."
      index += 1
      var scale: Int64 = 100_000_000
      let start = index
      while index < b.count, b[index] >= 48, b[index] <= 57 {
        if scale > 0 {
          nanoseconds += Int64(b[index] - 48) * scale
          scale /= 10
        }
        index += 1
      }
      guard index > start else { return nil }
    }
    guard index == b.count - 1, b[index] == 90 else { return nil }  // "Z"
    guard (1...12).contains(month), day >= 1, day <= CivilCalendar.daysIn(month: month, year: year),
      hour < 24, minute < 60, second <= 60
    else { return nil }
    let days = CivilCalendar.daysSince1970(year: year, month: month, day: day)
    return GPSDTime(
      seconds: days * 86_400 + hour * 3_600 + minute * 60 + second, nanoseconds: nanoseconds)
  }

  static func integer(_ value: Double) -> Int? {
    guard value.isFinite, value.rounded() == value, abs(value) < 1e15 else { return nil }
    return Int(value)
  }

  /// Powers of ten a Double holds exactly (10^22 is the largest: 5^22 < 2^53).
  static let exactPowersOfTen: [Double] = (0...22).map { exponent in
    (0..<exponent).reduce(1.0) { value, _ in value * 10 }
  }

  /// A plain decimal number (`-?digits[.digits][e[+-]digits]`) whose digits make an integer of
  /// at most 2^53 and whose power of ten is within ±22, read without `strtod`: the integer and
  /// the power are both exact Doubles, so one IEEE multiplication or division rounds the
  /// quotient correctly, as `strtod` does (Clinger, "How to Read Floating Point Numbers
  /// Accurately", 1990: the fast path). gpsd writes its reals this way ("48.149963333",
  /// "0.005"). nil for anything else, which `Double(String)` then reads.
  static func exactDecimal(_ b: UnsafeBufferPointer<UInt8>) -> Double? {
    guard let (value, end) = exactDecimalPrefix(b, from: 0), end == b.count else { return nil }
    return value
  }

  /// The number `exactDecimal` reads at the start of `b[start...]`, and where it ends, in one
  /// pass over its bytes (the scanner's numbers are read this way, not found first and read
  /// after); nil when that prefix is not one of its numbers.
  @inline(__always)
  static func exactDecimalPrefix(_ b: UnsafeBufferPointer<UInt8>, from start: Int) -> (Double, Int)? {
    var i = start
    let negative = i < b.count && b[i] == 45
    if negative { i += 1 }
    var mantissa: UInt64 = 0
    var significant = 0
    var exponent = 0
    var sawDigit = false
    while i < b.count, b[i] >= 48, b[i] <= 57 {
      guard significant < 17 else { return nil }
      mantissa = mantissa * 10 + UInt64(b[i] - 48)
      if mantissa != 0 { significant += 1 }
      sawDigit = true
      i += 1
    }
    if i < b.count, b[i] == 46 {  // .
      i += 1
      while i < b.count, b[i] >= 48, b[i] <= 57 {
        guard significant < 17 else { return nil }
        mantissa = mantissa * 10 + UInt64(b[i] - 48)
        if mantissa != 0 { significant += 1 }
        exponent -= 1
        sawDigit = true
        i += 1
      }
    }
    guard sawDigit else { return nil }
    if i < b.count, b[i] == 101 || b[i] == 69 {  // e E
      i += 1
      var negativeExponent = false
      if i < b.count, b[i] == 43 || b[i] == 45 {
        negativeExponent = b[i] == 45
        i += 1
      }
      var written = 0
      var digits = 0
      while i < b.count, b[i] >= 48, b[i] <= 57 {
        guard digits < 4 else { return nil }
        written = written * 10 + Int(b[i] - 48)
        digits += 1
        i += 1
      }
      guard digits > 0 else { return nil }
      exponent += negativeExponent ? -written : written
    }
    guard mantissa <= 1 << 53 else { return nil }
    if mantissa == 0 { return (negative ? -0.0 : 0.0, i) }
    guard exponent >= -22, exponent <= 22 else { return nil }
    let value =
      exponent < 0
      ? Double(mantissa) / exactPowersOfTen[-exponent] : Double(mantissa) * exactPowersOfTen[exponent]
    return (negative ? -value : value, i)
  }
}
