/// What the inertial sensor says of one second: the road's feel and, when the board counts a
/// run's steps, their cadence. Posted once a second by the sensor's thread.
public struct MotionSecond: Sendable, Hashable, Codable {
  /// m/s², RMS about the second's own slow mean (`RoadFeel`).
  public var vibration: Double
  /// m/s², gravity in it.
  public var peak: Double
  /// Steps a minute, while steps come (`StepCadence`).
  public var stepCadence: Double?

  public init(vibration: Double, peak: Double, stepCadence: Double? = nil) {
    self.vibration = vibration
    self.peak = peak
    self.stepCadence = stepCadence
  }
}

/// Everything the service makes of the inertial sensor on the sensor's own thread, at its
/// rate (50–100 samples a second): the road's feel and the step cadence gathered into one
/// `MotionSecond` a second, and falls. Only these leave the thread, so the engine hears from
/// the sensor once a second and at a fall, never per sample. A pure value: the samples carry
/// their time.
public struct MotionTracker: Sendable, Hashable {
  public private(set) var falls: FallDetector
  private var feel = RoadFeelMeter()
  private var steps = StepCadence()
  /// The whole second the samples being gathered belong to.
  private var second: Double?

  /// What one sample completed: the second before it, a fall, or both.
  public struct Output: Sendable, Hashable {
    public var second: MotionSecond?
    public var fall: Fall?
  }

  public init(settings: IncidentSettings = IncidentSettings()) {
    falls = FallDetector(settings: settings)
  }

  public mutating func add(_ sample: MotionSample) -> Output {
    var output = Output()
    let whole = sample.time.rounded(.down)
    if let second, whole != second, let felt = feel.take() {
      output.second = MotionSecond(
        vibration: felt.vibration, peak: felt.peak, stepCadence: steps.cadence(at: sample.time))
    }
    second = whole
    feel.add(sample)
    _ = steps.add(sample)
    output.fall = falls.add(sample)
    return output
  }
}
