import BoardLinux
import BoardSim
import Foundation
import LinuxSupport
import Logging
import WorkoutControl
import WorkoutCore

/// What the service runs on: a clock, the devices that feed the engine, and what the engine
/// drives (LED, buzzer, the clock GPS corrects, a replay). Two implementations:
/// `SimulatedBoard` (a recorded ride replayed through the same seams) and `LinuxBoard` (gpsd,
/// GPIO, I2C). The service is the same on both: it opens a board, attaches it to the loop,
/// starts its devices, and finishes it when the loop ends.
protocol Board: AnyObject {
  /// "sim" or "linux", as `workoutctl status` shows it.
  var name: String { get }
  var clock: any BoardClock { get }
  /// Started with the engine's sink once the loop is ready; stopped when it ends.
  var devices: [any DeviceSource] { get }
  /// When GPS time is believed and corrects this board's clock; nil where it needs none.
  var gpsClockSettings: GPSClockSettings? { get }
  /// The board time of the first tick, when it is not now (a fresh simulated world).
  var firstTick: Double? { get }
  /// The BLE and ANT+ sensors (started and stopped with the devices, changed by `workoutctl
  /// sensors`); nil where the board has no radios.
  var sensors: SensorRoster? { get }
  /// The board's outputs, its replay or its GPS-corrected clock, for the loop.
  var outputs: BoardOutputs { get }
  /// The loop has ended with `code`.
  func finish(code: Int32, log: Logger)
}

extension Board {
  var sensors: SensorRoster? { nil }
  var gpsClockSettings: GPSClockSettings? { nil }
  var firstTick: Double? { nil }
  func finish(code: Int32, log: Logger) {}
}

/// Why a board could not be opened: said in the log, and the exit code it warrants.
struct BoardSetupError: Error {
  var message: String
  var exitCode: Int32
}

enum Boards {
  /// The board the configuration names.
  static func open(_ configuration: DaemonConfiguration, log: Logger) throws(BoardSetupError) -> any Board {
    switch configuration.board {
    case .sim: try SimulatedBoard(configuration, log: log)
    case .linux: try LinuxBoard(configuration, log: log)
    }
  }
}

/// The simulated board: a recorded ride (`board/sim/rides`) replayed in real time, N× faster
/// (a world that survives a restart), or at full speed in virtual time pulled by the loop.
final class SimulatedBoard: Board {
  let name = "sim"
  let clock: any BoardClock
  private(set) var devices: [any DeviceSource] = []
  private(set) var firstTick: Double?
  private let exitAtEnd: Bool
  private let worldPath: String
  /// Real or scaled time: the replay runs on its own thread, as a device.
  private var threaded: SimulatedRide?
  /// Full speed: the loop pulls each next second of the world itself.
  private var pulled: (schedule: ReplaySchedule, clock: VirtualClock)?

  init(_ configuration: DaemonConfiguration, log: Logger) throws(BoardSetupError) {
    exitAtEnd = configuration.simExitAtEnd
    worldPath = configuration.simWorldPath
    guard let ridePath = configuration.simRide ?? BundledRide.find() else {
      throw BoardSetupError(
        message:
          "no ride to replay: set [sim] ride, or install the bundled one (looked in \(BundledRide.candidates().joined(separator: ", ")))",
        exitCode: ServiceExit.badConfiguration)
    }
    // The replayed receiver's fixes pass the gpsd source's filter, set as the real board's is.
    let fixQuality = configuration.gps.fixQuality
    // Read the whole file once now, so a malformed row is a start-up error with its line.
    let ride: ReplayRideHeader
    let schedule: ReplaySchedule
    do {
      let validated = try ReplayRideReader.validate(path: ridePath)
      ride = validated.header
      if !validated.pressesStart {
        log(
          .notice, "\(ridePath) has no start press: nothing is recorded unless a session is started (workoutctl start)")
      }
      schedule = ReplaySchedule(
        header: ride, rows: try ReplayRideReader(path: ridePath), countdown: configuration.countdown,
        fixQuality: fixQuality)
    } catch {
      throw BoardSetupError(message: "cannot replay \(ridePath): \(error)", exitCode: ServiceExit.badConfiguration)
    }
    guard let speed = configuration.simSpeed else {
      // Full speed: virtual time, pulled by the engine loop. Such a world is never resumed.
      let virtual = VirtualClock(
        epoch: "sim-virtual-" + UUID().uuidString.lowercased(), startTime: schedule.startTime,
        startWall: ride.startWall)
      clock = virtual
      pulled = (schedule, virtual)
      log(.notice, "simulated board: replaying \(ridePath) at full speed (virtual time)")
      return
    }
    let (world, resumed) = SimulatedWorld.resume(
      path: worldPath, ride: ride, speed: speed, startTime: schedule.startTime, hostNow: SystemClocks.boottime(),
      bootID: SystemClocks.bootID())
    do {
      try world.save(to: worldPath)
    } catch {
      throw BoardSetupError(
        message: "cannot save the simulated world to \(worldPath): \(error)", exitCode: ServiceExit.failure)
    }
    let simClock = SimulatedClock(world: world)
    clock = simClock
    if !resumed { firstTick = schedule.startTime }
    let replay = SimulatedRide(
      ridePath: ridePath, clock: simClock, countdown: configuration.countdown, resumingWorld: resumed,
      fixQuality: fixQuality)
    threaded = replay
    devices = [replay]
    log(
      .notice,
      "simulated board: \(resumed ? "resuming" : "starting") \(ridePath) at \(speed)× (world \(world.id), t=\(Int(simClock.worldTime())) s)"
    )
  }

  var outputs: BoardOutputs {
    var outputs = BoardOutputs(exitWhenReplayEnds: exitAtEnd)
    if let threaded { outputs.replayFinished = { threaded.finished } }
    outputs.pulledReplay = pulled.map { PulledReplay(schedule: $0.schedule, clock: $0.clock) }
    return outputs
  }

  func finish(code: Int32, log: Logger) {
    guard code == ServiceExit.success, threaded?.finished == true else { return }
    // The ride is over: a next start replays a new world.
    try? FileManager.default.removeItem(atPath: worldPath)
    log(.notice, "the simulated ride is over")
  }
}

/// The real board: gpsd, buttons on GPIO or input events, a BMP280/BME280 on I2C, the status
/// LED and buzzer on GPIO lines; its clock is the kernel's, corrected by GPS time once trusted.
final class LinuxBoard: Board {
  let name = "linux"
  let clock: any BoardClock
  let devices: [any DeviceSource]
  let gpsClockSettings: GPSClockSettings?
  private let correctedClock: GPSCorrectedClock
  private let setsSystemClock: Bool
  private let led: GPIOOutputLine?
  private let buzzer: GPIOOutputLine?
  private let powerOff: PowerOffRequest?
  private let log: Logger
  let sensors: SensorRoster?

  init(_ configuration: DaemonConfiguration, log: Logger) throws(BoardSetupError) {
    self.log = log
    powerOff =
      configuration.battery.supply != nil && configuration.battery.settings.powerOff
      ? PowerOffRequest(runtimeDirectory: configuration.runtimeDirectory) : nil
    let ant = configuration.ant.networkKeyFile.map {
      ANTStickParts(keyFile: $0, wheelCircumference: configuration.sensors.wheelCircumference, log: log)
    }
    sensors = SensorRoster(
      configured: configuration.sensors, stateDirectory: configuration.stateDirectory, log: log,
      ant: ant.map { parts in
        SensorRoster.ANTRadio(makeStick: parts.source, scan: parts.scan)
      })
    correctedClock = GPSCorrectedClock(base: LinuxBoardClock())
    clock = correctedClock
    gpsClockSettings = GPSClockSettings(earliestPlausible: earliestPlausibleGPSTime)
    setsSystemClock = configuration.gps.setSystemClock
    do {
      let board = try LinuxBoardDevices(configuration)
      devices = board.devices
      led = board.led
      buzzer = board.buzzer
    } catch {
      throw BoardSetupError(message: "bad device configuration: \(error)", exitCode: ServiceExit.badConfiguration)
    }
    log(.info, "linux board: \(LinuxBoardLibraries.description)")
    if devices.isEmpty && sensors?.chosen.isEmpty != false {
      log(.warning, "linux board: no devices are configured; recording with what there is (control socket only)")
    }
  }

  var outputs: BoardOutputs {
    var outputs = BoardOutputs(gpsClock: correctedClock, setsSystemClock: setsSystemClock)
    if let led { outputs.indicator = { led.play(OutputPattern($0)) } }
    if let buzzer { outputs.chirp = { buzzer.play(OutputPattern($0)) } }
    if let powerOff {
      let log = log
      outputs.powerOff = {
        do {
          try powerOff.request(reason: "low battery: the ride is ended and exported")
          log(.notice, "battery: powering off (asked systemd through \(powerOff.path))")
        } catch {
          log(.error, "battery: cannot ask for the poweroff (\(error)); the board stays on")
        }
      }
    }
    return outputs
  }
}
