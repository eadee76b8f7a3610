import SensorProtocols
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

extension FuzzChecks {
  /// gpsd's reports, the bytes the service reads most (a line or more a second, from a daemon
  /// and a receiver it does not control). The input is one line, read four ways:
  ///
  /// - as a report: the fast TPV decoder (keys matched as packed bytes, numbers read in place)
  ///   says what the generic member list says (the last string `class` names the report, the
  ///   last number of each TPV key is its value, the last string `time` its time), and the
  ///   DEVICE, VERSION and ERROR decoders answer for their class and no other;
  /// - what the core is given for a TPV (`GPSDMapping`) is a position in range with finite
  ///   values: an altitude only in 3D, a speed and errors not negative, a track in [0, 360);
  ///   the fix filter keeps only errors within its limit and altitudes and speeds a receiver can
  ///   measure, and words every refusal;
  /// - as a time (`GPSDJSON.parseTime`): accepted exactly when it has gpsd's shape with a real
  ///   date, and then the seconds glibc's `timegm` gives;
  /// - as a number (when it holds only a number's bytes, as the `lat` of a TPV): read as
  ///   `Double(String)` (strtod) reads it, to the bit, or refused as it refuses it.
  public static func gpsdJSON(_ bytes: [UInt8]) -> String? {
    if let failure = gpsdReport(bytes) { return failure }
    if let failure = gpsdTime(bytes) { return failure }
    return gpsdNumber(bytes)
  }

  static func gpsdReport(_ bytes: [UInt8]) -> String? {
    let (members, tpv, device, version, error) = bytes.withUnsafeBufferPointer {
      (
        GPSDJSON.members(of: $0), GPSDJSON.tpv(from: $0), GPSDJSON.device(from: $0),
        GPSDJSON.versionRelease(from: $0), GPSDJSON.errorMessage(from: $0)
      )
    }
    func lastString(_ key: String) -> String? {
      members?.last { if case .string = $0.value { $0.key == key } else { false } }.map {
        if case .string(let text) = $0.value { text } else { "" }
      }
    }
    func lastNumber(_ key: String) -> Double? {
      members?.last { if case .number = $0.value { $0.key == key } else { false } }.map {
        if case .number(let n) = $0.value { n } else { .nan }
      }
    }
    let reportClass = lastString("class")
    for (name, decoded) in [("TPV", tpv != nil), ("DEVICE", device != nil), ("VERSION", version != nil)]
    where decoded != (reportClass == name) {
      return "class \(reportClass ?? "none"): the \(name) decoder \(decoded ? "took" : "refused") it"
    }
    if (error != nil) != (reportClass == "ERROR") { return "class \(reportClass ?? "none"): the ERROR decoder" }
    guard let tpv else { return nil }

    let reals: [(String, KeyPath<TPVSnapshot, Double>)] = [
      ("ept", \.timeError), ("lat", \.latitude), ("lon", \.longitude), ("altHAE", \.altitudeHAE),
      ("altMSL", \.altitudeMSL), ("geoidSep", \.geoidSeparation), ("eph", \.eph), ("epx", \.epx), ("epy", \.epy),
      ("epv", \.epv), ("track", \.track), ("speed", \.speed), ("eps", \.eps), ("climb", \.climb),
    ]
    for (key, path) in reals {
      let expected = lastNumber(key) ?? .nan
      if !sameDouble(tpv[keyPath: path], expected) {
        return "TPV \(key): \(tpv[keyPath: path]), the member says \(expected)"
      }
    }
    // libgps's integers: a real that is not a whole number reads as 0.
    let integers: [(String, KeyPath<TPVSnapshot, Int>)] = [
      ("mode", \.mode), ("status", \.status), ("leapseconds", \.leapSeconds),
    ]
    for (key, path) in integers {
      let expected =
        lastNumber(key).flatMap { $0.isFinite && $0.rounded() == $0 && abs($0) < 1e15 ? Int($0) : nil } ?? 0
      if tpv[keyPath: path] != expected { return "TPV \(key): \(tpv[keyPath: path]), the member says \(expected)" }
    }
    var time = lastString("time").flatMap { GPSDJSON.parseTime($0) }
    if time?.seconds == 0 { time = nil }
    if tpv.time != time {
      return "TPV time: \(String(describing: tpv.time)), the member says \(String(describing: time))"
    }

    guard case .fix(let fix) = GPSDMapping.report(from: tpv) else { return nil }
    if !(fix.latitude.isFinite && abs(fix.latitude) <= 90 && fix.longitude.isFinite && abs(fix.longitude) <= 180) {
      return "fix position \(fix.latitude), \(fix.longitude)"
    }
    if let altitude = fix.altitude, !(altitude.isFinite && fix.dimension == .threeD) {
      return "fix altitude \(altitude) in a \(fix.dimension) fix"
    }
    if let speed = fix.speed, !(speed.isFinite && speed >= 0) { return "fix speed \(speed)" }
    if let track = fix.track, !(track >= 0 && track < 360) { return "fix track \(track)" }
    for (name, value) in [("horizontal", fix.horizontalError), ("vertical", fix.verticalError)] {
      if let value, !(value.isFinite && value >= 0) { return "fix \(name) error \(value)" }
    }
    if let seconds = fix.time, !seconds.isFinite { return "fix time \(seconds)" }
    // What the fix filter makes of it, and a refusal in the words the status shows a rider (an
    // error past Int's range once trapped there).
    let settings = FixQualitySettings()
    switch FixQualityFilter.judge(fix, settings: settings, lastAcceptedTime: nil) {
    case .accepted(let taken):
      if let error = taken.horizontalError, !(error <= settings.maxHorizontalError) {
        return "accepted a horizontal error of \(error) m"
      }
      if let altitude = taken.altitude, !FixQualityFilter.altitudes.contains(altitude) {
        return "accepted an altitude of \(altitude) m"
      }
      if let speed = taken.speed, !(speed <= FixQualityFilter.maximumSpeed) {
        return "accepted a speed of \(speed) m/s"
      }
    case .rejected(let why):
      if why.description.isEmpty { return "a refusal without words" }
    }
    return nil
  }

  /// Both NaN, or the same value with the same sign (-0 is not 0 to strtod).
  static func sameDouble(_ a: Double, _ b: Double) -> Bool {
    (a.isNaN && b.isNaN) || (a == b && a.sign == b.sign)
  }

  /// gpsd's time, "YYYY-MM-DDTHH:MM:SS[.fraction]Z" (at most 40 bytes), told apart here by its
  /// shape alone and dated by glibc.
  static func gpsdTime(_ bytes: [UInt8]) -> String? {
    let text = String(decoding: bytes, as: UTF8.self)
    guard Array(text.utf8) == bytes else { return nil }  // not UTF-8: parseTime reads Strings
    let parsed = GPSDJSON.parseTime(text)

    func digits(_ range: Range<Int>) -> Int? {
      guard range.upperBound <= bytes.count else { return nil }
      var value = 0
      for byte in bytes[range] {
        guard (48...57).contains(byte) else { return nil }
        value = value * 10 + Int(byte - 48)
      }
      return value
    }
    var expected: GPSDTime?
    if (20...40).contains(bytes.count), bytes.last == 90,
      bytes[4] == 45, bytes[7] == 45, bytes[10] == 84, bytes[13] == 58, bytes[16] == 58,
      let year = digits(0..<4), let month = digits(5..<7), let day = digits(8..<10), let hour = digits(11..<13),
      let minute = digits(14..<16), let second = digits(17..<19),
      bytes.count == 20 || (bytes[19] == 46 && bytes.count > 21 && digits(20..<bytes.count - 1) != nil),
      (1...12).contains(month), hour < 24, minute < 60, second <= 60
    {
      var fraction = Array(bytes[min(20, bytes.count - 1)..<(bytes.count - 1)].prefix(9))
      while fraction.count < 9 { fraction.append(48) }
      var date = tm()
      date.tm_year = Int32(year - 1900)
      date.tm_mon = Int32(month - 1)
      date.tm_mday = Int32(day)
      let midnight = timegm(&date)
      var back = tm()
      var stamp = midnight
      gmtime_r(&stamp, &back)
      // A day the month has (timegm carries the 30th of February into March).
      if back.tm_mday == Int32(day), back.tm_mon == Int32(month - 1) {
        expected = GPSDTime(
          seconds: Int64(midnight) + Int64(hour * 3_600 + minute * 60 + second),
          nanoseconds: Int64(fraction.reduce(0) { $0 * 10 + Int($1 - 48) }))
      }
    }
    if parsed != expected {
      return "time \(text): parsed \(String(describing: parsed)), glibc \(String(describing: expected))"
    }
    return nil
  }

  /// A number's bytes alone (digits, `.`, `e`, `E`, `+`, `-`; at most 64, the scanner's
  /// limit) as a TPV's latitude: read or refused as strtod reads or refuses them.
  static func gpsdNumber(_ bytes: [UInt8]) -> String? {
    let numeric = bytes.allSatisfy { (48...57).contains($0) || [46, 101, 69, 43, 45].contains($0) }
    guard numeric, (1...64).contains(bytes.count) else { return nil }
    let line = Array(#"{"class":"TPV","lat":"#.utf8) + bytes + [125]
    let read = line.withUnsafeBufferPointer { GPSDJSON.tpv(from: $0) }?.latitude
    let text = String(decoding: bytes, as: UTF8.self)
    let strtod = Double(text)
    switch (read, strtod) {
    case (nil, nil): return nil
    case (let read?, let strtod?) where sameDouble(read, strtod): return nil
    default: return "number \(text): read \(String(describing: read)), strtod \(String(describing: strtod))"
    }
  }
}
