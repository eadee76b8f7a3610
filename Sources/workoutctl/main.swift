import ArgumentParser
import WorkoutCore

struct Workoutctl: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "workoutctl",
    abstract: "Controls workoutd and reads its recorded sessions.",
    discussion:
      "start, pause, resume, lap and stop act exactly as the buttons do. Exit status 1 when a request is refused or fails.",
    version: WorkoutdVersion.string,
    subcommands: [
      Status.self, Sessions.self, Show.self, Start.self, Pause.self, Resume.self, Lap.self, Stop.self, Sensors.self,
      Zones.self, Activity.self, Export.self, CopyExports.self, StickCheck.self, ReportCopy.self, UsbDrive.self,
      Pair.self, Uploads.self, Upload.self, Fine.self,
    ])
}

Workoutctl.main(LeadingOptions.moved(Array(CommandLine.arguments.dropFirst())))
