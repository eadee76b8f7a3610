import WorkoutCore
import WorkoutStore

/// The power-off a critical battery asks for (`RuntimeAction.powerOff`): once the ride the
/// system ended is written and exported, or after `exportWait` seconds all the same (a board
/// that browns out saves nothing more by waiting), the board's `powerOff`; where the board has
/// none, one log line says it would.
struct LowBatteryPowerOff {
  /// The session whose exports it waits for; nil: none (the board was idle).
  let sessionID: Int64?
  /// Host time after which it powers off whatever the exports' state.
  let giveUpAt: Double

  /// Seconds the exports of the ended ride are waited for.
  static let exportWait: Double = 60
  /// Seconds between looks at the exports while waiting.
  static let checkInterval: Double = 1

  init(sessionID: Int64?, host: Double) {
    self.sessionID = sessionID
    giveUpAt = host + Self.exportWait
  }

  /// Whether the ride is ended and its exports written (`exportsWritten` nil: no exports
  /// configured, so ended is enough).
  func isReady(store: WorkoutStore, exportsWritten: ((WorkoutStore, Int64) -> Bool)?) -> Bool {
    guard let id = sessionID else { return true }
    guard (try? store.session(id: id))??.state == SessionState.ended.rawValue else { return false }
    return exportsWritten?(store, id) ?? true
  }
}
