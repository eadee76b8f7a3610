import Testing
import WorkoutTestSupport

@testable import SensorProtocols

@Suite("gpsd JSON decoding")
struct GPSDJSONTests {
  @Test("a 3D TPV from gp-320fw decodes like libgps: values, NaN for absent, the set mask")
  func decodesTPV() throws {
    let line =
      #"{"class":"TPV","mode":3,"time":"2019-04-06T23:57:24.020Z","ept":0.005,"lat":48.149963333,"lon":11.584666667,"altHAE":510.6000,"altMSL":464.4000,"alt":464.4000,"epv":48.300,"track":0.0000,"magtrack":357.0000,"magvar":3.0,"speed":0.000,"geoidSep":46.200,"eph":26.600,"sep":49.400}"#
    let tpv = try #require(GPSDJSON.tpv(from: line))
    #expect(tpv.mode == 3)
    #expect(tpv.time == GPSDTime(seconds: 1_554_595_044, nanoseconds: 20_000_000))
    #expect(tpv.latitude == 48.149963333)
    #expect(tpv.longitude == 11.584666667)
    #expect(tpv.altitudeMSL == 464.4)
    #expect(tpv.altitudeHAE == 510.6)
    #expect(tpv.geoidSeparation == 46.2)
    #expect(tpv.eph == 26.6)
    #expect(tpv.epv == 48.3)
    #expect(tpv.speed == 0)
    #expect(tpv.track == 0)
    #expect(tpv.epx.isNaN && tpv.epy.isNaN && tpv.climb.isNaN && tpv.eps.isNaN)
    #expect(
      tpv.fields == [
        .status, .mode, .time, .timeError, .position, .altitude, .verticalError, .track, .speed,
      ])
  }

  @Test("a TPV without a mode or time has neither in its mask")
  func emptyTPV() throws {
    let tpv = try #require(GPSDJSON.tpv(from: #"{"class":"TPV","device":"/dev/pts/1"}"#))
    #expect(tpv.fields == [.status])
    #expect(tpv.mode == 0)
    #expect(tpv.time == nil)
    #expect(tpv.latitude.isNaN)
  }

  @Test("other classes are not TPVs; the class is read from any report")
  func classes() {
    let sky = #"{"class":"SKY","satellites":[{"PRN":3,"el":12.0,"used":true},{"PRN":9}],"hdop":1.2}"#
    #expect(GPSDJSON.tpv(from: sky) == nil)
    #expect(GPSDJSON.reportClass(of: sky) == "SKY")
    #expect(GPSDJSON.reportClass(of: #"{"class":"WATCH","enable":true,"nested":{"a":[1,{"b":"}"}]}}"#) == "WATCH")
    #expect(GPSDJSON.reportClass(of: "$GPGGA,123519,4807.038,N*47") == nil)
  }

  @Test("DEVICE reports say whether gpsd opened or closed the receiver")
  func deviceReports() throws {
    let closed = try #require(GPSDJSON.device(from: #"{"class":"DEVICE","path":"/dev/pts/1","activated":0}"#))
    #expect(closed == GPSDJSON.DeviceReport(path: "/dev/pts/1", activated: false))
    let opened = try #require(
      GPSDJSON.device(
        from:
          #"{"class":"DEVICE","path":"/dev/pts/1","driver":"NMEA0183","activated":"2026-11-22T05:27:07.691Z","native":0,"bps":4800,"cycle":1.00}"#
      ))
    #expect(opened.activated == true)
    #expect(GPSDJSON.device(from: #"{"class":"TPV","mode":1}"#) == nil)
  }

  @Test(
    "ISO times: calendar arithmetic, fractions, leap days",
    arguments: [
      ("1970-01-01T00:00:00Z", 0 as Int64, 0 as Int64),
      ("2019-04-06T23:57:24.020Z", 1_554_595_044, 20_000_000),
      ("1999-08-22T00:02:31.420Z", 935_280_151, 420_000_000),
      ("2000-02-29T12:00:00.000Z", 951_825_600, 0),
      ("2038-01-19T03:14:08Z", 2_147_483_648, 0),
      ("2100-03-01T00:00:00.123456789Z", 4_107_542_400, 123_456_789),
    ])
  func times(text: String, seconds: Int64, nanoseconds: Int64) {
    #expect(GPSDJSON.parseTime(text) == GPSDTime(seconds: seconds, nanoseconds: nanoseconds))
  }

  @Test(
    "malformed times are refused",
    arguments: [
      "2019-13-01T00:00:00Z", "2019-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "2019-04-06T24:00:00Z",
      "2019-04-06T23:57:24", "2019-04-06 23:57:24Z", "2019-04-06T23:57:24.Z", "20x9-04-06T23:57:24Z",
      "", "Z", "2019-04-06T23:57:24.020ZZ",
    ])
  func badTimes(text: String) {
    #expect(GPSDJSON.parseTime(text) == nil)
  }

  @Test("malformed JSON is refused whole")
  func malformed() {
    for line in [
      #"{"class":"TPV","mode":3,"lat":48.1"#, #"{"class":"TPV","mode":}"#, #"{"class":"TPV" "mode":3}"#,
      #"{"class":"TPV","lat":4-8}"#, #"{"class":"TPV","mode":3}}"#, #"{"class":"TPV","s":"\q"}"#,
      #"{"class":"TPV","s":"\u+06c"}"#, #"{"class":"TPV","s":"\u-000"}"#, #"{"class":"TPV","s":"\u06"}"#,
      #"{"class":"TPV","s":"\u 06c"}"#,
      #"["class","TPV"]"#, "", "{", String(repeating: "[", count: 100),
      "{\"a\":" + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}",
    ] {
      #expect(GPSDJSON.tpv(from: line) == nil, "\(line)")
    }
  }

  @Test("no byte sequence traps: every prefix and many corruptions of real reports")
  func fuzz() throws {
    var rng = SeededRandom(seed: 0x6770_7364)
    var lines: [String] = []
    for name in ["bt451", "triton400", "quectel-eg25-g"] {
      lines += try GPSDCaptures.lines(name + ".log.chk").filter { $0.hasPrefix("{") }.prefix(40).map(String.init)
    }
    var decoded = 0
    for line in lines {
      let bytes = Array(line.utf8)
      for cut in 0..<bytes.count {
        let prefix = String(decoding: bytes[..<cut], as: UTF8.self)
        if GPSDJSON.tpv(from: prefix) != nil { decoded += 1 }
        _ = GPSDJSON.device(from: prefix)
      }
      for _ in 0..<20 {
        var mutated = bytes
        for _ in 0..<(1 + Int(rng.next() % 4)) {
          mutated[Int(rng.next() % UInt64(mutated.count))] = UInt8(truncatingIfNeeded: rng.next())
        }
        mutated.withUnsafeBufferPointer { buffer in
          _ = GPSDJSON.members(of: buffer)
        }
      }
    }
    // A strict prefix of a one-object line is never a whole object.
    #expect(decoded == 0)
  }

  /// The TPV decoder as it was written first, over `members(of:)`: every member as a String
  /// key and a value, matched by String comparison. The decoder the service runs matches keys
  /// on bytes without making Strings; it must give exactly this. (Numbers are the same
  /// scanner's in both: `exactDecimals` holds them to `Double(String)`.)
  static func referenceTPV(_ line: some StringProtocol) -> TPVSnapshot? {
    guard let members = GPSDJSON.members(of: line) else { return nil }
    var isTPV = false
    var snapshot = TPVSnapshot()
    var otherAltitude = false
    func integer(_ value: Double) -> Int? {
      guard value.isFinite, value.rounded() == value, abs(value) < 1e15 else { return nil }
      return Int(value)
    }
    for (key, value) in members {
      switch (key, value) {
      case ("class", .string(let name)): isTPV = name == "TPV"
      case ("time", .string(let text)): snapshot.time = GPSDJSON.parseTime(text)
      case ("mode", .number(let n)): snapshot.mode = integer(n) ?? 0
      case ("status", .number(let n)): snapshot.status = integer(n) ?? 0
      case ("leapseconds", .number(let n)): snapshot.leapSeconds = integer(n) ?? 0
      case ("ept", .number(let n)): snapshot.timeError = n
      case ("lat", .number(let n)): snapshot.latitude = n
      case ("lon", .number(let n)): snapshot.longitude = n
      case ("altHAE", .number(let n)): snapshot.altitudeHAE = n
      case ("altMSL", .number(let n)): snapshot.altitudeMSL = n
      case ("geoidSep", .number(let n)): snapshot.geoidSeparation = n
      case ("eph", .number(let n)): snapshot.eph = n
      case ("epx", .number(let n)): snapshot.epx = n
      case ("epy", .number(let n)): snapshot.epy = n
      case ("epv", .number(let n)): snapshot.epv = n
      case ("track", .number(let n)): snapshot.track = n
      case ("speed", .number(let n)): snapshot.speed = n
      case ("eps", .number(let n)): snapshot.eps = n
      case ("climb", .number(let n)): snapshot.climb = n
      case ("alt", .number(let n)), ("depth", .number(let n)): if n.isFinite { otherAltitude = true }
      default: break
      }
    }
    guard isTPV else { return nil }
    return GPSDJSON.completed(snapshot, otherAltitude: otherAltitude)
  }

  @Test("TPVs decode as the first decoder read them: every capture line and thousands of corruptions")
  func fastTPVMatchesReference() throws {
    var rng = SeededRandom(seed: 0x7470_7666)
    var compared = 0
    for name in GPSDCaptures.names {
      let lines = try GPSDCaptures.lines(name + ".log.chk").filter { $0.hasPrefix("{") }
      for line in lines {
        #expect(GPSDJSON.tpv(from: line) == Self.referenceTPV(line), "\(name): \(line)")
        compared += 1
      }
      // Corrupted TPVs: a byte changed, or a digit, a quote, a brace, a backslash put in.
      for line in lines.filter({ $0.hasPrefix(#"{"class":"TPV""#) }).prefix(10) {
        let bytes = Array(line.utf8)
        for _ in 0..<50 {
          var mutated = bytes
          let at = Int(rng.next() % UInt64(mutated.count))
          let pick: [UInt8] = [
            48 + UInt8(rng.next() % 10), 34, 125, 92, 46, 101, 45, 44, 32, UInt8(truncatingIfNeeded: rng.next()),
          ]
          mutated[at] = pick[Int(rng.next() % UInt64(pick.count))]
          let text = String(decoding: mutated, as: UTF8.self)
          guard Array(text.utf8) == mutated else { continue }  // not UTF-8: the reference reads Strings
          #expect(GPSDJSON.tpv(from: text) == Self.referenceTPV(text), "\(text)")
          compared += 1
        }
      }
    }
    #expect(compared > 5_000)
  }

  @Test("each TPV member's key is its name packed, and no other key is one of them")
  func tpvMemberKeysArePackedNames() {
    func member(_ key: [UInt8]) -> GPSDJSON.TPVMember? {
      key.withUnsafeBufferPointer { GPSDJSON.TPVMember($0) }
    }
    for name in GPSDJSON.TPVMember.allCases {
      let key = Array("\(name)".utf8)
      #expect(member(key) == name, "\(name)")
      #expect(member(key + [0]) == nil, "\(name) and a NUL")
      #expect(member(key + [115]) == nil, "\(name)s")
      #expect(member(Array(key.dropLast())) == nil, "\(name) less its last byte")
      #expect(member(Array(key.dropFirst())) == nil, "\(name) less its first byte")
      #expect(member(key.map { $0 ^ 0x20 }) == nil, "\(name) in the other case")
    }
    for key in ["", "leapsecondz", "leapsecond", "leapsecondss", "geoidSepX", "magtrack", "device", "sep", "epc"] {
      #expect(member(Array(key.utf8)) == nil, "\(key)")
    }
    // A key with an escape is decoded first: "\u006cat" is "lat", "lat\u0000" is not.
    #expect(GPSDJSON.tpv(from: #"{"class":"TPV","\u006cat":1.5}"#)?.latitude == 1.5)
    #expect(GPSDJSON.tpv(from: #"{"class":"TPV","\u006Cat":1.5}"#)?.latitude == 1.5)
    #expect(GPSDJSON.tpv(from: #"{"class":"TPV","lat\u0000":1.5}"#)?.latitude.isNaN == true)
  }

  @Test("numbers read in place are exactly what Double(String) reads")
  func exactDecimals() {
    var rng = SeededRandom(seed: 0x6e75_6d62)
    var fast = 0
    func check(_ text: String) {
      let read = Array(text.utf8).withUnsafeBufferPointer { GPSDJSON.exactDecimal($0) }
      guard let read else { return }
      fast += 1
      let reference = Double(text)
      #expect(
        reference != nil && read.bitPattern == reference!.bitPattern,
        "\(text): \(read) against \(String(describing: reference))")
    }
    for text in [
      "0", "-0", "0.0", "-0.000", "1", "1.", ".5", "-.5", "0.005", "48.149963333", "-179.999999999",
      "9007199254740992", "9007199254740993", "1e22", "1e23", "1.5e-22", "123456789012345678", "3.5E+1",
      "1e-7", "-1E-7", "0e999", "00012.5000", "4.9406564584124654e-324",
    ] {
      check(text)
    }
    // gpsd's shapes: degrees to 9 places, metres to 3 or 4, small reals, exponents.
    for _ in 0..<200_000 {
      let whole = Int(rng.next() % 400) - 200
      let places = Int(rng.next() % 13)
      var fraction = ""
      for _ in 0..<places { fraction += String(rng.next() % 10) }
      var text = "\(whole)" + (places > 0 ? "." + fraction : "")
      if rng.next() % 8 == 0 { text += "e" + String(Int(rng.next() % 50) - 25) }
      check(text)
    }
    #expect(fast > 150_000, "most of gpsd's shapes take the exact path")
  }

  /// The scanner reads a number in one pass when it can (`exactDecimalPrefix`), else as the
  /// run of bytes a number may hold: either way a member's value is what `Double(String)`
  /// reads of that run, and a run it cannot read makes the line malformed.
  @Test("a member's number is Double(String) of its bytes, whatever follows the digits")
  func scannedNumbersAreDoubleOfTheirBytes() {
    var rng = SeededRandom(seed: 0x7363_616e)
    let alphabet = Array("0123456789.eE+-".utf8)
    var texts = [
      "1.2.3", "1e5e", "-", "--1", "1e", "1e+", "1e-", ".", "-.e1", "12345678901234567890", "1..2",
      "0.000000000000000000000000001", "48.149963333", "-0", "1E22", "2e-0005", String(repeating: "0", count: 70) + "1",
    ]
    for _ in 0..<50_000 {
      texts.append(
        String(decoding: (0..<1 + Int(rng.next() % 12)).map { _ in alphabet[Int(rng.next() % 15)] }, as: UTF8.self))
    }
    for text in texts {
      let members = GPSDJSON.members(of: #"{"n":"# + text + "}")
      let expected = text.utf8.count <= 64 && text.contains(where: \.isNumber) ? Double(text) : nil
      if let expected {
        guard case .number(let read)? = members?.first?.value else {
          Issue.record("\(text): \(String(describing: members)) against \(expected)")
          continue
        }
        #expect(read.bitPattern == expected.bitPattern, "\(text): \(read) against \(expected)")
      } else {
        #expect(members == nil, "\(text)")
      }
    }
  }
}
