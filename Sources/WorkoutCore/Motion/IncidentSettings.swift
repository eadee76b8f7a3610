/// When an incident counts as suspected and when as confirmed (config section `[imu]`).
public struct IncidentSettings: Sendable, Hashable, Codable {
  /// m/s²: the acceleration's magnitude an impact exceeds.
  public var impact: Double
  /// Degrees the board's "down" must have turned between before the impact and the stillness
  /// after it: a bike on its side, not one stopped upright after a pothole.
  public var tilt: Double
  /// Seconds of stillness after the impact before an incident is suspected.
  public var stillFor: Double
  /// Seconds after the impact within which the stillness must begin.
  public var settleWithin: Double
  /// m/s²: how far the magnitude may stray from 1 g and still be stillness.
  public var stillAcceleration: Double
  /// rad/s: the most rotation stillness has (with a gyroscope).
  public var stillRotation: Double
  /// Seconds of riding before the impact that arm the detector: an impact at a stop (a bike
  /// laid down, a board knocked off a table) is not an incident.
  public var ridingWithin: Double
  /// Seconds from suspected to confirmed, for the rider to say "I'm fine".
  public var countdown: Double

  public init(
    impact: Double = 3 * MotionSample.gravity, tilt: Double = 45, stillFor: Double = 10, settleWithin: Double = 15,
    stillAcceleration: Double = 0.15 * MotionSample.gravity, stillRotation: Double = 0.35,
    ridingWithin: Double = 5, countdown: Double = 30
  ) {
    self.impact = impact
    self.tilt = tilt
    self.stillFor = stillFor
    self.settleWithin = settleWithin
    self.stillAcceleration = stillAcceleration
    self.stillRotation = stillRotation
    self.ridingWithin = ridingWithin
    self.countdown = countdown
  }
}
