import SensorProtocols
import WorkoutCore

extension FuzzChecks {
  /// The ANT frame reader and the stick's message decoder. The first byte chooses where the
  /// rest is split in two, as two USB reads would split it: both ways give the same messages;
  /// no more than one message's worth of bytes waits once the reader is drained; every message
  /// found re-encodes to bytes that read back as it; decoding never traps.
  public static func antMessage(_ bytes: [UInt8]) -> String? {
    guard let selector = bytes.first else { return nil }
    let input = Array(bytes.dropFirst())
    func read(_ pieces: [[UInt8]]) -> ([ANTMessage], Int) {
      var reader = ANTFrameReader()
      var found: [ANTMessage] = []
      for piece in pieces {
        reader.append(piece)
        while let output = reader.next() { if case .message(let m) = output { found.append(m) } }
      }
      return (found, reader.pendingCount)
    }
    let whole = read([input])
    let cut = input.isEmpty ? 0 : Int(selector) % (input.count + 1)
    let split = read([Array(input[..<cut]), Array(input[cut...])])
    guard whole.0 == split.0 else { return "ANT split at \(cut): \(split.0.count) messages, whole: \(whole.0.count)" }
    guard whole.1 < ANTMessage.maximumContentLength + 4 else { return "ANT reader holds \(whole.1) bytes" }
    for message in whole.0 {
      guard read([message.bytes]).0 == [message] else { return "ANT \(message) does not read back" }
      if case .data(let data) = try? ANTStickMessage(message), data.payload.count != 8 {
        return "ANT data of \(data.payload.count) bytes"
      }
    }
    // The input as one message's content too, under each ID the decoder reads.
    for id: UInt8 in [0x40, 0x4E, 0x4F, 0x50, 0x51, 0x54, 0x6F] {
      _ = try? ANTStickMessage(ANTMessage(id: id, content: Array(input.prefix(ANTMessage.maximumContentLength))))
    }
    return nil
  }

  /// Every ANT+ profile's pages: the first byte picks the profile and a wheel circumference,
  /// the rest is 8-byte pages with a byte of elapsed time (1/10 s) before each. Readings are
  /// finite, non-negative and within the calculators' and StrapReadings' limits.
  public static func antPages(_ bytes: [UInt8]) -> String? {
    guard let selector = bytes.first else { return nil }
    let circumference = 0.1 + Double(selector >> 3) * 0.15
    var heart = ANTHeartRateReadings()
    var bike = ANTBikeSensorReadings(
      type: ANTBikeSensorType.allCases[Int(selector & 0x07) % 3], wheelCircumference: circumference)
    var power = ANTPowerReadings(wheelCircumference: circumference)
    var now = 0.0
    var i = 1
    while i + 9 <= bytes.count {
      now += Double(bytes[i]) / 10
      let page = Array(bytes[(i + 1)..<(i + 9)])
      i += 9
      _ = try? ANTHeartRatePage(payload: page)
      _ = try? ANTBikeSensorPage(payload: page)
      _ = try? ANTSpeedCadencePage(payload: page)
      _ = try? ANTBicyclePowerPage(payload: page)
      _ = try? ANTCommonBatteryPage(payload: page)
      let results: [StrapReadings.Result?] = [
        try? heart.update(page, at: now), try? bike.update(page, at: now), try? power.update(page, at: now),
      ]
      for result in results.compactMap({ $0 }) {
        if result.rrIntervals.contains(0) { return "an RR interval of 0" }
        if let v = result.batteryStatus?.voltage, !(v >= 0 && v < 16) { return "battery voltage \(v)" }
        for reading in result.readings {
          switch reading {
          case .power(let watts) where !(0...StrapReadings.maximumPower).contains(watts): return "power \(watts)"
          case .heartRate(let bpm) where !(1...255).contains(bpm): return "heart rate \(bpm)"
          case .cadence(let rpm) where !(rpm >= 0 && rpm <= max(CrankCadenceCalculator.maximumCadence, 255)):
            return "cadence \(rpm)"
          case .wheelSpeed(let speed, let distance)
          where !(speed >= 0 && speed <= WheelSpeedCalculator.maximumSpeed && distance >= 0 && distance.isFinite):
            return "wheel speed \(speed), distance \(distance)"
          default: break
          }
        }
      }
    }
    return nil
  }
}
