import ArgumentParser
import WorkoutControl
import WorkoutCore
import WorkoutReports
import WorkoutStore

struct Show: ParsableCommand {
  static let configuration = CommandConfiguration(abstract: "Show one session: summary, laps and events.")
  @OptionGroup var locations: Locations
  @Flag(help: "Print JSON.") var json = false
  @Option(help: "FTP, W, for IF and TSS (default: the one the session was recorded with).") var ftp: Double?
  @Argument(help: "The session id (see `workoutctl sessions`).") var id: Int64

  struct Detail: Codable {
    var session: SessionSummaryJSON
    var laps: [LapRecord]
    var events: [EventRecord]
    /// The heart-rate strap's RR intervals, when it sent any.
    var rrIntervals: RRSummary?
    /// Per sensor channel: the seconds with a value, mean and maximum.
    var channels: [ChannelTotals]
    /// Time in zone and training metrics, from the points.
    var training: TrainingJSON
    /// Its points, events and laps that a damaged record made unreadable: left out of all the
    /// above, and of its exports.
    var unreadable: UnreadableRows
    /// The board's battery once a minute through the ride (none without a gauge).
    var batterySamples: [BatterySampleRecord]
    var database: String
  }

  /// RR intervals in short: how many, their mean, and RMSSD (the root mean square of successive
  /// differences, the usual short-term heart-rate variability figure), in milliseconds.
  struct RRSummary: Codable {
    var count: Int
    var meanMilliseconds: Double
    var rmssdMilliseconds: Double?

    init?(_ rows: [RRIntervalRecord]) {
      guard !rows.isEmpty else { return nil }
      let ms = rows.map(\.milliseconds)
      count = ms.count
      meanMilliseconds = ms.reduce(0, +) / Double(ms.count)
      let squares = zip(ms.dropFirst(), ms).map { ($0 - $1) * ($0 - $1) }
      rmssdMilliseconds = squares.isEmpty ? nil : (squares.reduce(0, +) / Double(squares.count)).squareRoot()
    }
  }

  func run() throws {
    let store = try openStore(locations)
    guard let record = try store.session(id: id) else { throw fail("no session \(id) in \(locations.database)") }
    let summary = try SessionSummaryJSON(record: record, store: store)
    let laps = try store.laps(sessionID: id)
    let events = try store.events(sessionID: id)
    let detail = Detail(
      session: summary, laps: laps, events: events, rrIntervals: RRSummary(try store.rrIntervals(sessionID: id)),
      channels: try store.channelTotals(sessionID: id),
      training: try TrainingJSON(
        store: store, sessionID: id, endTimer: summary.timer, events: events, laps: laps,
        firstActivity: summary.activity, ftp: ftp),
      unreadable: try store.unreadableRows(sessionID: id), batterySamples: try store.batterySamples(sessionID: id),
      database: locations.database)
    if json {
      print(try ControlJSON.encode(detail, pretty: true))
      return
    }
    let s = detail.session
    print("session \(s.id): \(s.activity), \(s.state)")
    print("start \(s.start.map(Format.date) ?? "-"), end \(s.end.map(Format.date) ?? "-")")
    print(
      "timer \(Format.duration(s.timer)), elapsed \(Format.duration(s.elapsed)), distance \(Format.distance(s.distance))"
    )
    print("ascent \(wholeNumberText(s.ascent)) m, descent \(wholeNumberText(s.descent)) m")
    if let average = s.averageSpeed {
      print("speed avg \(Format.speed(average))" + (s.maxSpeed.map { ", max \(Format.speed($0))" } ?? ""))
    }
    if let hr = s.averageHeartRate {
      print("heart rate avg \(wholeNumberText(hr)), max \(wholeNumberText(s.maxHeartRate ?? hr))")
    }
    if let rr = detail.rrIntervals {
      print(
        "RR intervals \(rr.count), mean \(wholeNumberText(rr.meanMilliseconds)) ms"
          + (rr.rmssdMilliseconds.map { ", RMSSD \(wholeNumberText($0)) ms" } ?? ""))
    }
    print("points \(s.points)")
    if let battery = BatterySampleRecord.summaryLine(detail.batterySamples) { print(battery) }
    if !detail.unreadable.isEmpty {
      print("left out as unreadable (a damaged record): \(detail.unreadable.description)")
    }
    if !detail.channels.isEmpty {
      print("\nsensor        seconds  share  average    maximum")
      for totals in detail.channels {
        let (name, value): (String, (Double) -> String) =
          switch totals.channel {
          case .heartRate: ("heart rate", { "\(wholeNumberText($0)) bpm" })
          case .power: ("power", { "\(wholeNumberText($0)) W" })
          case .cadence: ("cadence", { "\(wholeNumberText($0)) rpm" })
          case .wheelSpeed: ("wheel speed", Format.speed)
          case .gpsSpeed: ("GPS speed", Format.speed)
          }
        let share = s.points > 0 ? "\(wholeNumberText(100 * Double(totals.seconds) / Double(s.points))) %" : "-"
        print(
          [
            Format.pad(name, 13), Format.pad(String(totals.seconds), 8), Format.pad(share, 6),
            Format.pad(totals.average.map(value) ?? "-", 10), totals.maximum.map(value) ?? "-",
          ].joined(separator: " "))
      }
    }
    detail.training.printText()
    if !detail.laps.isEmpty {
      print("\nlap  timer      distance   avg speed    avg HR  max HR")
      for lap in detail.laps {
        print(
          [
            Format.pad(String(lap.number), 4), Format.pad(Format.duration(lap.timer), 10),
            Format.pad(Format.distance(lap.distance), 10), Format.pad(lap.avgSpeed.map(Format.speed) ?? "-", 12),
            Format.pad(lap.avgHR.map { wholeNumberText($0) } ?? "-", 7),
            lap.maxHR.map { wholeNumberText($0) } ?? "-",
          ].joined(separator: " "))
      }
    }
    print("\nevents:")
    for event in detail.events {
      var text = "  \(Format.date(event.wall))  \(event.kind)"
      if let from = event.fromState, let to = event.toState { text += " \(from) → \(to)" }
      // A note's text is the rider's, typed on the phone.
      let detail = event.detail.map(TerminalText.escaped)
      if let incident = IncidentText.event(kind: event.kind, cause: event.cause, detail: detail, value: event.value) {
        text += " \(incident)"
      } else if let cause = event.cause {
        text += " (\(cause)\(detail.map { ": \($0)" } ?? ""))"
      } else if let detail {
        text += " \(detail)"
      }
      if event.kind == "lap", let value = event.value { text += " \(wholeNumberText(value))" }
      if event.kind == "recovered" {
        text += event.value.map { ", \(Format.duration($0)) away" } ?? ", time away unknown"
      }
      print(text)
    }
  }
}
