import Foundation

/// Steps from the accelerometer, for a run with no footpod: each step a pulse of the
/// acceleration's magnitude about its 1 s mean, smoothed over 50 ms; a step is counted where the
/// pulse rises through a threshold (0.4 of its recent peaks, at least 0.5 m/s², so a board in a
/// pocket and one on an arm both count) after having fallen below the mean, at least 0.25 s
/// after the last (240 steps a minute at most). Constant memory: three filters and the last
/// eight steps' intervals. Tuned on the Oxford Step Counter's walks with their counted steps
/// (the trouser pocket's here within 3 %; its armband and hand walks within 0.3 %) and a run
/// (Tests/Fixtures/motion).
public struct StepCadence: Sendable, Hashable {
  private var mean = LowPass(seconds: 1)
  private var smooth = LowPass(seconds: 0.05)
  /// The recent peaks of the pulse, decaying over 2 s.
  private var envelope = 0.0
  private var lastTime: Double?
  private var armed = true
  /// When the last step was, and the intervals of the last eight: the pace is their mean (a
  /// pocket's steps come unevenly, the leg it is on harder, so no single interval is the pace).
  public private(set) var lastStep: Double?
  private var intervals: [Double] = []
  /// Steps counted since the start.
  public private(set) var steps = 0

  static let floor = 0.5
  static let fraction = 0.4
  static let shortest = 0.25
  /// A step's interval longer than this starts the cadence afresh (a stop, a walk).
  static let longest = 2.0
  static let kept = 8

  public init() {}

  /// Takes a sample; returns whether it was a step.
  @discardableResult
  public mutating func add(_ sample: MotionSample) -> Bool {
    let magnitude = sample.acceleration.magnitude
    let time = sample.time
    guard magnitude.isFinite else { return false }
    let pulse = smooth.add(magnitude - mean.add(magnitude, at: time), at: time)
    if let lastTime, time > lastTime { envelope *= exp(-(time - lastTime) / 2) }
    lastTime = time
    envelope = max(envelope, pulse)
    if pulse < 0 { armed = true }
    let threshold = max(Self.floor, Self.fraction * envelope)
    guard armed, pulse > threshold, lastStep.map({ time - $0 >= Self.shortest }) ?? true else { return false }
    if let lastStep, time - lastStep <= Self.longest {
      if intervals.count == Self.kept { intervals.removeFirst() }
      intervals.append(time - lastStep)
    } else {
      intervals.removeAll(keepingCapacity: true)
    }
    lastStep = time
    armed = false
    steps += 1
    return true
  }

  /// Steps a minute at `now`: nil before three steps in a row, or `longest` after the last.
  public func cadence(at now: Double) -> Double? {
    guard let lastStep, intervals.count >= 2, now - lastStep <= Self.longest else { return nil }
    let spanned = intervals.reduce(0, +)
    return spanned > 0 ? 60 * Double(intervals.count) / spanned : nil
  }
}
