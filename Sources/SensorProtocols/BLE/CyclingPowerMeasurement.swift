/// A Cycling Power Measurement notification (0x2A63; GSS "Cycling Power Measurement", and Cycling Power
/// Service 1.1 (CPS) "Cycling Power Measurement"). Fields follow in this order, each present only when its flag bit is set:
///
/// | bit | field | size, unit |
/// |---|---|---|
/// | — | flags | uint16 |
/// | — | instantaneous power | sint16, W |
/// | 0 | pedal power balance (bit 1: reference is the left pedal) | uint8, 1/2 % |
/// | 2 | accumulated torque (bit 3: crank based, else wheel based) | uint16, 1/32 N·m |
/// | 4 | cumulative wheel revolutions + last wheel event time | uint32 + uint16, 1/2048 s |
/// | 5 | cumulative crank revolutions + last crank event time | uint16 + uint16, 1/1024 s |
/// | 6 | maximum + minimum force magnitude | sint16 + sint16, N |
/// | 7 | maximum + minimum torque magnitude | sint16 + sint16, 1/32 N·m |
/// | 8 | maximum + minimum angle, packed: maximum in bits 0–11, minimum in bits 12–23 | uint24, degrees |
/// | 9 | top dead spot angle | uint16, degrees |
/// | 10 | bottom dead spot angle | uint16, degrees |
/// | 11 | accumulated energy | uint16, kJ |
/// | 12 | offset compensation indicator (no field) | — |
/// | 13–15 | RFU | — |
///
/// Every field is read by its real size, so wheel data (6 bytes) before crank data never
/// shifts the crank fields (the mistake of reading wheel data as 4 bytes).
public struct CyclingPowerMeasurement: Sendable, Hashable {
  /// Pedal power balance: the share of power of the reference pedal (CPS, "Pedal Power Balance").
  public struct PedalPowerBalance: Sendable, Hashable {
    /// In units of 1/2 %.
    public var raw: UInt8
    /// Flags bit 1: true when the reference is the left pedal, false when unknown.
    public var referenceIsLeft: Bool

    public var percent: Double { Double(raw) / 2 }
  }

  /// Accumulated torque since the last reset, rolling over (CPS, "Accumulated Torque").
  public struct AccumulatedTorque: Sendable, Hashable {
    /// In units of 1/32 N·m.
    public var raw: UInt16
    /// Flags bit 3: true when crank based, false when wheel based.
    public var crankBased: Bool

    public var newtonMetres: Double { Double(raw) / 32 }
  }

  /// A maximum and a minimum (force in N, or torque in 1/32 N·m).
  public struct Extremes: Sendable, Hashable {
    public var maximum: Int16
    public var minimum: Int16
  }

  /// The crank angles at the maximum and the minimum force or torque, degrees (uint12 each).
  public struct ExtremeAngles: Sendable, Hashable {
    public var maximum: UInt16
    public var minimum: UInt16

    public init(maximum: UInt16, minimum: UInt16) {
      self.maximum = maximum & 0x0FFF
      self.minimum = minimum & 0x0FFF
    }
  }

  /// Watts (may be negative: a sensor measuring backwards torque).
  public var instantaneousPower: Int16
  public var pedalPowerBalance: PedalPowerBalance?
  public var accumulatedTorque: AccumulatedTorque?
  /// Wheel data; its event time counts 1/2048 s.
  public var wheel: WheelRevolutionData?
  public var crank: CrankRevolutionData?
  public var extremeForceMagnitudes: Extremes?
  public var extremeTorqueMagnitudes: Extremes?
  public var extremeAngles: ExtremeAngles?
  public var topDeadSpotAngle: UInt16?
  public var bottomDeadSpotAngle: UInt16?
  /// Kilojoules.
  public var accumulatedEnergy: UInt16?
  /// Flags bit 12: the sensor asks for an offset compensation (CPS, "Offset Compensation Indicator").
  public var offsetCompensationIndicator: Bool
  /// Flags bits 13–15 as received (RFU: they never shift a field).
  public var reservedFlags: UInt16

  public init(
    instantaneousPower: Int16, pedalPowerBalance: PedalPowerBalance? = nil,
    accumulatedTorque: AccumulatedTorque? = nil, wheel: WheelRevolutionData? = nil,
    crank: CrankRevolutionData? = nil, extremeForceMagnitudes: Extremes? = nil,
    extremeTorqueMagnitudes: Extremes? = nil, extremeAngles: ExtremeAngles? = nil,
    topDeadSpotAngle: UInt16? = nil, bottomDeadSpotAngle: UInt16? = nil, accumulatedEnergy: UInt16? = nil,
    offsetCompensationIndicator: Bool = false, reservedFlags: UInt16 = 0
  ) {
    self.instantaneousPower = instantaneousPower
    self.pedalPowerBalance = pedalPowerBalance
    self.accumulatedTorque = accumulatedTorque
    self.wheel = wheel.map {
      WheelRevolutionData(
        cumulativeRevolutions: $0.cumulativeRevolutions, lastEventTime: $0.lastEventTime, eventTimeUnit: .oneOver2048)
    }
    self.crank = crank
    self.extremeForceMagnitudes = extremeForceMagnitudes
    self.extremeTorqueMagnitudes = extremeTorqueMagnitudes
    self.extremeAngles = extremeAngles
    self.topDeadSpotAngle = topDeadSpotAngle
    self.bottomDeadSpotAngle = bottomDeadSpotAngle
    self.accumulatedEnergy = accumulatedEnergy
    self.offsetCompensationIndicator = offsetCompensationIndicator
    self.reservedFlags = reservedFlags & 0xE000
  }

  /// Decodes a notification's value.
  ///
  /// Decisions where the specification is silent: force and torque extremes are both decoded
  /// when both bits are set (CPS lets a sensor send one or the other by its measurement
  /// context; both is no layout ambiguity); a pedal balance above 100 % and angles above 359°
  /// are passed on as sent (judging them is the caller's, and rejecting the value would lose
  /// the power); extra bytes are `trailingBytes` unless a reserved flag bit is set.
  public init(payload: some Collection<UInt8>) throws(BLEDecodeError) {
    var r = GATTValueReader(.cyclingPowerMeasurement, payload)
    let flags = try r.u16(.flags)
    func has(_ bit: UInt16) -> Bool { flags & (1 << bit) != 0 }
    instantaneousPower = try r.s16(.instantaneousPower)
    pedalPowerBalance = has(0) ? PedalPowerBalance(raw: try r.u8(.pedalPowerBalance), referenceIsLeft: has(1)) : nil
    accumulatedTorque = has(2) ? AccumulatedTorque(raw: try r.u16(.accumulatedTorque), crankBased: has(3)) : nil
    wheel = try r.wheel(if: has(4), unit: .oneOver2048)
    crank = try r.crank(if: has(5))
    extremeForceMagnitudes = has(6) ? try Extremes(&r, .extremeForceMagnitudes) : nil
    extremeTorqueMagnitudes = has(7) ? try Extremes(&r, .extremeTorqueMagnitudes) : nil
    if has(8) {
      let packed = try r.u24(.extremeAngles)
      extremeAngles = ExtremeAngles(maximum: UInt16(packed & 0xFFF), minimum: UInt16(packed >> 12))
    } else {
      extremeAngles = nil
    }
    topDeadSpotAngle = has(9) ? try r.u16(.topDeadSpotAngle) : nil
    bottomDeadSpotAngle = has(10) ? try r.u16(.bottomDeadSpotAngle) : nil
    accumulatedEnergy = has(11) ? try r.u16(.accumulatedEnergy) : nil
    offsetCompensationIndicator = has(12)
    reservedFlags = flags & 0xE000
    try r.finish(reservedFlagsSet: reservedFlags != 0)
  }

  /// The flags this measurement is sent with.
  public var flags: UInt16 {
    var flags = reservedFlags & 0xE000
    func set(_ bit: UInt16, _ on: Bool) { if on { flags |= 1 << bit } }
    set(0, pedalPowerBalance != nil)
    set(1, pedalPowerBalance?.referenceIsLeft == true)
    set(2, accumulatedTorque != nil)
    set(3, accumulatedTorque?.crankBased == true)
    set(4, wheel != nil)
    set(5, crank != nil)
    set(6, extremeForceMagnitudes != nil)
    set(7, extremeTorqueMagnitudes != nil)
    set(8, extremeAngles != nil)
    set(9, topDeadSpotAngle != nil)
    set(10, bottomDeadSpotAngle != nil)
    set(11, accumulatedEnergy != nil)
    set(12, offsetCompensationIndicator)
    return flags
  }

  /// The value a sensor would send for this measurement.
  public var payload: [UInt8] {
    var out: [UInt8] = []
    out.appendLE(flags)
    out.appendLE(instantaneousPower)
    if let pedalPowerBalance { out.append(pedalPowerBalance.raw) }
    if let accumulatedTorque { out.appendLE(accumulatedTorque.raw) }
    wheel?.append(to: &out)
    crank?.append(to: &out)
    for extremes in [extremeForceMagnitudes, extremeTorqueMagnitudes] {
      if let extremes {
        out.appendLE(extremes.maximum)
        out.appendLE(extremes.minimum)
      }
    }
    if let extremeAngles {
      out.appendLE24(UInt32(extremeAngles.maximum & 0xFFF) | UInt32(extremeAngles.minimum & 0xFFF) << 12)
    }
    for angle in [topDeadSpotAngle, bottomDeadSpotAngle, accumulatedEnergy] {
      if let angle { out.appendLE(angle) }
    }
    return out
  }
}

extension CyclingPowerMeasurement.Extremes {
  /// The maximum's sint16, then the minimum's.
  init(_ r: inout GATTValueReader, _ field: BLEField) throws(BLEDecodeError) {
    self.init(maximum: try r.s16(field), minimum: try r.s16(field))
  }
}
