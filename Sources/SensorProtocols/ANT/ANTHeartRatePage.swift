/// A page of the ANT+ Heart Rate profile (device type 120; ANT+ Device Profile Heart Rate,
/// section 5). Every page ends in the same four bytes:
///
/// | byte | field |
/// |---|---|
/// | 0 | bits 0–6 page number, bit 7 page change toggle |
/// | 1–3 | page-specific |
/// | 4–5 | heart beat event time, 1/1024 s, rolls over every 64 s |
/// | 6 | heart beat count, rolls over at 256 |
/// | 7 | computed heart rate, bpm; 0 invalid |
public struct ANTHeartRatePage: Sendable, Hashable {
  public static let deviceType: UInt8 = 120
  /// Channel period, 1/32768 s (4.06 Hz).
  public static let channelPeriod: UInt16 = 8070

  /// Bytes 1–3 by page number (section 5.3).
  public enum Content: Sendable, Hashable {
    /// Page 0 (default), or a legacy sensor's page whose byte 0 is not a page number.
    case `default`
    /// Pages 1–3: operating time, manufacturer, product.
    case background(ANTBackgroundPage)
    /// Page 4: a manufacturer-specific byte and the previous heart beat's event time
    /// (1/1024 s), so one RR interval comes from every page 4.
    case previousHeartBeat(manufacturerSpecific: UInt8, eventTime: UInt16)
    /// Page 7: battery level, voltage and status.
    case battery(ANTBatteryStatus)
    /// Another page (5 swim interval, 6 capabilities, manufacturer pages): bytes 1–3 as sent.
    case other(page: UInt8, bytes: [UInt8])
  }

  public var content: Content
  public var toggle: Bool
  public var heartBeatEventTime: UInt16
  public var heartBeatCount: UInt8
  /// bpm; nil when the sensor sends 0 ("invalid").
  public var computedHeartRate: UInt8?

  /// Decodes a page. `legacy`: the sensor's toggle bit never changes, so byte 0 is not a page
  /// number and bytes 1–3 are reserved (section 5.2, "Legacy" data format): only the common
  /// bytes are read.
  public init(payload: some Collection<UInt8>, legacy: Bool = false) throws(ANTDecodeError) {
    let p = try ANTPageBytes(payload)
    toggle = p.toggle
    heartBeatEventTime = p.u16(4)
    heartBeatCount = p[6]
    computedHeartRate = p[7] == 0 ? nil : p[7]
    content = p.content(legacy: legacy, default: .default, background: Content.background) { page in
      switch page {
      case 4: .previousHeartBeat(manufacturerSpecific: p[1], eventTime: p.u16(2))
      case 7: .battery(ANTBatteryStatus(fractionalVoltage: p[2], descriptive: p[3], percent: p[1]))
      default: .other(page: page, bytes: [p[1], p[2], p[3]])
      }
    }
  }
}

/// Heart rate and RR intervals from successive heart-rate pages of one sensor, as the same
/// `StrapReadings.Result` a BLE strap's notifications give. Pure: the caller passes the
/// monotonic time each page arrived.
public struct ANTHeartRateReadings: Sendable {
  private var toggle = ANTToggleWatch()
  private var last: (time: UInt16, count: UInt8, at: Double)?

  public init() {}

  /// Whether page numbers are trusted: the toggle bit has flipped (it does every fourth
  /// message, section 5.2). Until then, and for good with a legacy sensor, only the bytes
  /// common to every format are read.
  public var pagedFormat: Bool { toggle.flipped }

  /// The readings of one page received at `now` (monotonic seconds). A page shorter than 8
  /// bytes throws and changes nothing.
  public mutating func update(_ payload: [UInt8], at now: Double) throws(ANTDecodeError) -> StrapReadings.Result {
    let common = try ANTHeartRatePage(payload: payload, legacy: true)
    let page = toggle.observe(payload[0]) ? try ANTHeartRatePage(payload: payload) : common
    var result = StrapReadings.Result()
    if case .other(page: ANTCommonBatteryPage.pageNumber, _) = page.content {
      // A common page's bytes 4–7 are its own, not a heart beat (Common Pages, section 6.9).
      result.batteryStatus = try ANTCommonBatteryPage(payload: payload).battery
      return result
    }
    // Section 5.3: the computed heart rate is the one to show; 0 means the sensor has none.
    if let bpm = page.computedHeartRate { result.readings.append(.heartRate(bpm: Int(bpm))) }
    if case .battery(let battery) = page.content {
      result.batteryPercent = battery.percent
      result.batteryStatus = battery
    }
    defer { last = (page.heartBeatEventTime, page.heartBeatCount, now) }
    guard let last, page.heartBeatCount != last.count else { return result }
    // A new beat. Page 4 carries the previous beat's time, so its interval is known however
    // many pages were lost; otherwise only a count that moved by exactly one (modulo 256)
    // since the last page, within half the 64 s roll-over of the event time, gives one.
    var rr: UInt16?
    if case .previousHeartBeat(_, let previous) = page.content {
      rr = page.heartBeatEventTime &- previous
    } else if page.heartBeatCount &- last.count == 1, now - last.at < 32 {
      rr = page.heartBeatEventTime &- last.time
    }
    if let rr, rr > 0 { result.rrIntervals = [rr] }
    return result
  }
}
