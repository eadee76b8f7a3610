import Foundation
import Testing
import WorkoutStore

/// The FIT file carries every training figure `workoutctl show` has, in the profile's own
/// fields, as Garmin's FIT SDK reads them: NP, IF, TSS, threshold power, work and calories of the
/// session and each lap, time in zone of both (heart rate and power, with the boundaries and how
/// they were made), and the RPE and mood the rider gave on the phone after the ride.
@Suite(.serialized)
struct FITTrainingFiguresTests {
  static let rider = """
    [rider]
    age = 40
    weight = 75
    sex = "male"
    resting_heart_rate = 50
    max_heart_rate = 185
    ftp = 315

    """

  /// The Edge 810 + Vector ride (power, heart rate, 8 laps) at full speed, with the web page on.
  func rideAndRate() throws -> WebService {
    let web = try WebService(
      speed: "max", extra: Self.rider,
      arguments: ["--ride", repositoryRoot + "/board/sim/rides/garmin-edge-810-2013-08-16.csv"])
    try waitFor("the ride to end", timeout: 300) {
      let status = try web.service.status()
      return status.sessionID == 1 && status.state == .ended
    }
    let token = try web.pair()
    let headers = web.cookie(token).merging(["Origin": web.origin]) { $1 }
    for body in [#"{"kind":"rpe","value":7,"session":1}"#, #"{"kind":"mood","mood":"pleasant","session":1}"#] {
      let reply = try http("POST", "/api/annotate", port: web.port, headers: headers, body: body)
      #expect(reply.status == 200, "\(reply)")
    }
    return web
  }

  @Test func theFITFileCarriesWhatShowHas() throws {
    let web = try rideAndRate()
    let shown = try web.ctl(["show", "1", "--json"])
    #expect(shown.status == 0, "\(shown.output)")
    let show = try #require(try JSONSerialization.jsonObject(with: Data(shown.output.utf8)) as? [String: Any])
    let training = try #require(show["training"] as? [String: Any])
    let metrics = try #require(training["metrics"] as? [String: Any])
    let lapMetrics = try #require(training["laps"] as? [[String: Any]])
    let zones = try #require(training["zones"] as? [[String: Any]])

    let out = web.dir.path + "/out"
    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
    let export = try web.ctl(["export", "1", "--format", "fit", "--out", out])
    #expect(export.status == 0, "\(export.output)")
    let name = try #require(try FileManager.default.contentsOfDirectory(atPath: out).first { $0.hasSuffix(".fit") })
    let decoded = try decodeFIT(out + "/" + name)
    #expect((decoded["errors"] as? [String])?.isEmpty == true, "\(decoded["errors"] ?? "")")
    #expect(decoded["integrity"] as? Bool == true)
    let session = try #require(decoded["session"] as? [String: Any])
    func number(_ object: [String: Any], _ key: String) -> Double? {
      (object[key] as? Double) ?? (object[key] as? Int).map(Double.init)
    }

    // The session: each figure as `show` has it, to the field's resolution.
    let np = try #require(number(metrics, "normalizedPower"))
    #expect(abs(np - 301) <= 3, "NP \(np) W: the Edge 810's own was 301 W")
    #expect(number(session, "normalized_power") == np.rounded())
    #expect(number(session, "threshold_power") == 315)
    #expect(
      number(session, "intensity_factor") == (try #require(number(metrics, "intensityFactor")) * 1000).rounded() / 1000)
    #expect(
      number(session, "training_stress_score") == (try #require(number(metrics, "trainingStressScore")) * 10).rounded()
        / 10)
    let work = try #require(number(metrics, "workKilojoules"))
    #expect(number(session, "total_work") == (work * 1000).rounded())
    let calories = try #require(number(metrics, "calories"))
    #expect(abs(calories - work) < 1e-9, "with power, 1 kcal a kJ of work")
    #expect(number(session, "total_calories") == calories.rounded())
    #expect(number(session, "workout_rpe") == 70, "RPE 7, × 10")
    #expect(number(session, "workout_feel") == 83, "pleasant: valence 2/3 on 0-100")

    // Each lap.
    let laps = try #require(decoded["laps"] as? [[String: Any]])
    #expect(laps.count == 8 && lapMetrics.count == 8)
    for (lap, shown) in zip(laps, lapMetrics) {
      #expect(number(lap, "normalized_power") == number(shown, "normalizedPower").map { $0.rounded() })
      #expect(number(lap, "total_work") == number(shown, "workKilojoules").map { ($0 * 1000).rounded() })
      #expect(number(lap, "total_calories") == number(shown, "calories").map { $0.rounded() })
    }
    let lapWork = lapMetrics.compactMap { number($0, "workKilojoules") }.reduce(0, +)
    #expect(abs(lapWork - work) < 1e-6, "the laps' work is the session's")

    // Time in zone: the session's and each lap's, heart rate and power, the system's zones.
    let inZone = try #require(decoded["time_in_zone"] as? [[String: Any]])
    #expect(inZone.filter { $0["reference_mesg"] as? String == "lap" }.count == 8)
    let heartRate = try #require(zones.first { $0["quantity"] as? String == "heartRate" })
    let power = try #require(zones.first { $0["quantity"] as? String == "cyclingPower" })
    func milliseconds(_ seconds: Any?) -> [Double] {
      ((seconds as? [Any]) ?? []).map { (($0 as? Double) ?? Double($0 as? Int ?? -1)) * 1000 }.map { $0.rounded() }
    }
    for message in inZone {
      let reference = message["reference_mesg"] as? String
      let index = try #require(message["reference_index"] as? Int)
      let expectHR: Any? = reference == "session" ? heartRate["seconds"] : (heartRate["laps"] as? [Any])?[index]
      let expectPower: Any? = reference == "session" ? power["seconds"] : (power["laps"] as? [Any])?[index]
      #expect(milliseconds(message["time_in_hr_zone"]) == milliseconds(expectHR), "\(reference ?? "") \(index)")
      #expect(milliseconds(message["time_in_power_zone"]) == milliseconds(expectPower), "\(reference ?? "") \(index)")
      #expect(message["hr_calc_type"] as? String == "percent_hrr")
      #expect(message["pwr_calc_type"] as? String == "percent_ftp")
      #expect(number(message, "functional_threshold_power") == 315)
      #expect(number(message, "max_heart_rate") == 185 && number(message, "resting_heart_rate") == 50)
    }
    let session0 = try #require(inZone.first { $0["reference_mesg"] as? String == "session" })
    // Karvonen's 60/70/80/90 % of the reserve from 50 to 185 bpm; 56/76/91/106/121 % of 315 W.
    #expect((session0["hr_zone_high_boundary"] as? [Int]) == [131, 145, 158, 172])
    #expect((session0["power_zone_high_boundary"] as? [Int]) == [176, 239, 287, 334, 381])
    let timer = try #require(number(show["session"] as? [String: Any] ?? [:], "timer"))
    #expect(abs(milliseconds(session0["time_in_power_zone"]).reduce(0, +) / 1000 - timer) < 1, "every second in a zone")

    // The TCX file's laps carry the calories too.
    let tcx = try web.ctl(["export", "1", "--format", "tcx", "--out", out])
    #expect(tcx.status == 0, "\(tcx.output)")
    let tcxName = try #require(try FileManager.default.contentsOfDirectory(atPath: out).first { $0.hasSuffix(".tcx") })
    let text = try String(contentsOfFile: out + "/" + tcxName, encoding: .utf8)
    let tcxCalories = text.components(separatedBy: "<Calories>").dropFirst().compactMap {
      Double($0.prefix { $0 != "<" })
    }
    #expect(tcxCalories == lapMetrics.map { number($0, "calories").map { $0.rounded() } ?? -1 })
  }
}
