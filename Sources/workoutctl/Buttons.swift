import ArgumentParser
import Foundation
import WorkoutControl

/// What every button-like command takes: where the service is, and how to print its reply.
struct ButtonOptions: ParsableArguments {
  @OptionGroup var locations: Locations
  @Flag(help: "Print the reply as JSON.") var json = false
}

/// A control command that acts like a button.
protocol ButtonCommand: ParsableCommand {
  static var command: ControlCommand { get }
  var options: ButtonOptions { get }
}

extension ButtonCommand {
  func run() throws {
    let reply = try send(Self.command, to: options.locations)
    if options.json {
      print(try ControlJSON.encode(reply))
    } else if reply.ok {
      if let lap = reply.lap {
        print("lap \(lap) marked")
      } else {
        print("\(Self.command.rawValue): session \(reply.state?.rawValue ?? "?")")
      }
    } else {
      FileHandle.standardError.write(
        Data(
          "workoutctl: \(Self.command.rawValue) refused: \(reply.message ?? reply.refusal ?? "unknown") (state \(reply.state?.rawValue ?? "?"))\n"
            .utf8))
    }
    if !reply.ok { throw ExitCode(1) }
  }
}

struct Start: ButtonCommand {
  static let configuration = CommandConfiguration(abstract: "Start a session (prepare, count down, run).")
  static let command = ControlCommand.start
  @OptionGroup var options: ButtonOptions
}

struct Pause: ButtonCommand {
  static let configuration = CommandConfiguration(abstract: "Pause the running session.")
  static let command = ControlCommand.pause
  @OptionGroup var options: ButtonOptions
}

struct Resume: ButtonCommand {
  static let configuration = CommandConfiguration(abstract: "Resume the paused session.")
  static let command = ControlCommand.resume
  @OptionGroup var options: ButtonOptions
}

struct Lap: ButtonCommand {
  static let configuration = CommandConfiguration(abstract: "Mark a lap.")
  static let command = ControlCommand.lap
  @OptionGroup var options: ButtonOptions
}

struct Stop: ButtonCommand {
  static let configuration = CommandConfiguration(abstract: "Stop and save the session.")
  static let command = ControlCommand.stop
  @OptionGroup var options: ButtonOptions
}

struct Fine: ButtonCommand {
  static let configuration = CommandConfiguration(
    abstract: "Say the rider is fine: the incident alarm (a fall while riding) stops.",
    discussion: "Any button on the board does the same. Refused when no alarm is on.")
  static let command = ControlCommand.fine
  @OptionGroup var options: ButtonOptions
}
