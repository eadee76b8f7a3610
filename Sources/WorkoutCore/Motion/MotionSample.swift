import Foundation

/// A vector in the inertial sensor's own axes.
public struct Vector3: Sendable, Hashable, Codable {
  public var x: Double
  public var y: Double
  public var z: Double

  public init(_ x: Double, _ y: Double, _ z: Double) {
    self.x = x
    self.y = y
    self.z = z
  }

  public static let zero = Vector3(0, 0, 0)

  public var magnitude: Double { (x * x + y * y + z * z).squareRoot() }

  public static func + (lhs: Vector3, rhs: Vector3) -> Vector3 { Vector3(lhs.x + rhs.x, lhs.y + rhs.y, lhs.z + rhs.z) }
  public static func - (lhs: Vector3, rhs: Vector3) -> Vector3 { Vector3(lhs.x - rhs.x, lhs.y - rhs.y, lhs.z - rhs.z) }
  public static func * (lhs: Vector3, rhs: Double) -> Vector3 { Vector3(lhs.x * rhs, lhs.y * rhs, lhs.z * rhs) }

  /// The angle between two vectors, degrees (0 when either is zero).
  public func degrees(to other: Vector3) -> Double {
    let lengths = magnitude * other.magnitude
    guard lengths > 0 else { return 0 }
    let cosine = (x * other.x + y * other.y + z * other.z) / lengths
    return acos(min(1, max(-1, cosine))) * 180 / .pi
  }
}

/// One sample of the board's inertial sensor, as the kernel's IIO subsystem gives it once
/// scaled: acceleration in m/s² with gravity in it (a board at rest reads 1 g, up), and the
/// angular velocity in rad/s when the sensor has a gyroscope.
public struct MotionSample: Sendable, Hashable {
  /// Monotonic seconds.
  public var time: Double
  public var acceleration: Vector3
  public var rotation: Vector3?

  public init(time: Double, acceleration: Vector3, rotation: Vector3? = nil) {
    self.time = time
    self.acceleration = acceleration
    self.rotation = rotation
  }

  /// Standard gravity, m/s² (ISO 80000-3).
  public static let gravity = 9.80665
}

/// An exponential low-pass filter with time constant `seconds`, for samples at an uneven
/// pace: each sample's weight follows the time since the last one. A sample at or before the
/// last one's time (an IIO timestamp repeated, a record out of order) weighs as if no time
/// passed, and the last time stays where it was.
public struct LowPass: Sendable, Hashable {
  public var seconds: Double
  public private(set) var value: Double?
  private var lastTime: Double?
  /// The last step's length and weight: at a steady rate every step is the same, and exp() is
  /// most of a sample's cost.
  private var lastStep = 0.0
  private var lastWeight = 0.0

  public init(seconds: Double) {
    self.seconds = seconds
  }

  @discardableResult
  public mutating func add(_ sample: Double, at time: Double) -> Double {
    guard let value, let lastTime, time > lastTime else {
      if self.value == nil { self.value = sample }
      // Never backwards: the next sample's weight is the time since the latest one.
      lastTime = max(lastTime ?? time, time)
      return self.value ?? sample
    }
    let step = time - lastTime
    if step != lastStep {
      lastStep = step
      lastWeight = 1 - exp(-step / seconds)
    }
    let weight = lastWeight
    let next = value + (sample - value) * weight
    self.value = next
    self.lastTime = time
    return next
  }
}

/// `LowPass` on each axis of a vector.
public struct VectorLowPass: Sendable, Hashable {
  private var x: LowPass
  private var y: LowPass
  private var z: LowPass

  public init(seconds: Double) {
    x = LowPass(seconds: seconds)
    y = LowPass(seconds: seconds)
    z = LowPass(seconds: seconds)
  }

  public var value: Vector3? {
    guard let x = x.value, let y = y.value, let z = z.value else { return nil }
    return Vector3(x, y, z)
  }

  public mutating func add(_ sample: Vector3, at time: Double) {
    x.add(sample.x, at: time)
    y.add(sample.y, at: time)
    z.add(sample.z, at: time)
  }
}
