import ArgumentParser
import WorkoutControl

/// `upload` is a group so that its other subcommands (`upload login strava`) sit beside
/// `upload SESSION --to TARGET`, which is its default: a first word that names no subcommand
/// is the session's.
struct Upload: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Send rides to the rider's platforms (intervals.icu, Strava, WebDAV).",
    usage: "workoutctl upload <session> --to <target> [--again]\nworkoutctl upload login strava",
    subcommands: [Send.self, Login.self], defaultSubcommand: Send.self)

  struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Queue a recorded session for a configured target, however old: workoutctl upload SESSION --to TARGET.",
      discussion:
        "Rides that end are queued by themselves for every configured target. A session sent already, or given up on, is sent again only with --again. The queue: workoutctl uploads."
    )
    @OptionGroup var locations: Locations
    @Argument(help: "The session's id (workoutctl sessions).") var session: Int64
    @Option(
      name: .customLong("to"), help: ArgumentHelp("The target: intervals.icu, strava or webdav.", valueName: "target"))
    var target: String
    @Flag(help: "Send it again if it was sent already or failed.") var again = false

    func run() throws {
      let reply = try request(
        ControlRequest(command: .queueUpload, session: session, target: target, again: again), to: locations,
        timeout: 20)
      print(reply.message ?? "session \(session) queued for \(target)")
    }
  }
}
