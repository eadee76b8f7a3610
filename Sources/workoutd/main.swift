import ArgumentParser
import BoardLinux
import Foundation
import LinuxSupport
import Logging
import UploadHTTP
import WorkoutCore
import WorkoutDaemon

// The uploader's request process (`UploadRequestProcess`): one request, its reply, exit.
if CommandLine.arguments.dropFirst().first == UploadRequestChild.argument { exit(UploadRequestChild.main()) }

// Termination signals are taken by a waiting thread: block them before any thread exists.
TerminationSignals.block()

struct Workoutd: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "workoutd",
    abstract: "Records workouts and rides from GPS, straps and buttons, crash-safe, into SQLite.",
    discussion: """
      Configuration is read from --config (default /etc/workoutd/workoutd.toml, which may be \
      absent: every key has a default); flags override it. Exit codes: 0 stopped cleanly, \
      1 runtime failure, 2 bad configuration, 3 a database that cannot be used as it is \
      (read-only to this user, from a newer release, an unwritable directory: the log says \
      which file and the fix).
      """,
    version: WorkoutdVersion.string
  )

  @Option(help: "The TOML configuration file.")
  var config: String?

  @Option(help: "The board: sim (replays a recorded ride) or linux (the real devices).")
  var board: String?

  @Option(help: "Simulated board speed: 1 is real time, 60 replays a minute per second, max as fast as it can store.")
  var speed: String?

  @Option(help: "Simulated board: the ride file to replay.")
  var ride: String?

  @Flag(help: "Simulated board: exit once the ride has been replayed and its session ended (it must press start).")
  var exitAtEnd = false

  @Option(help: "Where the database lives (default $STATE_DIRECTORY or /var/lib/workoutd).")
  var stateDir: String?

  @Option(help: "Where the control socket lives (default $RUNTIME_DIRECTORY or /run/workoutd).")
  var runtimeDir: String?

  @Option(help: "error, warning, notice, info or debug.")
  var logLevel: String?

  @Option(
    help: ArgumentHelp(
      "Send the platforms' requests through this socket (workoutd-upload.socket), not a child process.",
      valueName: "path"))
  var uploadSocket: String?

  @Flag(help: "Check the configuration, print it and exit.")
  var checkConfig = false

  @Option(
    help: ArgumentHelp(
      "Set up an IIO inertial sensor's buffer for the service (its kernel name, iio:device0) and exit: root's, run by workoutd-imu@.service.",
      valueName: "device"))
  var setupImu: String?

  @Option(
    help: ArgumentHelp(
      "Exit 0 if the configuration reads the IIO sensor (its kernel name), else 1 with why: workoutd-imu@.service's condition.",
      valueName: "device"))
  var imuWanted: String?

  mutating func run() throws {
    if let setupImu {
      do {
        for step in try IIOBufferSetup().run(device: setupImu) { print("\(setupImu): \(step)") }
        return
      } catch {
        FileHandle.standardError.write(Data("workoutd: \(error)\n".utf8))
        throw ExitCode(1)
      }
    }
    ProcessMemory.useOneHeapArena()  // before any thread: see its comment
    let path = config ?? "/etc/workoutd/workoutd.toml"
    var configuration: DaemonConfiguration
    do {
      configuration = try DaemonConfiguration.load(path: path, required: config != nil)
      try applyFlags(to: &configuration)
    } catch {
      FileHandle.standardError.write(Data("workoutd: bad configuration:\n\(error)\n".utf8))
      throw ExitCode(ServiceExit.badConfiguration)
    }
    if let imuWanted {
      if let reason = configuration.imu.leftOff(driver: IIOBufferSetup().driverName(of: imuWanted)) {
        print("\(imuWanted): \(reason) in \(path): its buffer is left off")
        throw ExitCode(1)
      }
      return
    }
    if checkConfig {
      let problems = StartupCheck.problems(configuration)
      guard problems.isEmpty else {
        FileHandle.standardError.write(Data("workoutd: bad configuration:\n\(problems.joined(separator: "\n"))\n".utf8))
        throw ExitCode(ServiceExit.badConfiguration)
      }
      let source =
        config == nil && !FileManager.default.fileExists(atPath: path)
        ? "no configuration file at \(path): the defaults are used, and valid"
        : "configuration \(path) is valid"
      print(
        "\(source): board \(configuration.board.rawValue), activity \(configuration.activity.rawValue), database \(configuration.databasePath), control socket \(configuration.controlSocketPath)"
      )
      return
    }
    let log = Logger.service(minimum: configuration.logLevel)
    let code = WorkoutService.run(configuration: configuration, log: log)
    if code != 0 { throw ExitCode(code) }
  }

  private func applyFlags(to configuration: inout DaemonConfiguration) throws(ConfigurationError) {
    var problems: [String] = []
    if let board {
      if let kind = DaemonConfiguration.BoardKind(rawValue: board) {
        configuration.board = kind
      } else {
        problems.append("--board must be sim or linux (got \"\(board)\")")
      }
    }
    if let speed {
      if speed == "max" {
        configuration.simSpeed = nil
      } else if let value = Double(speed), value > 0, value <= 1000 {
        configuration.simSpeed = value
      } else {
        problems.append("--speed must be a number above 0 and at most 1000, or max (got \"\(speed)\")")
      }
    }
    if let ride { configuration.simRide = ride }
    if exitAtEnd { configuration.simExitAtEnd = true }
    if let stateDir { configuration.stateDirectory = stateDir }
    if let runtimeDir { configuration.runtimeDirectory = runtimeDir }
    if let uploadSocket {
      if uploadSocket.hasPrefix("/") {
        configuration.upload.senderSocket = uploadSocket
      } else {
        problems.append("--upload-socket must be an absolute path (got \"\(uploadSocket)\")")
      }
    }
    if let logLevel {
      if let level = LogLevel.allCases.first(where: { $0.name == logLevel }) {
        configuration.logLevel = level
      } else {
        problems.append("--log-level must be one of \(LogLevel.allCases.map(\.name).joined(separator: ", "))")
      }
    }
    if !problems.isEmpty { throw ConfigurationError(problems: problems) }
  }
}

Workoutd.main()
