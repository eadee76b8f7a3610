import ArgumentParser
import Foundation
import WorkoutControl
import WorkoutCore
import WorkoutReports
import WorkoutStore

extension TrainingJSON {
  func printText() {
    if activities.count > 1 {
      print("\nactivity       timer      distance   avg HR  avg power")
      for activity in activities {
        print(
          [
            Format.pad("\(activity.number) \(activity.type)", 14), Format.pad(Format.duration(activity.timer), 10),
            Format.pad(Format.distance(activity.distance), 10),
            Format.pad(activity.averageHeartRate.map { wholeNumberText($0) } ?? "-", 7),
            activity.averagePower.map { "\(wholeNumberText($0)) W" } ?? "-",
          ].joined(separator: " "))
      }
      for (index, zone) in zones.enumerated() {
        print("\(zone.name) zones by activity:")
        for activity in activities where index < activity.zones.count {
          let times = activity.zones[index].enumerated().map { "Z\($0.offset + 1) \(Format.duration($0.element))" }
          print("  \(activity.number) \(activity.type): " + times.joined(separator: ", "))
        }
      }
      print("")
    }
    let m = metrics
    if let average = m.averagePower {
      var line = "power avg \(wholeNumberText(average)) W"
      if let without = m.averagePowerWithoutZeros {
        line =
          m.powerAveraging == PowerAveraging.withoutZeros.rawValue
          ? "power avg \(wholeNumberText(without)) W without zeros (\(wholeNumberText(average)) W with them)"
          : line + " (\(wholeNumberText(without)) W without zeros)"
      }
      if let np = m.normalizedPower { line += ", NP \(wholeNumberText(np)) W" }
      if let work = m.workKilojoules { line += ", work \(wholeNumberText(work)) kJ" }
      print(line)
      if let ftp = m.ftp, let intensity = m.intensityFactor, let tss = m.trainingStressScore {
        print(String(format: "  IF %.2f, TSS %.0f (FTP %.0f W)", intensity, tss, ftp))
      }
      let bests = [(5, "5 s"), (60, "1 min"), (300, "5 min"), (1200, "20 min")].compactMap { seconds, name in
        m.bestPower[String(seconds)].map { "\(name) \(wholeNumberText($0)) W" }
      }
      if !bests.isEmpty { print("  best " + bests.joined(separator: ", ")) }
      if let estimate = m.estimatedFTP {
        print("  FTP estimate \(wholeNumberText(estimate)) W (95 % of the best 20 min)")
      }
    }
    if let hr = m.bestTwentyMinuteHeartRate { print("heart rate best 20 min \(wholeNumberText(hr)) bpm") }
    if let calories = m.calories {
      print(
        "energy \(wholeNumberText(calories)) kcal (\(m.workKilojoules == nil ? "by heart rate" : "1 kcal a kJ of work"))"
      )
    }
    for zone in zones {
      print("\n\(zone.name) zones (\(zone.source)): \(zone.zones)")
      zone.printTable()
    }
  }
}

extension TrainingJSON.ZoneJSON {
  var name: String { quantity == ZoneQuantity.heartRate.rawValue ? "heart-rate" : "power" }

  /// Time in each zone, for the whole and (when there are several) each lap; each column as
  /// wide as its widest cell and two spaces (lap 10 and on, ten hours and more).
  func printTable() {
    let labelWidth = "lap \(laps.count)".count + 2
    let cellWidth = ([seconds] + laps).flatMap { $0 }.map { Format.duration($0).count }.reduce(7, max) + 2
    func row(_ label: String, _ seconds: [Double]) {
      print(
        Format.pad(label, labelWidth) + seconds.map { Format.pad(Format.duration($0), cellWidth) }.joined()
          + Format.duration(seconds.reduce(0, +)))
    }
    print(
      Format.pad("zone", labelWidth) + seconds.indices.map { Format.pad("Z\($0 + 1)", cellWidth) }.joined() + "total")
    row("all", seconds)
    for (index, lap) in laps.enumerated() where laps.count > 1 { row("lap \(index + 1)", lap) }
  }
}

struct Zones: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Heart-rate and power zones of stored sessions.",
    subcommands: [Set.self, Target.self, Rebucket.self])

  struct Target: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Set the workout's target zone range: the buzzer and LED say when the rider leaves it.",
      discussion: """
        RANGE is a zone or a range of zones from 1 ("2", "2-3"), of the workout's heart-rate \
        zones, or its power zones with --power; --off clears it. Set while no workout is open \
        (or once the last has stopped), it is for the next one; otherwise for the open one.
        """)
    @OptionGroup var locations: Locations
    @Flag(help: "A range of power zones; without it, of heart-rate zones.") var power = false
    @Flag(help: "No target of that quantity.") var off = false
    @Argument(help: "The zones, \"2\" or \"2-3\".") var range: String?

    func validate() throws {
      if off == (range != nil) { throw ValidationError("give a RANGE or --off") }
    }

    func run() throws {
      let quantity: ZoneQuantity = power ? .cyclingPower : .heartRate
      if let range {
        do {
          _ = try TargetZone(parsing: range, quantity: quantity)
        } catch {
          throw fail("\(error)")
        }
      }
      let reply = try request(
        ControlRequest(command: .setTargetZone, zones: range ?? "", power: power), to: locations)
      let which = reply.state == .notStarted || reply.state == .ended ? "next" : "current"
      let name = power ? "power" : "heart-rate"
      print(
        range.map { "the \(which) workout's target: \(name) zones \($0)" }
          ?? "the \(which) workout has no \(name) target")
    }
  }

  struct Set: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Give the next workout (or the one counting down) its own zones.",
      discussion: """
        ZONES is 3 to 9 contiguous zones, the first open below and the last open above, as \
        boundaries ("120,140,160,175") or zones ("0-120,120-140,140-160,160-175,175- bpm"). They \
        replace the configured zones of that quantity for one workout; refused once it runs.
        """)
    @OptionGroup var locations: Locations
    @Flag(help: "The zones are of power (W); without it, of heart rate (count/min).") var power = false
    @Option(help: "The zones.") var zones: String

    func run() throws {
      // Checked here too, so that a mistake is named before the service is asked.
      do {
        _ = try ZoneConfiguration(parsing: zones, quantity: power ? .cyclingPower : .heartRate, source: .custom)
      } catch {
        throw fail("--zones: \(error)")
      }
      let reply = try request(ControlRequest(command: .setZones, zones: zones, power: power), to: locations)
      print(
        "the \(reply.state == .prepared ? "prepared" : "next") workout's \(power ? "power" : "heart-rate") zones: \(zones)"
      )
    }
  }

  struct Rebucket: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Sort a stored session's samples into other zones (to compare workouts with different zone counts).",
      discussion: """
        ZONES is 3 to 9 contiguous zones, the first open below and the last open above, as \
        boundaries ("120,140,160,175") or zones ("0-120,120-140,140-160,160-175,175- bpm"). \
        Prints the time in each zone for the whole session and each lap; stores nothing.
        """)
    @OptionGroup var locations: Locations
    @Flag(help: "Print JSON.") var json = false
    @Flag(help: "The zones are of power (W); without it, of heart rate (count/min).") var power = false
    @Option(help: "The zones.") var zones: String
    @Argument(help: "The session id (see `workoutctl sessions`).") var id: Int64

    func run() throws {
      let configuration: ZoneConfiguration
      do {
        configuration = try ZoneConfiguration(
          parsing: zones, quantity: power ? .cyclingPower : .heartRate, source: .custom)
      } catch {
        throw fail("--zones: \(error)")
      }
      let store = try openStore(locations)
      guard let record = try store.session(id: id) else { throw fail("no session \(id) in \(locations.database)") }
      let summary = try SessionSummaryJSON(record: record, store: store)
      let training = try TrainingJSON(
        store: store, sessionID: id, endTimer: summary.timer, events: try store.events(sessionID: id),
        laps: try store.laps(sessionID: id), zones: [configuration])
      if json {
        print(try ControlJSON.encode(training.zones, pretty: true))
      } else {
        for zone in training.zones {
          print("session \(id), \(zone.name) zones \(zone.zones)")
          zone.printTable()
        }
      }
    }
  }
}

struct Activity: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "The activities of a multisport workout.", subcommands: [Next.self])

  struct Next: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Go on to the workout's next activity (a duathlon's run to bike).",
      discussion: """
        TYPE is cycling, running, walking, hiking, indoorCycling or other; without it, the next \
        of [session] activities. The lap closes, and the new activity counts its own time, \
        distance and zones (workoutctl show prints each). While running or paused.
        """)
    @OptionGroup var locations: Locations
    @Argument(help: "The next activity's type.") var type: String?

    func run() throws {
      if let type, ActivityType(rawValue: type) == nil {
        throw fail("no activity \"\(type)\" (known: \(ActivityType.allCases.map(\.rawValue).joined(separator: ", ")))")
      }
      _ = try request(ControlRequest(command: .nextActivity, activity: type), to: locations)
      let engine = (try? sendControl(ControlRequest(command: .status), socketPath: locations.socket, timeout: 5))?
        .status?.engine
      let number = engine?.activityNumber.map(String.init) ?? "next"
      print("activity \(number): \(engine?.activity?.rawValue ?? type ?? "")")
    }
  }
}
