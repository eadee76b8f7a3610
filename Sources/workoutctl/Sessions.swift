import ArgumentParser
import WorkoutControl
import WorkoutReports

struct Sessions: ParsableCommand {
  static let configuration = CommandConfiguration(abstract: "List recorded sessions, newest first.")
  @OptionGroup var locations: Locations
  @Flag(help: "Print JSON.") var json = false
  @Option(help: "How many sessions to list.") var limit = 50

  func run() throws {
    let store = try openStore(locations)
    let summaries = try store.sessions(limit: limit).map { try SessionSummaryJSON(record: $0, store: store) }
    if json {
      print(try ControlJSON.encode(summaries))
      return
    }
    if summaries.isEmpty {
      print("no sessions recorded in \(locations.database)")
      return
    }
    print("   id  state       activity       start (UTC)           timer      distance   points")
    for s in summaries {
      print(
        [
          Format.pad(String(s.id), 5, right: true), Format.pad(s.state, 11), Format.pad(s.activity, 14),
          Format.pad(s.start.map(Format.date) ?? "-", 21), Format.pad(Format.duration(s.timer), 10),
          Format.pad(Format.distance(s.distance), 10), String(s.points),
        ].joined(separator: " "))
    }
  }
}
