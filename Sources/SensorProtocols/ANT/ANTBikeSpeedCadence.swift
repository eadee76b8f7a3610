/// The ANT+ Bike Speed and Cadence profile's device types and channel periods (1/32768 s).
public enum ANTBikeSensorType: UInt8, Sendable, Hashable, CaseIterable {
  /// One sensor for both: unpaged, 8070 + 16 = 8086 (4.05 Hz).
  case speedAndCadence = 121
  case cadence = 122
  case speed = 123

  public var channelPeriod: UInt16 {
    switch self {
    case .speedAndCadence: 8086
    case .cadence: 8102
    case .speed: 8118
    }
  }
}

/// A combined speed and cadence sensor's message (device type 121): no page number, four
/// uint16 fields (Bike Speed and Cadence profile, "Combined Bike Speed and Cadence Data"):
///
/// | bytes | field |
/// |---|---|
/// | 0–1 | bike cadence event time, 1/1024 s |
/// | 2–3 | cumulative cadence revolution count |
/// | 4–5 | bike speed event time, 1/1024 s |
/// | 6–7 | cumulative speed revolution count |
///
/// Every field rolls over at 65,536.
public struct ANTSpeedCadencePage: Sendable, Hashable {
  public var cadenceEventTime: UInt16
  public var cadenceRevolutions: UInt16
  public var speedEventTime: UInt16
  public var speedRevolutions: UInt16

  public init(payload: some Collection<UInt8>) throws(ANTDecodeError) {
    let p = try ANTPageBytes(payload)
    cadenceEventTime = p.u16(0)
    cadenceRevolutions = p.u16(2)
    speedEventTime = p.u16(4)
    speedRevolutions = p.u16(6)
  }
}

/// A speed-only (123) or cadence-only (122) sensor's page (Bike Speed and Cadence profile,
/// "Bike Speed / Bike Cadence data pages"):
///
/// | byte | field |
/// |---|---|
/// | 0 | bits 0–6 page number, bit 7 page change toggle |
/// | 1–3 | page-specific |
/// | 4–5 | event time, 1/1024 s |
/// | 6–7 | cumulative revolution count |
public struct ANTBikeSensorPage: Sendable, Hashable {
  public enum Content: Sendable, Hashable {
    /// Page 0, or a legacy sensor's page.
    case `default`
    /// Pages 1–3: operating time, manufacturer, product.
    case background(ANTBackgroundPage)
    /// Page 4: byte 2 fractional voltage, byte 3 the descriptive bit field (byte 1 reserved).
    case battery(ANTBatteryStatus)
    /// Page 5 (speed sensors): byte 1 bit 0, the stop indicator.
    case motion(stopped: Bool)
    case other(page: UInt8, bytes: [UInt8])
  }

  public var content: Content
  public var toggle: Bool
  public var eventTime: UInt16
  public var revolutions: UInt16

  /// `legacy`: byte 0 is not a page number (a sensor that never flips the toggle).
  public init(payload: some Collection<UInt8>, legacy: Bool = false) throws(ANTDecodeError) {
    let p = try ANTPageBytes(payload)
    toggle = p.toggle
    eventTime = p.u16(4)
    revolutions = p.u16(6)
    content = p.content(legacy: legacy, default: .default, background: Content.background) { page in
      switch page {
      case 4: .battery(ANTBatteryStatus(fractionalVoltage: p[2], descriptive: p[3]))
      case 5: .motion(stopped: p[1] & 0x01 != 0)
      default: .other(page: page, bytes: [p[1], p[2], p[3]])
      }
    }
  }
}

/// Wheel speed and crank cadence from one ANT+ speed, cadence, or speed-and-cadence sensor's
/// messages, through the same calculators and into the same `StrapReadings.Result` as a BLE
/// CSC sensor. Pure: the caller passes the monotonic time each message arrived.
public struct ANTBikeSensorReadings: Sendable {
  public let type: ANTBikeSensorType
  private var wheel: WheelSpeedCalculator
  // ANT+ counts crank revolutions in 16 bits, as BLE does.
  private var crank = CrankCadenceCalculator()!
  private var toggle = ANTToggleWatch()

  /// `wheelCircumference` in metres, 0.1–5 m (outside that, `StrapReadings`' default).
  public init(type: ANTBikeSensorType, wheelCircumference: Double = StrapReadings.defaultWheelCircumference) {
    self.type = type
    // ANT+ wheel revolution counts are 16 bits (BLE's are 32): the calculator must roll over there.
    wheel =
      WheelSpeedCalculator(circumference: wheelCircumference, counterBits: 16)
      ?? WheelSpeedCalculator(circumference: StrapReadings.defaultWheelCircumference, counterBits: 16)!
  }

  /// The readings of one message received at `now`; a message shorter than 8 bytes throws and
  /// changes nothing.
  public mutating func update(_ payload: [UInt8], at now: Double) throws(ANTDecodeError) -> StrapReadings.Result {
    var result = StrapReadings.Result()
    switch type {
    case .speedAndCadence:
      let page = try ANTSpeedCadencePage(payload: payload)
      wheelReading(revolutions: page.speedRevolutions, time: page.speedEventTime, at: now, into: &result)
      crankReading(revolutions: page.cadenceRevolutions, time: page.cadenceEventTime, at: now, into: &result)
    case .speed, .cadence:
      let common = try ANTBikeSensorPage(payload: payload, legacy: true)
      let page = toggle.observe(payload[0]) ? try ANTBikeSensorPage(payload: payload) : common
      switch page.content {
      case .battery(let battery): result.batteryStatus = battery
      case .other(page: ANTCommonBatteryPage.pageNumber, _):
        // A common page's bytes 4–7 are its own, not an event (Common Pages, section 6.9).
        result.batteryStatus = try ANTCommonBatteryPage(payload: payload).battery
        return result
      default: break
      }
      if type == .speed {
        wheelReading(revolutions: page.revolutions, time: page.eventTime, at: now, into: &result)
      } else {
        crankReading(revolutions: page.revolutions, time: page.eventTime, at: now, into: &result)
      }
    }
    return result
  }

  private mutating func wheelReading(
    revolutions: UInt16, time: UInt16, at now: Double, into result: inout StrapReadings.Result
  ) {
    let data = WheelRevolutionData(
      cumulativeRevolutions: UInt32(revolutions), lastEventTime: time, eventTimeUnit: .oneOver1024)
    StrapReadings.addWheel(wheel.update(data, at: now), distance: wheel.lastDistance, to: &result)
  }

  private mutating func crankReading(
    revolutions: UInt16, time: UInt16, at now: Double, into result: inout StrapReadings.Result
  ) {
    let data = CrankRevolutionData(cumulativeRevolutions: revolutions, lastEventTime: time)
    StrapReadings.add(crank.update(data, at: now), to: &result)
  }
}
