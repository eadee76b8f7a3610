import ArgumentParser
import Foundation
import WorkoutControl
import WorkoutStore

/// Where the service keeps its database and control socket; the same defaults as workoutd.
struct Locations: ParsableArguments {
  @Option(help: "The service's state directory (its database); default $STATE_DIRECTORY or /var/lib/workoutd.")
  var stateDir: String?

  @Option(help: "The service's runtime directory (its control socket); default /run/workoutd.")
  var runtimeDir: String?

  var database: String {
    (stateDir ?? ProcessInfo.processInfo.environment["STATE_DIRECTORY"] ?? "/var/lib/workoutd") + "/workoutd.db"
  }

  var socket: String {
    (runtimeDir ?? ProcessInfo.processInfo.environment["RUNTIME_DIRECTORY"] ?? "/run/workoutd") + "/control.sock"
  }
}

/// Prints an error and exits with 1.
func fail(_ message: String) -> ExitCode {
  FileHandle.standardError.write(Data("workoutctl: \(message)\n".utf8))
  return ExitCode(1)
}

/// Sends a command to the service and returns its reply, whatever it says (a button's refusal
/// is printed by the caller); a service that cannot be reached is the command's failure.
func send(_ command: ControlCommand, to locations: Locations) throws -> ControlReply {
  do {
    return try sendControl(ControlRequest(command: command), socketPath: locations.socket)
  } catch {
    throw fail("\(error)")
  }
}

/// Sends a request the service must accept: no reply, or a refusal (its message, else
/// `refused`), is the command's failure.
func request(
  _ request: ControlRequest, to locations: Locations, timeout: Double = 5, refused: String = "refused"
) throws -> ControlReply {
  let reply: ControlReply
  do {
    reply = try sendControl(request, socketPath: locations.socket, timeout: timeout)
  } catch {
    throw fail("\(error)")
  }
  guard reply.ok else { throw fail(reply.message ?? refused) }
  return reply
}

func openStore(_ locations: Locations) throws -> WorkoutStore {
  do {
    return try WorkoutStore.openForReading(at: locations.database)
  } catch {
    throw fail("\(error)")
  }
}
