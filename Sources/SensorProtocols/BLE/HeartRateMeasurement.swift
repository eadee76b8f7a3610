/// A Heart Rate Measurement notification (0x2A37; GATT Specification Supplement (GSS) "Heart
/// Rate Measurement", and Heart Rate Service 1.0 (HRS) "Heart Rate Measurement"):
///
/// | field | size | present when |
/// |---|---|---|
/// | flags | uint8 | always: bit 0 value format (0 uint8, 1 uint16); bits 1–2 sensor contact; bit 3 energy expended; bit 4 RR-intervals; bits 5–7 RFU |
/// | heart rate | uint8 or uint16, bpm | always |
/// | energy expended | uint16, kJ | bit 3 |
/// | RR-interval | uint16 each, 1/1024 s | bit 4: as many as fill the rest of the value |
///
/// Every RR-interval of the notification is kept, in the order sent (oldest first, HRS "RR-Interval").
public struct HeartRateMeasurement: Sendable, Hashable {
  /// Flags bits 1–2 (HRS, "Flags Field"): bit 2 says whether the sensor can tell skin contact, bit 1
  /// whether it has it. With bit 2 clear, bit 1 means nothing.
  public enum SensorContact: Sendable, Hashable {
    case notSupported
    case notDetected
    case detected
  }

  /// Beats per minute.
  public var heartRate: UInt16
  /// Whether the value was sent as uint16 (flags bit 0).
  public var uint16Format: Bool
  public var sensorContact: SensorContact
  /// Kilojoules since the last reset; the sensor holds it at 0xFFFF once reached (HRS, "Energy Expended").
  public var energyExpended: UInt16?
  /// RR-intervals in units of 1/1024 s, oldest first.
  public var rrIntervals: [UInt16]
  /// Flags bits 5–7 as received (RFU: they never shift a field).
  public var reservedFlags: UInt8

  public init(
    heartRate: UInt16, uint16Format: Bool = false, sensorContact: SensorContact = .notSupported,
    energyExpended: UInt16? = nil, rrIntervals: [UInt16] = [], reservedFlags: UInt8 = 0
  ) {
    self.heartRate = heartRate
    self.uint16Format = uint16Format || heartRate > UInt8.max
    self.sensorContact = sensorContact
    self.energyExpended = energyExpended
    self.rrIntervals = rrIntervals
    self.reservedFlags = reservedFlags & 0xE0
  }

  /// Decodes a notification's value.
  ///
  /// Decisions where the specification is silent: flags announcing RR-intervals followed by
  /// none decode as an empty list (nothing is ambiguous, and the heart rate is kept); an odd
  /// byte after the RR-intervals is `truncated(.rrInterval)`; extra bytes with no RR flag are
  /// `trailingBytes` unless a reserved flag bit is set.
  public init(payload: some Collection<UInt8>) throws(BLEDecodeError) {
    var r = GATTValueReader(.heartRateMeasurement, payload)
    let flags = try r.u8(.flags)
    uint16Format = flags & 0x01 != 0
    heartRate = uint16Format ? try r.u16(.heartRate) : UInt16(try r.u8(.heartRate))
    switch flags & 0x06 {
    case 0x06: sensorContact = .detected
    case 0x04: sensorContact = .notDetected
    default: sensorContact = .notSupported
    }
    energyExpended = flags & 0x08 != 0 ? try r.u16(.energyExpended) : nil
    reservedFlags = flags & 0xE0
    var rr: [UInt16] = []
    if flags & 0x10 != 0 {
      rr.reserveCapacity(r.remaining / 2)
      while r.remaining > 0 { rr.append(try r.u16(.rrInterval)) }
    }
    rrIntervals = rr
    try r.finish(reservedFlagsSet: reservedFlags != 0)
  }

  /// The value a sensor would send for this measurement.
  public var payload: [UInt8] {
    var flags: UInt8 = reservedFlags & 0xE0
    if uint16Format { flags |= 0x01 }
    switch sensorContact {
    case .notSupported: break
    case .notDetected: flags |= 0x04
    case .detected: flags |= 0x06
    }
    if energyExpended != nil { flags |= 0x08 }
    if !rrIntervals.isEmpty { flags |= 0x10 }
    var out: [UInt8] = [flags]
    if uint16Format { out.appendLE(heartRate) } else { out.append(UInt8(truncatingIfNeeded: heartRate)) }
    if let energyExpended { out.appendLE(energyExpended) }
    for rr in rrIntervals { out.appendLE(rr) }
    return out
  }

  /// RR-intervals in seconds, exact: n/1024 is a binary fraction a Double holds exactly.
  public var rrIntervalsSeconds: [Double] { rrIntervals.map { Double($0) / 1024 } }

  /// RR-intervals in milliseconds, exact: n·1000/1024 = n·125/128, also a binary fraction.
  public var rrIntervalsMilliseconds: [Double] { rrIntervals.map { Double($0) * 125 / 128 } }
}
