import Testing
import WorkoutCore
import WorkoutDaemon

struct ConfigurationTests {
  let noSystemd: [String: String] = [:]

  @Test func anEmptyFileMeansEveryDefault() throws {
    let configuration = try DaemonConfiguration.parse("", file: "t.toml", environment: noSystemd)
    #expect(configuration == DaemonConfiguration(environment: noSystemd))
    #expect(configuration.board == .sim)
    #expect(configuration.databasePath == "/var/lib/workoutd/workoutd.db")
    #expect(configuration.controlSocketPath == "/run/workoutd/control.sock")
    #expect(configuration.engineSettings.autoPause == ActivityType.cycling.defaultAutoPause)
    #expect(configuration.engineSettings.countdown == 3)
  }

  @Test func systemdsDirectoriesAreTheDefaults() {
    let configuration = DaemonConfiguration(environment: [
      "STATE_DIRECTORY": "/var/lib/workoutd:/var/lib/other", "RUNTIME_DIRECTORY": "/run/workoutd",
    ])
    #expect(configuration.stateDirectory == "/var/lib/workoutd")
    #expect(configuration.runtimeDirectory == "/run/workoutd")
  }

  @Test func theInstalledDefaultFileIsValid() throws {
    let configuration = try DaemonConfiguration.load(
      path: repositoryRoot + "/board/workoutd.toml", required: true, environment: noSystemd)
    #expect(configuration.board == .linux)
  }

  @Test func keysOverrideDefaults() throws {
    let configuration = try DaemonConfiguration.parse(
      """
      [service]
      board = "linux"
      state_directory = "/data/rides"
      log_level = "debug"
      [session]
      activity = "running"
      countdown_seconds = 0
      [auto_pause]
      stop_after_seconds = 4
      [sim]
      speed = "max"
      """, file: "t.toml", environment: noSystemd)
    #expect(configuration.board == .linux)
    #expect(configuration.databasePath == "/data/rides/workoutd.db")
    #expect(configuration.logLevel == .debug)
    #expect(configuration.simSpeed == nil)
    let settings = configuration.engineSettings
    #expect(settings.activity == .running)
    #expect(settings.countdown == 0)
    #expect(settings.autoPause?.stopAfter == 4)
    #expect(settings.autoPause?.stopSpeed == ActivityType.running.defaultAutoPause?.stopSpeed)
  }

  @Test func autoPauseCanBeSwitchedOffAndIsOffIndoors() throws {
    let off = try DaemonConfiguration.parse("[auto_pause]\nenabled = false\n", file: "t", environment: noSystemd)
    #expect(off.engineSettings.autoPause == nil)
    let indoors = try DaemonConfiguration.parse(
      "[session]\nactivity = \"indoorCycling\"\n", file: "t", environment: noSystemd)
    #expect(indoors.engineSettings.autoPause == nil)
  }

  @Test func everyProblemIsReportedAtOnce() {
    do {
      _ = try DaemonConfiguration.parse(
        """
        colour = "red"
        [service]
        board = 3
        state_directory = "relative/path"
        [auto_pause]
        stop_speed = 2.0
        resume_speed = 1.0
        """, file: "t.toml", environment: noSystemd)
      Issue.record("expected an error")
    } catch {
      #expect(error.problems.count == 4, "\(error.problems)")
      #expect(error.description.contains("t.toml: unknown key \"colour\" outside any section"))
      #expect(error.description.contains("[service] board must be a string"))
      #expect(error.description.contains("[service] state_directory must be an absolute path"))
      #expect(error.description.contains("[auto_pause] resume_speed must not be below stop_speed"))
    }
  }
}

let repositoryRoot = #filePath.split(separator: "/").dropLast(3).reduce("") { $0 + "/" + $1 }
