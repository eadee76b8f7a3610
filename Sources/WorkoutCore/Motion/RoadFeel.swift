/// What the road felt like through the board over one recorded second: the vibration (the RMS of
/// the acceleration's magnitude about its own slow mean, so gravity and a steady lean are not
/// in it) and the peak magnitude (gravity in it: a kerb's or a pothole's jolt).
public struct RoadFeel: Sendable, Hashable, Codable {
  /// m/s², RMS.
  public var vibration: Double
  /// m/s².
  public var peak: Double
  /// The samples it was measured from.
  public var samples: Int

  public init(vibration: Double, peak: Double, samples: Int) {
    self.vibration = vibration
    self.peak = peak
    self.samples = samples
  }
}

/// Gathers the road feel of the samples since the last `take()`, in constant memory.
public struct RoadFeelMeter: Sendable, Hashable {
  /// The slow mean the vibration is measured about: 1 s passes a rider's pedalling sway
  /// (about 1 Hz) into the mean and keeps the road's buzz (5 Hz and up) out of it.
  private var mean = LowPass(seconds: 1)
  private var sumOfSquares = 0.0
  private var peak = 0.0
  private var count = 0

  public init() {}

  public mutating func add(_ sample: MotionSample) {
    let magnitude = sample.acceleration.magnitude
    guard magnitude.isFinite else { return }
    let deviation = magnitude - (mean.value ?? magnitude)
    mean.add(magnitude, at: sample.time)
    sumOfSquares += deviation * deviation
    peak = max(peak, magnitude)
    count += 1
  }

  /// The road feel since the last take, and a fresh start; nil without a sample.
  public mutating func take() -> RoadFeel? {
    defer {
      sumOfSquares = 0
      peak = 0
      count = 0
    }
    guard count > 0 else { return nil }
    return RoadFeel(vibration: (sumOfSquares / Double(count)).squareRoot(), peak: peak, samples: count)
  }
}
