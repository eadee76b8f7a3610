/// The rider as a workout's energy and zone figures need them, from `[rider]`: recorded with
/// each workout at its start (a `rider` event), so its figures are reckoned afterwards as they
/// were set then.
public struct RiderProfile: Sendable, Hashable, Codable {
  public enum Sex: String, Sendable, Hashable, Codable, CaseIterable {
    case female
    case male
  }

  public var age: Int?
  /// kg.
  public var weight: Double?
  public var sex: Sex?
  /// count/min.
  public var restingHeartRate: Double?
  /// count/min, as set (nil: none set).
  public var maxHeartRate: Double?

  public init(
    age: Int? = nil, weight: Double? = nil, sex: Sex? = nil, restingHeartRate: Double? = nil,
    maxHeartRate: Double? = nil
  ) {
    self.age = age
    self.weight = weight
    self.sex = sex
    self.restingHeartRate = restingHeartRate
    self.maxHeartRate = maxHeartRate
  }

  public var isEmpty: Bool { self == RiderProfile() }

  /// "age=41 weight=72 sex=female resting=48 max=183": what was set, as the event's detail.
  public var eventDetail: String {
    var words: [String] = []
    if let age { words.append("age=\(age)") }
    if let weight { words.append("weight=\(ZoneConfiguration.format(weight))") }
    if let sex { words.append("sex=\(sex.rawValue)") }
    if let restingHeartRate { words.append("resting=\(ZoneConfiguration.format(restingHeartRate))") }
    if let maxHeartRate { words.append("max=\(ZoneConfiguration.format(maxHeartRate))") }
    return words.joined(separator: " ")
  }

  /// The profile an event's detail describes; words this binary does not know are skipped (a
  /// newer release's), a number that is not one leaves its figure unset.
  public init(eventDetail: String) {
    self.init()
    for word in eventDetail.split(separator: " ") {
      let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
      guard parts.count == 2 else { continue }
      switch parts[0] {
      case "age": age = Int(parts[1])
      case "weight": weight = Double(parts[1]).flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
      case "sex": sex = Sex(rawValue: parts[1])
      case "resting": restingHeartRate = Double(parts[1]).flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
      case "max": maxHeartRate = Double(parts[1]).flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
      default: continue
      }
    }
  }

  /// The energy one second at `heartRate` costs, kcal, by Keytel et al., "Prediction of energy
  /// expenditure from heart rate monitoring during submaximal exercise", J Sports Sci 2005;
  /// 23(3):289–97 (their equation without VO2max, kJ/min; 4.184 kJ a kcal). nil without the
  /// age, weight and sex it needs; 0 where the equation goes below zero (a heart rate near rest).
  public func heartRateKilocaloriesPerSecond(_ heartRate: Double) -> Double? {
    guard let age, let weight, let sex else { return nil }
    let a = Double(age)
    let kilojoulesPerMinute =
      switch sex {
      case .male: -55.0969 + 0.6309 * heartRate + 0.1988 * weight + 0.2017 * a
      case .female: -20.4022 + 0.4472 * heartRate - 0.1263 * weight + 0.074 * a
      }
    return max(0, kilojoulesPerMinute) / 4.184 / 60
  }
}

/// The energy a stretch of a workout (a lap, the whole) cost the rider, tallied a recorded
/// second at a time: from the power meter's work when the stretch has power, else from heart
/// rate (`RiderProfile.heartRateKilocaloriesPerSecond`).
public struct EnergyTally: Sendable, Hashable, Codable {
  /// Joules of work at the pedals.
  public private(set) var work: Double = 0
  public private(set) var powerSeconds = 0
  /// kcal by heart rate, over `heartRateSeconds`.
  public private(set) var heartRateKilocalories: Double = 0
  public private(set) var heartRateSeconds = 0

  public init() {}

  public mutating func add(_ sample: TrainingSample, rider: RiderProfile?) {
    if let watts = sample.power {
      work += Double(max(0, watts))
      powerSeconds += 1
    }
    if let bpm = sample.heartRate, let kilocalories = rider?.heartRateKilocaloriesPerSecond(Double(bpm)) {
      heartRateKilocalories += kilocalories
      heartRateSeconds += 1
    }
  }

  /// kcal: 1 kcal a kJ of work, the rule Garmin's and the training platforms' power-based
  /// calories follow (a gross efficiency near 24 %, 4.184 kJ a kcal: 1 kJ of work ≈ 1 kcal
  /// burned); without power, Keytel's from heart rate; nil with neither.
  public var kilocalories: Double? {
    if powerSeconds > 0 { return work / 1000 }
    return heartRateSeconds > 0 ? heartRateKilocalories : nil
  }
}
