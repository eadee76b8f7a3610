import Foundation
import Testing
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

@testable import WorkoutExport

@Suite("FIT: the binary layer")
struct FITEncodingTests {
  @Test("CRC-16 as FIT computes it (CRC-16/ARC: \"123456789\" gives 0xBB3D)")
  func crc() {
    #expect(FITCRC.of(Array("123456789".utf8)) == 0xBB3D)
    #expect(FITCRC.of([UInt8]()) == 0)
  }

  @Test("the file header: size, protocol 2.0, data size, .FIT and its own CRC")
  func header() {
    let header = FITMessageWriter.header(dataSize: 0x0102_0304)
    #expect(header.count == 14)
    #expect(Array(header[0..<2]) == [14, 0x20])
    #expect(Array(header[4..<8]) == [0x04, 0x03, 0x02, 0x01])
    #expect(Array(header[8..<12]) == Array(".FIT".utf8))
    let crc = FITCRC.of(header[0..<12])
    #expect(Array(header[12..<14]) == [UInt8(crc & 0xFF), UInt8(crc >> 8)])
  }

  @Test("definition and data messages; a value the type cannot hold is written as invalid, never wrapped")
  func messages() {
    let definition = FITMessageDefinition(
      global: 20, fields: [.init(253, .uint32), .init(3, .uint8), .init(13, .sint8), .init(27, .string, size: 6)])
    #expect(
      FITMessageWriter.definitionMessage(definition, local: 2) == [
        0x42, 0, 0, 20, 0, 4, 253, 4, 0x86, 3, 1, 0x02, 13, 1, 0x01, 27, 6, 0x07,
      ])
    let data = FITMessageWriter.dataMessage(
      definition, local: 2, [.integer(0x0A0B_0C0D), .integer(300), .integer(-5), .text("workoutd")])
    #expect(data == [0x02, 0x0D, 0x0C, 0x0B, 0x0A, 0xFF, 0xFB, 0x77, 0x6F, 0x72, 0x6B, 0x6F, 0x00])
    let empty = FITMessageWriter.dataMessage(
      definition, local: 2, [.integer(nil), .integer(nil), .integer(nil), .text("")])
    #expect(empty == [0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0, 0, 0])
    #expect(FITValue.scaled(12.3456, scale: 1000) == .integer(12346))
    #expect(FITValue.scaled(100, scale: 5, offset: 500) == .integer(3000))
    #expect(FITValue.scaled(.nan) == .integer(nil))
    // Past any FIT integer (an absurd altitude or speed in a stored point): invalid, where
    // Int64(_:) would trap and take the export, and the service, with it.
    #expect(FITValue.scaled(1e300, scale: 5, offset: 500) == .integer(nil))
    #expect(FITValue.scaled(-2e18, scale: 5) == .integer(nil))
    #expect(FITValue.scaled(.greatestFiniteMagnitude, scale: 1000) == .integer(nil))
    #expect(FITValue.scaled(1e15, scale: 1000) == .integer(1_000_000_000_000_000_000))
  }

  @Test("times from the FIT epoch, positions in semicircles")
  func units() {
    #expect(FITMessageWriter.timestamp(unix: 631_065_600) == 0)
    #expect(FITMessageWriter.timestamp(unix: 1_700_000_000.9) == 1_068_934_400)
    #expect(FITMessageWriter.semicircles(180) == 2_147_483_648)
    #expect(FITMessageWriter.semicircles(-45) == -536_870_912)
  }

  @Test("a definition is written once per layout, again only when a local number changes layout")
  func definitionsOnce() {
    var writer = FITMessageWriter()
    let event = FITMessageDefinition(global: 21, fields: [.init(0, .enumeration)])
    let first = writer.message(event, [.integer(0)])
    let second = writer.message(event, [.integer(0)])
    #expect(first.count == 9 + 2 && second.count == 2)
  }

  @Test("developer fields: bit 5 of the definition's header, their count and definitions; float32 values")
  func developerFields() {
    let layout = FITMessageDefinition(
      global: 20, fields: [.init(3, .uint8)], developerFields: [.init(0, .float32), .init(1, .float32)])
    let definition = FITMessageWriter.definitionMessage(layout, local: 2)
    #expect(definition == [0x62, 0, 0, 20, 0, 1, 3, 1, 0x02, 2, 0, 4, 0, 1, 4, 0])
    let data = FITMessageWriter.dataMessage(layout, local: 2, [.integer(150), .real(1.5), .real(nil)])
    #expect(data == [2, 150, 0x00, 0x00, 0xC0, 0x3F, 0xFF, 0xFF, 0xFF, 0xFF])
    #expect(data.count == layout.dataSize)
    #expect(
      FITMessageWriter.dataMessage(layout, local: 2, [.integer(nil), .real(.infinity), .real(1e300)]).suffix(8)
        == [UInt8](repeating: 0xFF, count: 8), "not finite, or beyond float32: invalid")
  }
}

/// A directory per test, removed afterwards.
final class ExportDirectory {
  let path = NSTemporaryDirectory() + "workoutd-export-" + UUID().uuidString
  init() { try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
  deinit { try? FileManager.default.removeItem(atPath: path) }
}

@Suite("FIT activity files of stored rides")
struct FITActivityTests {
  static let clock = ClockStamp(epoch: "test", moment: Moment(monotonic: 0, wall: 1_700_000_000), wallTrusted: true)

  /// A stored ride: 60 s riding with heart rate, power, cadence and temperature, a 20 s pause,
  /// 10 s more, a lap, 20 s more, stop.
  static func ride(into directory: ExportDirectory) throws -> WorkoutStore {
    let (store, _) = try WorkoutStore.open(at: directory.path + "/workoutd.db", wallNow: 0)
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 45.5, longitude: 7.25)
    func ride(_ seconds: Int) {
      for second in 0..<seconds {
        h.advance(by: 1)
        position = position.moved(eastBy: 8)
        h.send(
          .reading(
            .gps(
              GPSFix(
                dimension: .threeD, latitude: position.latitude, longitude: position.longitude,
                altitude: 300 + Double(second) / 10, speed: 8, horizontalError: 3))))
        h.send(.reading(.heartRate(bpm: 130 + second % 10)))
        // Two beats a second (~470 ms: 481/1024 s), a third every tenth second.
        h.send(.reading(.rrIntervals(second % 10 == 0 ? [481, 482, 480] : [481, 482])))
        h.send(.reading(.power(watts: 200 + second % 50)))
        // A fraction to round (85.4 … 91.4 rpm).
        h.send(.reading(.cadence(rpm: Double(85 + second % 7) + 0.4)))
        h.send(.reading(.temperature(celsius: 18.25)))
        // The road's feel, with fractions to round (0.5004 … 1.2504 m/s², 9.8 … 13.8 m/s²).
        h.send(
          .reading(.motion(MotionSecond(vibration: 0.5004 + Double(second % 4) / 4, peak: 9.8 + Double(second % 5)))))
        h.send(.tick)
      }
    }
    ride(60)
    _ = h.press(.pause)
    h.advance(by: 20)
    h.send(.tick)
    _ = h.press(.resume)
    ride(10)
    _ = h.press(.lap)
    ride(20)
    _ = h.press(.stop)
    try store.write(h.commands, clock: clock)
    return store
  }

  @Test(
    "the file's CRC covers header and data; the name is the start in UTC and the session's short UUID; again, the same bytes"
  )
  func fileIsWholeAndStable() throws {
    let directory = ExportDirectory()
    let store = try Self.ride(into: directory)
    let session = try #require(try store.session(id: 1))
    let out = directory.path + "/out"
    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
    let written = try ExportFile.write(session, from: store, format: .fit, into: out)
    // The start in UTC and the first 8 hex digits of the session's UUID, which is the serial too.
    let short = String(session.uuid.prefix(8))
    #expect(written.path == out + "/20231114-221323Z-\(short).fit")
    #expect(try ExportedSession.load(session, from: store).serial == UInt32(short, radix: 16))
    #expect(written.points == session.points)
    let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: written.path)))
    let dataSize = Int(bytes[4]) | Int(bytes[5]) << 8 | Int(bytes[6]) << 16 | Int(bytes[7]) << 24
    #expect(bytes.count == 14 + dataSize + 2)
    #expect(FITCRC.of(bytes.dropLast(2)) == UInt16(bytes[bytes.count - 2]) | UInt16(bytes[bytes.count - 1]) << 8)
    #expect(FITCRC.of(bytes) == 0, "a whole FIT file's CRC over itself is 0")
    // No temporary file left; a second export gives the same bytes.
    #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["20231114-221323Z-\(short).fit"])
    try ExportFile.write(session, from: store, format: .fit, into: out)
    #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: written.path))) == bytes)
  }

  @Test("Garmin's FIT SDK and fitdecode read it: no errors, integrity, our totals, every pause a timer stop and start")
  func garminReadsIt() throws {
    let directory = ExportDirectory()
    let store = try Self.ride(into: directory)
    let session = try #require(try store.session(id: 1))
    let summary = try #require(try store.summary(of: session))
    let written = try ExportFile.write(session, from: store, format: .fit, into: directory.path)
    guard let decoded = try readWithReferenceDecoders(written.path) else { return }
    #expect((decoded["errors"] as? [String])?.isEmpty == true, "\(decoded["errors"] ?? "")")
    #expect(decoded["integrity"] as? Bool == true)
    #expect(decoded["file_type"] as? String == "activity")
    #expect(decoded["serial_number"] as? Int == Int(session.uuid.prefix(8), radix: 16))
    #expect(decoded["records"] as? Int == session.points)
    #expect(decoded["fitdecode_records"] as? Int == session.points)
    #expect(decoded["activity_sessions"] as? Int == 1)
    let fit = try #require(decoded["session"] as? [String: Any])
    #expect(fit["sport"] as? String == "cycling")
    // Exactly our totals, to the unit FIT keeps them in.
    func close(_ key: String, _ ours: Double?, _ unit: Double) {
      let theirs = fit[key] as? Double
      #expect(
        ours != nil && theirs != nil && abs(theirs! - ours!) <= unit / 2 + 1e-9,
        "\(key): \(theirs ?? -1) against \(ours ?? -1)")
    }
    close("total_timer_time", session.timer, 0.001)
    close("total_elapsed_time", session.elapsed, 0.001)
    close("total_distance", session.distance, 0.01)
    close("avg_heart_rate", summary.totals.heartRate.mean, 1)
    close("max_power", summary.totals.power.maximum, 1)
    #expect(fit["num_laps"] as? Int == 2)
    let laps = try #require(decoded["laps"] as? [[String: Any]])
    #expect(laps.count == 2)
    #expect(laps.last?["lap_trigger"] as? String == "session_end")
    // Start; the pause: stop_all, then start; the end: stop_all.
    let timer = try #require(decoded["timer_events"] as? [[Any]])
    #expect(timer.map { $0[1] as? String } == ["start", "stop_all", "start", "stop_all"])
    // Every RR interval in the hrv messages, in seconds (scale 1000), in order.
    let stored = try store.rrIntervals(sessionID: 1).map { (Double($0.interval) * 1000 / 1024).rounded() / 1000 }
    let hrv = try #require(decoded["hrv"] as? [Double])
    #expect(stored.count > 100 && hrv == stored)
    // The activity's local time: the timestamp plus this machine's offset from UTC then.
    let activity = try #require(decoded["activity"] as? [String: Int])
    let offset = TimeZone.current.secondsFromGMT(for: Date(timeIntervalSince1970: session.endWall ?? 0))
    #expect(activity["local_timestamp"].map { $0 - activity["timestamp"]! } == offset)
    let first = try #require(decoded["first_record"] as? [String: Any])
    #expect(first["heart_rate"] as? Int == 130)
    #expect(first["power"] as? Int == 200)
    #expect(first["position_lat"] as? Int != nil)
    // The road's feel: our developer fields, described once, float32 m/s² in every record.
    #expect(decoded["developer_ids"] as? [[Int]] == [[0, Int(FITActivityWriter.softwareVersion)]])
    let described = try #require(decoded["field_descriptions"] as? [[Any]])
    #expect(
      described.map { "\($0[0]) \($0[1]) \($0[2]) \($0[3])" } == [
        "0 vibration m/s2 136", "1 peak_acceleration m/s2 136",
      ])
    let points = try store.points(sessionID: 1)
    for key in ["developer", "fitdecode_developer"] {
      let records = try #require(decoded[key] as? [[String: Double]])
      #expect(records.count == points.count)
      for (record, point) in zip(records, points) {
        #expect(record["vibration"].map { abs($0 - point.vibration!) < 1e-6 } == true, "\(key): \(record)")
        #expect(record["peak_acceleration"].map { abs($0 - point.peakAcceleration!) < 1e-5 } == true)
      }
    }
  }
}

/// What Garmin's FIT SDK and fitdecode make of the FIT file at `path` (read_fit.py's JSON);
/// nil, recorded as an issue, when `make test` has not made the reference decoders.
func readWithReferenceDecoders(_ path: String) throws -> [String: Any]? {
  let python = repositoryRoot + "/.build/pyref/bin/python"
  guard FileManager.default.isExecutableFile(atPath: python) else {
    Issue.record("no reference decoders in \(python): make test makes them (Tests/WorkoutExportTests/requirements.txt)")
    return nil
  }
  let process = Process()
  process.executableURL = URL(fileURLWithPath: python)
  process.arguments = [repositoryRoot + "/Tests/WorkoutExportTests/read_fit.py", path]
  let pipe = Pipe()
  process.standardOutput = pipe
  try process.run()
  let output = pipe.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  #expect(process.terminationStatus == 0)
  return try JSONSerialization.jsonObject(with: output) as? [String: Any]
}

/// The checkout this test was built from.
let repositoryRoot: String = {
  var url = URL(fileURLWithPath: #filePath)
  for _ in 0..<3 { url.deleteLastPathComponent() }
  return url.path
}()

/// `[metrics] average_power = "without_zeros"`: the ride's average power leaves out the seconds
/// at 0 W in the FIT session and laps and the TCX laps (as a Garmin set to exclude zeros
/// writes them); a ride recorded with the default counts them.
@Suite("average power with and without zeros in the exports")
struct PowerAveragingExportTests {
  /// 40 s alternating 0 and 300 W, a lap, 20 s at 0 and 200 W: with zeros 150 and 100 W,
  /// without 300 and 200 W; the session 133⅓ W with zeros, 266⅔ W without.
  static func ride(into directory: ExportDirectory, averaging: PowerAveraging) throws -> WorkoutStore {
    let (store, _) = try WorkoutStore.open(at: directory.path + "/workoutd.db", wallNow: 0)
    var settings = EngineSettings(autoPause: .some(nil))
    settings.powerAveraging = averaging
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 45.5, longitude: 7.25)
    func ride(_ seconds: Int, watts: Int) {
      for second in 0..<seconds {
        h.advance(by: 1)
        position = position.moved(eastBy: 8)
        h.send(
          .reading(
            .gps(
              GPSFix(
                dimension: .threeD, latitude: position.latitude, longitude: position.longitude, altitude: 300,
                speed: 8, horizontalError: 3))))
        h.send(.reading(.power(watts: second % 2 == 0 ? 0 : watts)))
        h.send(.tick)
      }
    }
    ride(40, watts: 300)
    _ = h.press(.lap)
    ride(20, watts: 200)
    _ = h.press(.stop)
    try store.write(h.commands, clock: FITActivityTests.clock)
    return store
  }

  func decodedFIT(_ store: WorkoutStore, in directory: ExportDirectory) throws -> [String: Any]? {
    let session = try #require(try store.session(id: 1))
    let written = try ExportFile.write(session, from: store, format: .fit, into: directory.path)
    return try readWithReferenceDecoders(written.path)
  }

  func tcxLapWatts(_ store: WorkoutStore, in directory: ExportDirectory) throws -> [Int] {
    let session = try #require(try store.session(id: 1))
    let written = try ExportFile.write(session, from: store, format: .tcx, into: directory.path)
    let text = try String(contentsOfFile: written.path, encoding: .utf8)
    return text.components(separatedBy: "<ns3:AvgWatts>").dropFirst().compactMap {
      Int($0.prefix { $0.isNumber })
    }
  }

  /// Without zeros the FIT session and laps and the TCX laps average only the pedalled seconds
  /// (the setting is recorded with the session); with them (the default), the stored averages.
  @Test(arguments: [
    (PowerAveraging.withoutZeros, 267, [300, 200]), (PowerAveraging.withZeros, 133, [150, 100]),
  ])
  func averages(_ averaging: PowerAveraging, session expected: Int, laps expectedLaps: [Int]) throws {
    let directory = ExportDirectory()
    let store = try Self.ride(into: directory, averaging: averaging)
    let events = try store.events(sessionID: 1).filter { $0.kind == "powerAveraging" }
    #expect(events.map(\.detail) == [averaging.rawValue], "the setting is recorded with the session")
    if let decoded = try decodedFIT(store, in: directory) {
      let session = try #require(decoded["session"] as? [String: Any])
      let laps = try #require(decoded["laps"] as? [[String: Any]])
      #expect(session["avg_power"] as? Int == expected, "\(session)")
      #expect(laps.map { $0["avg_power"] as? Int } == expectedLaps, "\(laps)")
    }
    #expect(try tcxLapWatts(store, in: directory) == expectedLaps)
  }
}

@Suite("automatic laps in the exports")
struct AutoLapExportTests {
  @Test("a lap by distance is FIT lap_trigger distance and TCX TriggerMethod Distance")
  func distanceLaps() throws {
    let directory = ExportDirectory()
    let (store, _) = try WorkoutStore.open(at: directory.path + "/workoutd.db", wallNow: 0)
    var settings = EngineSettings(countdown: 0, autoPause: .some(nil))
    settings.autoLap = .distance(metres: 400)
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 45.5, longitude: 7.25)
    h.ride(seconds: 60, speed: 8, from: &position)
    _ = h.press(.stop)
    try store.write(h.commands, clock: FITActivityTests.clock)
    let session = try #require(try store.session(id: 1))
    let tcx = try ExportFile.write(session, from: store, format: .tcx, into: directory.path)
    let text = try String(contentsOfFile: tcx.path, encoding: .utf8)
    let methods = text.components(separatedBy: "<TriggerMethod>").dropFirst().map { $0.prefix { $0 != "<" } }
    #expect(methods == ["Distance", "Manual"])
    if let decoded = try PowerAveragingExportTests().decodedFIT(store, in: directory) {
      let laps = try #require(decoded["laps"] as? [[String: Any]])
      #expect(laps.map { $0["lap_trigger"] as? String } == ["distance", "session_end"], "\(laps)")
    }
  }
}

@Suite("multisport workouts in the exports")
struct MultisportExportTests {
  @Test("a FIT session per activity, of its sport, over its laps; the activity counts them")
  func sessionPerActivity() throws {
    let directory = ExportDirectory()
    let (store, _) = try WorkoutStore.open(at: directory.path + "/workoutd.db", wallNow: 0)
    var h = EngineHarness.multisport([.running, .cycling])
    var position = GeoPoint(latitude: 45.5, longitude: 7.25)
    h.ride(seconds: 60, speed: 3, heartRate: 140, from: &position)
    _ = h.press(.lap)
    h.ride(seconds: 40, speed: 3, heartRate: 150, from: &position)
    #expect(h.send(.nextActivity(nil, .control)).outcome == .accepted(.running))
    h.ride(seconds: 90, speed: 9, heartRate: 130, from: &position)
    _ = h.press(.stop)
    try store.write(h.commands, clock: FITActivityTests.clock)
    guard let decoded = try PowerAveragingExportTests().decodedFIT(store, in: directory) else { return }
    #expect((decoded["errors"] as? [String])?.isEmpty == true, "\(decoded["errors"] ?? "")")
    #expect(decoded["activity_sessions"] as? Int == 2)
    let sessions = try #require(decoded["sessions"] as? [[String: Any]])
    #expect(sessions.map { $0["sport"] as? String } == ["running", "cycling"], "\(sessions)")
    #expect(sessions.map { $0["first_lap_index"] as? Int } == [0, 2])
    #expect(sessions.map { $0["num_laps"] as? Int } == [2, 1])
    let timers = sessions.compactMap { $0["total_timer_time"] as? Double }
    #expect(timers.count == 2 && abs(timers[0] - 100) <= 1 && abs(timers[1] - 90) <= 1, "\(timers)")
    #expect((sessions[0]["avg_heart_rate"] as? Int).map { abs($0 - 144) <= 1 } == true, "\(sessions[0])")
    let laps = try #require(decoded["laps"] as? [[String: Any]])
    #expect(laps.map { $0["sport"] as? String } == ["running", "running", "cycling"])
    #expect(laps.map { $0["lap_trigger"] as? String } == ["manual", "session_end", "session_end"])
  }

  @Test("each activity's session has its own NP, IF, work and time in zone")
  func eachActivitysOwnTrainingFigures() throws {
    let directory = ExportDirectory()
    let (store, _) = try WorkoutStore.open(at: directory.path + "/workoutd.db", wallNow: 0)
    var settings = EngineSettings(activity: .cycling, countdown: 0, autoPause: .some(nil))
    settings.activityPlan = [.cycling, .indoorCycling]
    settings.zones = [try SystemZones.power(ftp: 200)]
    settings.ftp = 200
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 45.5, longitude: 7.25)
    func ride(_ seconds: Int, watts: Int) {
      for _ in 0..<seconds {
        h.advance(by: 1)
        position = position.moved(eastBy: 8)
        h.send(
          .reading(
            .gps(
              GPSFix(
                dimension: .threeD, latitude: position.latitude, longitude: position.longitude, altitude: 100,
                speed: 8, horizontalError: 3))))
        h.send(.reading(.power(watts: watts)))
        h.send(.tick)
      }
    }
    ride(120, watts: 150)
    #expect(h.send(.nextActivity(nil, .control)).outcome == .accepted(.running))
    ride(90, watts: 250)
    _ = h.press(.stop)
    try store.write(h.commands, clock: FITActivityTests.clock)
    guard let decoded = try PowerAveragingExportTests().decodedFIT(store, in: directory) else { return }
    #expect((decoded["errors"] as? [String])?.isEmpty == true, "\(decoded["errors"] ?? "")")
    let sessions = try #require(decoded["sessions"] as? [[String: Any]])
    #expect(sessions.map { $0["normalized_power"] as? Int } == [150, 250], "\(sessions)")
    #expect(sessions.map { $0["intensity_factor"] as? Double } == [0.75, 1.25], "\(sessions)")
    let work = sessions.compactMap { $0["total_work"] as? Int }
    #expect(work.count == 2 && abs(work[0] - 120 * 150) <= 150 && abs(work[1] - 90 * 250) <= 250, "\(work)")
    let inZone = try #require(decoded["time_in_zone"] as? [[String: Any]]).filter {
      $0["reference_mesg"] as? String == "session"
    }
    #expect(inZone.map { $0["reference_index"] as? Int } == [0, 1])
    // 150 W of FTP 200 is 75 %: zone 2 (56-75 %); 250 W is 125 %: zone 6 (above 120 %).
    let seconds = inZone.map { ($0["time_in_power_zone"] as? [Double]) ?? [] }
    #expect(seconds.count == 2 && abs(seconds[0][1] - 120) <= 1 && abs(seconds[1][5] - 90) <= 1, "\(seconds)")
  }
}
