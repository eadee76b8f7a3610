/// Best means over fixed windows of one-second samples (5 s, 1 min, ...), kept in one ring as
/// long as the longest window, so memory is fixed however long the ride: the mean of each
/// window ending at the newest sample, and the best of those so far.
public struct BestEfforts: Sendable, Hashable {
  /// Window lengths in samples (seconds), shortest first.
  public let windows: [Int]
  private var ring: [UInt16]
  private var sums: [Int]
  public private(set) var best: [Double?]
  /// Samples taken in all.
  public private(set) var count = 0

  public init(windows: [Int]) {
    precondition(!windows.isEmpty && windows.allSatisfy { $0 > 0 })
    self.windows = windows.sorted()
    ring = Array(repeating: 0, count: self.windows.last!)
    sums = Array(repeating: 0, count: windows.count)
    best = Array(repeating: nil, count: windows.count)
  }

  /// Adds a sample (clamped to 0...65535: watts and beats per minute fit).
  public mutating func add(_ value: Int) {
    let sample = UInt16(clamping: value)
    let capacity = ring.count
    for index in windows.indices {
      sums[index] += Int(sample)
      // The sample leaving this window, read before the ring slot is reused.
      if count >= windows[index] { sums[index] -= Int(ring[(count - windows[index]) % capacity]) }
    }
    ring[count % capacity] = sample
    count += 1
    for index in windows.indices where count >= windows[index] {
      let mean = Double(sums[index]) / Double(windows[index])
      best[index] = max(best[index] ?? mean, mean)
    }
  }

  /// The mean of the last `window` samples, once that many were taken.
  public func current(_ window: Int) -> Double? {
    guard let index = windows.firstIndex(of: window), count >= window else { return nil }
    return Double(sums[index]) / Double(window)
  }

  /// The best mean over `window` so far, once that many samples were taken.
  public func best(_ window: Int) -> Double? {
    windows.firstIndex(of: window).flatMap { best[$0] }
  }
}

extension BestEfforts: Codable {
  private enum CodingKeys: String, CodingKey { case windows, ring, sums, best, count }

  /// The sample numbers the ring holds, oldest first (sample k is at `ring[k % capacity]`).
  private var held: Range<Int> { max(0, count - ring.count)..<count }

  // The ring goes as base64 of its little-endian bytes, only the samples it holds, oldest
  // first: nothing for a channel that never reported, at most 3.2 KB for 1,200 samples, in a
  // checkpoint written once a minute (a JSON array would be twice that).
  public func encode(to encoder: Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(windows, forKey: .windows)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(held.count * 2)
    for k in held {
      let sample = ring[k % ring.count]
      bytes += [UInt8(sample & 0xFF), UInt8(sample >> 8)]
    }
    try container.encode(Base64.encode(bytes), forKey: .ring)
    try container.encode(sums, forKey: .sums)
    try container.encode(best, forKey: .best)
    try container.encode(count, forKey: .count)
  }

  public init(from decoder: Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    let windows = try container.decode([Int].self, forKey: .windows)
    guard !windows.isEmpty, windows.allSatisfy({ $0 > 0 }), windows == windows.sorted() else {
      throw DecodingError.dataCorruptedError(forKey: .windows, in: container, debugDescription: "bad windows")
    }
    self.init(windows: windows)
    count = max(0, try container.decode(Int.self, forKey: .count))
    guard let bytes = Base64.decode(try container.decode(String.self, forKey: .ring)), bytes.count == held.count * 2
    else { throw DecodingError.dataCorruptedError(forKey: .ring, in: container, debugDescription: "bad ring") }
    for (offset, k) in held.enumerated() {
      ring[k % ring.count] = UInt16(bytes[2 * offset]) | UInt16(bytes[2 * offset + 1]) << 8
    }
    let sums = try container.decode([Int].self, forKey: .sums)
    let best = try container.decode([Double?].self, forKey: .best)
    guard sums.count == windows.count, best.count == windows.count else {
      throw DecodingError.dataCorruptedError(forKey: .sums, in: container, debugDescription: "one per window")
    }
    self.sums = sums
    self.best = best
  }
}

/// Which seconds average power counts: all of them (coasting at 0 W included, the default of
/// Garmin's "Data Averaging" and of the training platforms), or only those pedalled.
public enum PowerAveraging: String, Sendable, Hashable, Codable, CaseIterable {
  case withZeros
  case withoutZeros
}

/// Power and heart-rate metrics of a ride, from one sample a recorded second (FIELD-NOTES
/// "Zone/metric conventions"; Coggan and Allen, Training and Racing with a Power Meter):
/// work, average power with and without zeros, normalized power (30 s rolling mean, 4th power,
/// mean, 4th root), IF and TSS against FTP, best 5 s / 1 min / 5 min / 20 min power, best
/// 20 min heart rate, and an FTP estimate (95 % of the best 20 min power). Fixed memory.
public struct TrainingMetrics: Sendable, Hashable, Codable {
  public static let powerWindows = [5, 30, 60, 300, 1200]
  public static let heartRateWindows = [1200]
  /// Normalized power's rolling window, s.
  public static let normalizingWindow = 30

  /// Joules.
  public private(set) var work: Double = 0
  public private(set) var powerSamples = 0
  public private(set) var powerSum = 0
  public private(set) var nonZeroSamples = 0
  /// Sum of the 4th powers of the 30 s rolling means, and how many there were.
  public private(set) var rollingFourthSum: Double = 0
  public private(set) var rollingCount = 0
  public private(set) var power = BestEfforts(windows: powerWindows)
  public private(set) var heartRate = BestEfforts(windows: heartRateWindows)

  public init() {}

  /// One recorded second's power (W), if the point had one.
  public mutating func addPower(_ watts: Int) {
    let watts = max(0, watts)
    work += Double(watts)
    powerSamples += 1
    powerSum += watts
    if watts > 0 { nonZeroSamples += 1 }
    power.add(watts)
    if let rolling = power.current(Self.normalizingWindow) {
      let square = rolling * rolling
      rollingFourthSum += square * square
      rollingCount += 1
    }
  }

  /// One recorded second's heart rate (count/min), if the point had one.
  public mutating func addHeartRate(_ bpm: Int) {
    heartRate.add(max(0, bpm))
  }

  /// Average power over the seconds with power, zeros (coasting) included.
  public var averagePower: Double? { powerSamples > 0 ? Double(powerSum) / Double(powerSamples) : nil }
  /// Average power over the seconds the rider pedalled.
  public var averagePowerWithoutZeros: Double? {
    nonZeroSamples > 0 ? Double(powerSum) / Double(nonZeroSamples) : nil
  }

  /// Average power as the rider chose to count it.
  public func averagePower(_ averaging: PowerAveraging) -> Double? {
    averaging == .withZeros ? averagePower : averagePowerWithoutZeros
  }

  /// Normalized power, W: nil before the first 30 s of power.
  public var normalizedPower: Double? {
    rollingCount > 0 ? (rollingFourthSum / Double(rollingCount)).squareRoot().squareRoot() : nil
  }

  /// Intensity factor: NP / FTP.
  public func intensityFactor(ftp: Double) -> Double? {
    guard ftp > 0, let np = normalizedPower else { return nil }
    return np / ftp
  }

  /// Training stress score: seconds × NP × IF / (FTP × 3600) × 100, over the seconds with power.
  public func trainingStressScore(ftp: Double) -> Double? {
    guard let np = normalizedPower, let intensity = intensityFactor(ftp: ftp) else { return nil }
    return Double(powerSamples) * np * intensity / (ftp * 3600) * 100
  }

  /// 95 % of the best 20-minute power: nil before 20 minutes of power.
  public var estimatedFTP: Double? { power.best(1200).map { 0.95 * $0 } }

  public func bestPower(_ seconds: Int) -> Double? { power.best(seconds) }
  public var bestTwentyMinuteHeartRate: Double? { heartRate.best(1200) }
}

/// RFC 4648 base64, for the few bytes a checkpoint holds (no Foundation in the core).
enum Base64 {
  private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  static func encode(_ bytes: [UInt8]) -> String {
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var index = 0
    while index < bytes.count {
      let b0 = UInt32(bytes[index])
      let b1 = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
      let b2 = index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0
      let triple = b0 << 16 | b1 << 8 | b2
      out.append(alphabet[Int(triple >> 18 & 63)])
      out.append(alphabet[Int(triple >> 12 & 63)])
      out.append(index + 1 < bytes.count ? alphabet[Int(triple >> 6 & 63)] : UInt8(ascii: "="))
      out.append(index + 2 < bytes.count ? alphabet[Int(triple & 63)] : UInt8(ascii: "="))
      index += 3
    }
    return String(decoding: out, as: UTF8.self)
  }

  static func decode(_ text: String) -> [UInt8]? {
    var values: [UInt8] = []
    var padding = 0
    for char in text.utf8 {
      if char == UInt8(ascii: "=") {
        padding += 1
        values.append(0)
        continue
      }
      guard padding == 0, let value = alphabet.firstIndex(of: char) else { return nil }
      values.append(UInt8(value))
    }
    guard values.count % 4 == 0, padding <= 2 else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(values.count / 4 * 3)
    for start in stride(from: 0, to: values.count, by: 4) {
      let quad =
        UInt32(values[start]) << 18 | UInt32(values[start + 1]) << 12 | UInt32(values[start + 2]) << 6
        | UInt32(values[start + 3])
      out += [UInt8(quad >> 16 & 0xFF), UInt8(quad >> 8 & 0xFF), UInt8(quad & 0xFF)]
    }
    out.removeLast(padding)
    return out
  }
}
