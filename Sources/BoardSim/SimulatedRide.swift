import Foundation
import LinuxSupport
import Synchronization
import WorkoutCore

/// The simulated board's devices: GPS, heart-rate strap and the rider's buttons, replaying a
/// recorded ride through the same seam as the real devices, on its own thread.
public final class SimulatedRide: DeviceSource {
  public let name: String
  private let clock: SimulatedClock
  private let ridePath: String
  private let countdown: Double
  private let fixQuality: FixQualitySettings
  private let skipsMissedSteps: Bool
  private let stopRequests = InputQueue<Bool>()
  private struct State {
    var thread: DeviceThread?
    var finished = false
  }
  private let state = Mutex(State())

  /// `resumingWorld`: the world existed before this start, so what happened while the service
  /// was away is skipped; a new world is replayed from its first step.
  /// `fixQuality`: the GPS filter's settings, as the real board's gpsd source has them.
  public init(
    ridePath: String, clock: SimulatedClock, countdown: Double, resumingWorld: Bool,
    fixQuality: FixQualitySettings = FixQualitySettings()
  ) {
    self.ridePath = ridePath
    self.clock = clock
    self.countdown = countdown
    self.fixQuality = fixQuality
    skipsMissedSteps = resumingWorld
    name = "simulated ride \((ridePath as NSString).lastPathComponent) at \(clock.world.speed)×"
  }

  /// Whether the whole ride has been replayed.
  public var finished: Bool { state.withLock { $0.finished } }

  public func start(sink: any InputSink) {
    do {
      let thread = try DeviceThread.start(name: "sim-ride") { [self] in run(sink: sink) }
      state.withLock { $0.thread = thread }
    } catch {
      sink.post(
        .device(DeviceStatus(device: .simulation, condition: .failing, detail: "cannot start the replay: \(error)")))
    }
  }

  /// Asks the replay to stop and waits for its thread (it waits on `stopRequests` between
  /// seconds, so it notices at once).
  public func stop() {
    stopRequests.post(true)
    let thread = state.withLock { state -> DeviceThread? in
      defer { state.thread = nil }
      return state.thread
    }
    thread?.join()
  }

  private func run(sink: any InputSink) {
    sink.post(.device(DeviceStatus(device: .simulation, condition: .available, detail: name)))
    let reader: ReplayRideReader
    do {
      reader = try ReplayRideReader(path: ridePath)
    } catch {
      sink.post(.device(DeviceStatus(device: .simulation, condition: .failing, detail: "\(error)")))
      return
    }
    var schedule = ReplaySchedule(header: reader.header, rows: reader, countdown: countdown, fixQuality: fixQuality)
    let startedAt = clock.worldTime()
    var skipped = 0
    while let step = schedule.next() {
      // The world went on while the service was away: what happened then is not replayed.
      if skipsMissedSteps && step.time < startedAt - 0.5 {
        skipped += 1
        continue
      }
      if skipped > 0 {
        sink.post(
          .device(
            DeviceStatus(
              device: .simulation, condition: .available,
              detail: "world resumed at t=\(Int(step.time)) s after \(skipped) s the service missed")))
        skipped = 0
      }
      if stopRequests.next(until: clock.worldDeadline(forBoardTime: step.time)) != nil { return }
      let moment = Moment(monotonic: step.time, wall: clock.world.rideStartWall + step.time)
      for input in step.inputs { sink.post(input, at: moment) }
      clock.publish(upTo: step.time)
    }
    clock.publish(upTo: .infinity)
    if let error = reader.error {
      sink.post(.device(DeviceStatus(device: .simulation, condition: .failing, detail: "replay stopped: \(error)")))
    }
    state.withLock { $0.finished = true }
  }
}
