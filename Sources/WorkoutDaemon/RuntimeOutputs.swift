import BoardSim
import WorkoutControl
import WorkoutCore
import WorkoutStore
import WorkoutUpload

/// What the engine loop drives besides the store and systemd, given once when it is built.
struct RuntimeOutputs {
  var board = BoardOutputs()
  /// Devices the loop reads itself (gpsd on the real board), when the core says so.
  var engineReadDevices: [any EngineReadDevice] = []
  /// The phone page's live feed: whether a phone watches, and where the status goes after
  /// each commit while one does (made on the loop's thread, where the state is).
  var statusWanted: () -> Bool = { false }
  var statusCommitted: ((StatusReport) -> Void)?
  /// Called after the commit that made a session `ended` in the store (its summary went in
  /// before), and after a note from the phone on a session that has ended: the exports.
  var sessionEnded: ((Int64) -> Void)?
  /// Whether every configured export of a session is written (read through the given store):
  /// a low battery's power-off waits for it. Nil when nothing is exported.
  var exportsWritten: ((WorkoutStore, Int64) -> Bool)?
  /// The platforms the configuration names: status counts their upload jobs only.
  var uploadTargets: [UploadTarget] = []
}

/// What a board gives the loop: its LED and buzzer, its GPS-corrected clock, its replay.
struct BoardOutputs {
  /// Exit (code 0) once the replayed ride is over and its session has ended (`make run`).
  var exitWhenReplayEnds = false
  /// The real board's GPS-corrected clock: the engine's GPS clock decides when GPS time is
  /// trusted, and this clock then stamps with it (and the system clock is set, if configured).
  var gpsClock: GPSCorrectedClock?
  var setsSystemClock = false
  /// Shows a pattern on the status LED, and sounds the buzzer, when the board has them.
  var indicator: ((IndicatorPattern) -> Void)?
  var chirp: ((ChirpPattern) -> Void)?
  /// Whether a threaded replay (the simulated board in real or scaled time) is over.
  var replayFinished: () -> Bool = { false }
  /// The simulated board at full speed: the loop pulls each next second of the world itself.
  var pulledReplay: PulledReplay?
  /// Powers the board off cleanly (a low battery's end, once the ride is exported); nil where
  /// the board cannot, and the service only says it would.
  var powerOff: (() -> Void)?
}

/// The simulated board at full speed: the world's schedule, pulled a second at a time on its
/// virtual clock. (A class, so that the real board's loop tests a pointer for nil at each
/// wait: an optional tuple was copied through the runtime's generic tuple witnesses there.)
final class PulledReplay {
  var schedule: ReplaySchedule
  let clock: VirtualClock

  init(schedule: ReplaySchedule, clock: VirtualClock) {
    self.schedule = schedule
    self.clock = clock
  }
}
