import Foundation
import LinuxSupport
import Synchronization
import WorkoutCore

/// The simulated board's world: a replayed ride running at `speed` times real time. It is kept
/// in a small file in the state directory, because the world does not stop when the service
/// does: after a kill -9 and a restart the ride has moved on, as a real one would have.
public struct SimulatedWorld: Codable, Sendable, Hashable {
  public var id: String
  /// The host boot the anchor was taken in (CLOCK_BOOTTIME means nothing across boots).
  public var hostBootID: String
  /// A host CLOCK_BOOTTIME reading and the board time it corresponds to.
  public var anchorHost: Double
  public var anchorBoard: Double
  public var speed: Double
  /// The ride file being replayed, and its t = 0 in UTC seconds.
  public var ridePath: String
  public var rideStartWall: Double

  public func boardTime(atHost host: Double) -> Double {
    anchorBoard + (host - anchorHost) * speed
  }

  /// Loads the world from `path` if it is still alive (same host boot, same ride); otherwise a
  /// new world whose board clock starts at `startTime`. A different speed re-anchors the clock
  /// without a jump.
  public static func resume(
    path: String, ride: ReplayRideHeader, speed: Double, startTime: Double, hostNow: Double, bootID: String
  ) -> (world: SimulatedWorld, resumed: Bool) {
    if let data = FileManager.default.contents(atPath: path),
      var world = try? JSONDecoder().decode(SimulatedWorld.self, from: data),
      world.hostBootID == bootID, world.ridePath == ride.source
    {
      if world.speed != speed {
        world.anchorBoard = world.boardTime(atHost: hostNow)
        world.anchorHost = hostNow
        world.speed = speed
      }
      return (world, true)
    }
    let world = SimulatedWorld(
      id: UUID().uuidString.lowercased(), hostBootID: bootID, anchorHost: hostNow, anchorBoard: startTime,
      speed: speed, ridePath: ride.source, rideStartWall: ride.startWall)
    return (world, false)
  }

  /// Writes the world atomically (write a temporary file, then rename over the old one).
  public func save(to path: String) throws {
    let data = try JSONEncoder().encode(self)
    try data.write(to: URL(fileURLWithPath: path), options: .atomic)
  }
}

/// The board clock of a simulated world: board seconds run `speed` times faster than the
/// host's, and the wall clock is the recorded ride's own (so points carry the ride's dates).
///
/// The world is the truth: the clock never runs ahead of what the world has published (the
/// replay's last posted second). On a busy host the replay thread can be starved; without this
/// the engine would tick through seconds whose readings have not been posted yet.
public final class SimulatedClock: BoardClock {
  public let world: SimulatedWorld
  /// The world's last published second: at first, its present (a resumed world's past was
  /// skipped; a new world has not begun).
  private let horizon: Mutex<Double>

  public init(world: SimulatedWorld) {
    self.world = world
    horizon = Mutex(world.boardTime(atHost: SystemClocks.boottime()))
  }

  public var epoch: String { "sim-" + world.id }
  public var wallTrusted: Bool { true }

  /// The world has posted everything up to board time `time` (infinity: the world is over and
  /// the clock runs freely).
  public func publish(upTo time: Double) {
    horizon.withLock { $0 = Swift.max($0, time) }
  }

  /// The world's own time, running on whatever has been published (for the replay itself).
  public func worldTime() -> Double {
    world.boardTime(atHost: SystemClocks.boottime())
  }

  /// When, on the host's CLOCK_MONOTONIC, the world reaches board time `time`.
  public func worldDeadline(forBoardTime time: Double) -> Double {
    SystemClocks.monotonic() + (time - worldTime()) / world.speed
  }

  public func now() -> Moment {
    let board = Swift.min(worldTime(), horizon.withLock { $0 })
    return Moment(monotonic: board, wall: world.rideStartWall + board)
  }

  /// Infinity for a time beyond what the world has published: only the world's next post
  /// (which wakes the engine's queue) gets there.
  public func hostDeadline(forBoardTime monotonic: Double) -> Double {
    guard monotonic <= horizon.withLock({ $0 }) else { return .infinity }
    return worldDeadline(forBoardTime: monotonic)
  }
}

/// A board clock that only moves when told to: the simulated board at full speed, where the
/// engine pulls the next second of the world as soon as it has stored the last one, so the
/// replay runs exactly as fast as the engine and the store can go.
public final class VirtualClock: BoardClock {
  public let epoch: String
  private let startWall: Double
  private let board: Mutex<Double>

  public init(epoch: String, startTime: Double, startWall: Double) {
    self.epoch = epoch
    self.startWall = startWall
    board = Mutex(startTime)
  }

  public var wallTrusted: Bool { true }

  public func now() -> Moment {
    let time = board.withLock { $0 }
    return Moment(monotonic: time, wall: startWall + time)
  }

  /// Moves board time forward to `time` (never back).
  public func advance(to time: Double) {
    board.withLock { $0 = Swift.max($0, time) }
  }

  /// A board time not yet reached is never reached by waiting: only `advance` gets there.
  public func hostDeadline(forBoardTime monotonic: Double) -> Double {
    monotonic <= now().monotonic ? 0 : .infinity
  }
}
