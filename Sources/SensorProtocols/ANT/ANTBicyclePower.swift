/// A page of the ANT+ Bicycle Power profile (device type 11; ANT+ Device Profile Bicycle Power,
/// section 6 "Main Data Pages"). Byte 0 is the page number (no toggle in this profile).
public enum ANTBicyclePowerPage: Sendable, Hashable {
  public static let deviceType: UInt8 = 11
  /// Channel period, 1/32768 s (4.00 Hz).
  public static let channelPeriod: UInt16 = 8182

  /// Page 0x10, "Standard Power-Only":
  ///
  /// | byte | field |
  /// |---|---|
  /// | 1 | update event count, rolls over at 256 |
  /// | 2 | pedal power: bits 0–6 percent, bit 7 "right pedal"; 0xFF not used |
  /// | 3 | instantaneous cadence, rpm; 0xFF invalid |
  /// | 4–5 | accumulated power, W, rolls over at 65,536 |
  /// | 6–7 | instantaneous power, W |
  public struct PowerOnly: Sendable, Hashable {
    public var eventCount: UInt8
    public var pedalPower: PedalPower?
    public var instantaneousCadence: UInt8?
    public var accumulatedPower: UInt16
    public var instantaneousPower: UInt16
  }

  /// The pedal power byte (section 6.2.2): the percent of power from one pedal; bit 7 set says
  /// it is the right pedal's, clear that the sensor cannot tell which.
  public struct PedalPower: Sendable, Hashable {
    public var percent: UInt8
    public var rightPedal: Bool
  }

  /// Pages 0x11 "Standard Wheel Torque" and 0x12 "Standard Crank Torque" share one layout:
  ///
  /// | byte | field |
  /// |---|---|
  /// | 1 | update event count, rolls over at 256 |
  /// | 2 | wheel or crank ticks (revolutions), rolls over at 256 |
  /// | 3 | instantaneous cadence, rpm; 0xFF invalid |
  /// | 4–5 | accumulated wheel or crank period, 1/2048 s, rolls over at 65,536 |
  /// | 6–7 | accumulated torque, 1/32 N·m, rolls over at 65,536 |
  public struct Torque: Sendable, Hashable {
    public var eventCount: UInt8
    public var ticks: UInt8
    public var instantaneousCadence: UInt8?
    public var accumulatedPeriod: UInt16
    public var accumulatedTorque: UInt16
  }

  case powerOnly(PowerOnly)
  case wheelTorque(Torque)
  case crankTorque(Torque)
  /// Another page (calibration, torque effectiveness, common pages): bytes 1–7 as sent.
  case other(page: UInt8, bytes: [UInt8])

  public init(payload: some Collection<UInt8>) throws(ANTDecodeError) {
    let p = try ANTPageBytes(payload)
    let cadence = p[3] == 0xFF ? nil : p[3]
    switch p[0] {
    case 0x10:
      self = .powerOnly(
        PowerOnly(
          eventCount: p[1],
          pedalPower: p[2] == 0xFF ? nil : PedalPower(percent: p[2] & 0x7F, rightPedal: p[2] & 0x80 != 0),
          instantaneousCadence: cadence, accumulatedPower: p.u16(4), instantaneousPower: p.u16(6)))
    case 0x11, 0x12:
      let torque = Torque(
        eventCount: p[1], ticks: p[2], instantaneousCadence: cadence, accumulatedPeriod: p.u16(4),
        accumulatedTorque: p.u16(6))
      self = p[0] == 0x11 ? .wheelTorque(torque) : .crankTorque(torque)
    default:
      self = .other(page: p[0], bytes: Array(p.b[1..<8]))
    }
  }
}

/// Power, cadence and wheel speed from one ANT+ power meter's pages, into the same
/// `StrapReadings.Result` a BLE power meter gives. Pure: the caller passes the monotonic time
/// each page arrived.
public struct ANTPowerReadings: Sendable {
  private var powerOnly: ANTBicyclePowerPage.PowerOnly?
  private var wheelTorque: ANTBicyclePowerPage.Torque?
  private var crankTorque: ANTBicyclePowerPage.Torque?
  // The torque pages' event counts are 8 bits and their periods count 1/2048 s.
  private var crank = CrankCadenceCalculator(counterBits: 8)!
  private var wheel: WheelSpeedCalculator
  public let wheelCircumference: Double

  public init(wheelCircumference: Double = StrapReadings.defaultWheelCircumference) {
    let calculator =
      WheelSpeedCalculator(circumference: wheelCircumference, counterBits: 8)
      ?? WheelSpeedCalculator(circumference: StrapReadings.defaultWheelCircumference, counterBits: 8)!
    wheel = calculator
    self.wheelCircumference = calculator.circumference
  }

  /// The readings of one page received at `now`. A page shorter than 8 bytes, or whose power
  /// is beyond `StrapReadings.maximumPower`, throws and changes nothing.
  public mutating func update(_ payload: [UInt8], at now: Double) throws(ANTDecodeError) -> StrapReadings.Result {
    var result = StrapReadings.Result()
    switch try ANTBicyclePowerPage(payload: payload) {
    case .powerOnly(let page):
      // Section 6.2: the average power over the events since the last page is the
      // accumulated power's difference over the event count's, both modular; it survives a
      // lost page. A repeated page (no new event) gives nothing new.
      var watts: Int?
      if let last = powerOnly {
        let events = page.eventCount &- last.eventCount
        if events > 0 { watts = Int(page.accumulatedPower &- last.accumulatedPower) / Int(events) }
      } else {
        watts = Int(page.instantaneousPower)
      }
      if let watts { try Self.check(watts) }
      powerOnly = page
      if let watts { result.readings.append(.power(watts: watts)) }
      if let rpm = page.instantaneousCadence { result.readings.append(.cadence(rpm: Double(rpm))) }
    case .crankTorque(let page):
      let watts = try torquePower(page, since: crankTorque)
      let stopped = Self.standing(page, since: crankTorque)
      crankTorque = page
      if let watts { result.readings.append(.power(watts: watts)) }
      if stopped {
        // Section 6.4: a time-synchronous meter counts events while the crank stands, its
        // period unchanged: cadence 0, and the next moving page starts afresh.
        result.readings.append(.cadence(rpm: 0))
        crank = CrankCadenceCalculator(counterBits: 8)!
      }
      // Cadence from events over period: 60 · Δevents / (Δperiod / 2048) rpm (section 6.4).
      let reading = crank.update(
        revolutions: UInt32(page.eventCount), eventTime: page.accumulatedPeriod, unit: .oneOver2048, at: now)
      StrapReadings.add(reading, to: &result)
    case .wheelTorque(let page):
      let watts = try torquePower(page, since: wheelTorque)
      let stopped = Self.standing(page, since: wheelTorque)
      let ticks = wheelTorque.map { page.ticks &- $0.ticks } ?? 0
      wheelTorque = page
      if let watts { result.readings.append(.power(watts: watts)) }
      if let rpm = page.instantaneousCadence { result.readings.append(.cadence(rpm: Double(rpm))) }
      if stopped {
        // Section 6.3: events with no wheel period are a stopped wheel.
        result.readings.append(.wheelSpeed(metersPerSecond: 0, distance: 0))
        wheel = WheelSpeedCalculator(circumference: wheel.circumference, counterBits: 8)!
      }
      let data = WheelRevolutionData(
        cumulativeRevolutions: UInt32(page.eventCount), lastEventTime: page.accumulatedPeriod,
        eventTimeUnit: .oneOver2048)
      // Speed from events over period: circumference · Δevents / (Δperiod / 2048) (section
      // 6.3); the distance from the wheel ticks, which count revolutions whether the meter
      // updates on wheel events or on time.
      StrapReadings.addWheel(wheel.update(data, at: now), distance: Double(ticks) * wheel.circumference, to: &result)
    case .other(page: ANTCommonBatteryPage.pageNumber, _):
      result.batteryStatus = try ANTCommonBatteryPage(payload: payload).battery
    case .other:
      break
    }
    return result
  }

  /// Average power between two torque pages (sections 6.3 and 6.4): 128π · Δtorque / Δperiod W
  /// (torque in 1/32 N·m, period in 1/2048 s), all differences modular. Events with no period
  /// are a stopped wheel or crank: 0 W. No new event: nil.
  private func torquePower(
    _ page: ANTBicyclePowerPage.Torque, since last: ANTBicyclePowerPage.Torque?
  )
    throws(ANTDecodeError) -> Int?
  {
    guard let last, page.eventCount != last.eventCount else { return nil }
    let period = page.accumulatedPeriod &- last.accumulatedPeriod
    guard period > 0 else { return 0 }
    let torque = page.accumulatedTorque &- last.accumulatedTorque
    let watts = Int((128 * Double.pi * Double(torque) / Double(period)).rounded())
    try Self.check(watts)
    return watts
  }

  /// New events with no new period: the wheel or crank stands.
  private static func standing(_ page: ANTBicyclePowerPage.Torque, since last: ANTBicyclePowerPage.Torque?) -> Bool {
    guard let last else { return false }
    return page.eventCount != last.eventCount && page.accumulatedPeriod == last.accumulatedPeriod
  }

  private static func check(_ watts: Int) throws(ANTDecodeError) {
    if watts > StrapReadings.maximumPower {
      throw .implausible(field: "power", value: watts, maximum: StrapReadings.maximumPower, unit: "W")
    }
  }
}
