import ArgumentParser
import Foundation
import WorkoutControl
import WorkoutUpload

struct Uploads: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "List the upload queue: each ride's uploads to the platforms, newest session first.",
    discussion:
      "The next try is when a queued upload is tried again (the network or the platform failed it); a failed one is not, until `workoutctl upload SESSION --to TARGET --again`."
  )
  @OptionGroup var locations: Locations
  @Option(help: "Only this session's uploads.") var session: Int64?
  @Flag(help: "Print JSON.") var json = false

  func run() throws {
    let reply = try request(ControlRequest(command: .listUploads, session: session), to: locations, timeout: 20)
    let jobs = reply.uploads ?? []
    if json {
      print(try ControlJSON.encode(jobs))
      return
    }
    guard !jobs.isEmpty else {
      print(session.map { "no uploads of session \($0)" } ?? "no uploads (workoutctl upload SESSION --to TARGET)")
      return
    }
    print(Self.table(jobs, now: Date().timeIntervalSince1970))
  }

  /// The jobs as a table: session, target, state, attempts, next try, the platform's id, reason.
  /// The platform's words are escaped: what a server sent never drives the terminal.
  static func table(_ jobs: [UploadJob], now: Double) -> String {
    var lines = [
      row(["session", "target", "state", "tries", "next try (UTC)", "platform id", "reason"])
    ]
    for job in jobs {
      let next: String =
        switch job.state {
        case .queued, .waiting: job.retryAt.map { $0 > now ? Format.date($0) : "now" } ?? "now"
        case .sending: "now"
        case .done, .failed: "-"
        }
      let id = job.platformID ?? job.platformUploadID.map { "upload \($0)" } ?? "-"
      lines.append(
        row([
          String(job.sessionID), job.target.rawValue, job.state.rawValue, String(job.attempts), next,
          TerminalText.escaped(id.prefix(20)), TerminalText.escaped((job.reason ?? "").prefix(120)),
        ]))
    }
    return lines.joined(separator: "\n")
  }

  /// One line of the table: its columns padded to their widths, numbers to the right.
  private static func row(_ cells: [String]) -> String {
    let widths = [(7, true), (13, false), (7, false), (5, true), (20, false), (20, false)]
    let padded = zip(cells, widths).map { Format.pad($0, $1.0, right: $1.1) } + cells.dropFirst(widths.count)
    return padded.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
  }
}
