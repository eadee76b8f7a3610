import Foundation

/// A small seeded generator (SplitMix64), so randomised tests are reproducible.
public struct SeededRandom: RandomNumberGenerator {
  public var state: UInt64

  public init(seed: UInt64) { state = seed }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A standard normal sample (Box–Muller).
  public mutating func gaussian() -> Double {
    let u1 = max(Double(next() >> 11) / Double(1 << 53), 1e-300)
    let u2 = Double(next() >> 11) / Double(1 << 53)
    return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
  }
}
