/// When the board's battery warns the rider and when it ends the ride (`[battery]`), as a bike
/// computer does: a warning at a low level, then at a critical one the session stopped and ended
/// by the system (cause `lowBattery`), exported, and the board powered off while it still can.
public struct BatterySettings: Sendable, Hashable, Codable {
  /// At or below this charge, %, the `batteryLow` warning (LED, buzzer, the phone's banner).
  public var lowPercent: Double = 15
  /// At or below this charge, %, the critical countdown starts.
  public var criticalPercent: Double = 5
  /// A time left (from the gauge or this ride's drain) under this many minutes is critical too;
  /// nil: the level alone decides.
  public var criticalMinutesLeft: Double? = 10
  /// Percentage points a level must rise above a threshold before it can warn again, so a
  /// level that wobbles around it gives one event.
  public var hysteresis: Double = 2
  /// Seconds from the critical warning to the system's stop; a charger plugged in cancels it.
  public var countdown: Double = 60
  /// Seconds between the battery samples stored with the ride.
  public var sampleInterval: Double = 60
  /// Whether the board is powered off once the ended ride is exported.
  public var powerOff: Bool = true

  public init() {}
}
