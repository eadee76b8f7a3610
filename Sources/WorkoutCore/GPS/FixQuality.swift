/// Limits a fix must meet to be used (config keys under `[gps]`).
public struct FixQualitySettings: Sendable, Hashable, Codable {
  /// Fixes whose horizontal error (gpsd's `eph`, about 95 % confidence) is larger than this
  /// are rejected. Metres; 20 by default.
  ///
  /// NMEA receivers report only HDOP, from which gpsd 3.22 derives `eph` pessimistically
  /// (HDOP 1.4 already gives about 20 m): raise the limit for such receivers.
  public var maxHorizontalError: Double
  /// Whether a fix that reports no horizontal error at all is used. Many NMEA receivers never
  /// send one (no GSA/GST); they are accepted by default and the filter assumes a typical error.
  public var acceptUnknownHorizontalError: Bool

  public init(maxHorizontalError: Double = 20, acceptUnknownHorizontalError: Bool = true) {
    self.maxHorizontalError = maxHorizontalError
    self.acceptUnknownHorizontalError = acceptUnknownHorizontalError
  }
}

/// Why a fix was not used.
public enum FixRejection: Sendable, Hashable, Codable {
  /// Latitude or longitude not finite or out of range (a decoder fed garbage).
  case invalidPosition
  /// Exactly 0°, 0°: receivers (some u-blox firmware) report it with a fix flag before they
  /// have a position.
  case zeroPosition
  /// The reported horizontal error is above the configured limit.
  case horizontalErrorTooLarge(error: Double, limit: Double)
  /// No horizontal error reported, and the settings require one.
  case horizontalErrorUnknown
  /// Same receiver time as the last accepted fix: gpsd reports an epoch again as more
  /// sentences of it arrive; the first usable report of each epoch is kept (as gpxlogger does).
  case repeatedTime(Double)
}

extension FixRejection: CustomStringConvertible {
  /// In words a rider can act on, with the setting that decides it.
  public var description: String {
    switch self {
    case .invalidPosition:
      "the position is out of range (a receiver or decoder fault)"
    case .zeroPosition:
      "the position is 0°, 0° (the receiver has no real position yet)"
    case .horizontalErrorTooLarge(let error, let limit):
      "horizontal error \(wholeNumberText(error)) m > limit \(wholeNumberText(limit)) m (the limit is [gps] max_horizontal_error in the configuration; receivers reporting only HDOP often need 50–100)"
    case .horizontalErrorUnknown:
      "no horizontal error reported, and the configuration requires one"
    case .repeatedTime:
      "a repeat of the epoch already taken"
    }
  }

  /// The same kind of rejection, whatever the figures.
  public func sameKind(as other: FixRejection) -> Bool {
    switch (self, other) {
    case (.invalidPosition, .invalidPosition), (.zeroPosition, .zeroPosition),
      (.horizontalErrorTooLarge, .horizontalErrorTooLarge), (.horizontalErrorUnknown, .horizontalErrorUnknown),
      (.repeatedTime, .repeatedTime):
      true
    default:
      false
    }
  }
}

/// The filter's decision on one fix.
public enum FixVerdict: Sendable, Hashable {
  /// The fix, with any non-finite optional value removed (speed, track, errors, altitude), an
  /// altitude or speed no receiver can measure removed, and the altitude dropped unless it is 3D.
  case accepted(GPSFix)
  case rejected(FixRejection)

  public var fix: GPSFix? {
    if case .accepted(let fix) = self { return fix }
    return nil
  }
}

/// Decides which fixes are good enough to use: finite position, not 0/0, horizontal error
/// within the limit, and not a repeat of the epoch already taken. Fixes reach it only with
/// a 2D or 3D mode (decoders turn "no fix" into `SensorReading.gpsNoFix`).
///
/// It is a value with a little state (the time of the last accepted fix); call `reset()` when
/// the source reconnects. Pure: no clock, no I/O.
///
/// ```swift
/// var filter = FixQualityFilter(settings: FixQualitySettings(maxHorizontalError: 20))
/// switch filter.evaluate(fix) {
/// case .accepted(let fix): sink.post(.reading(.gps(fix)))
/// case .rejected(let why): log(why)
/// }
/// ```
public struct FixQualityFilter: Sendable, Hashable, Codable {
  public var settings: FixQualitySettings
  /// Receiver time of the last accepted fix that had one.
  public private(set) var lastAcceptedTime: Double?
  /// How many fixes were accepted and rejected so far (for status and logs).
  public private(set) var acceptedCount = 0
  public private(set) var rejectedCount = 0

  public init(settings: FixQualitySettings = FixQualitySettings()) {
    self.settings = settings
  }

  /// Judges one fix; an accepted fix is remembered for the repeat check.
  public mutating func evaluate(_ fix: GPSFix) -> FixVerdict {
    let verdict = Self.judge(fix, settings: settings, lastAcceptedTime: lastAcceptedTime)
    switch verdict {
    case .accepted(let clean):
      acceptedCount += 1
      if let t = clean.time { lastAcceptedTime = t }
    case .rejected:
      rejectedCount += 1
    }
    return verdict
  }

  /// Forgets the last accepted epoch (after a reconnect the same epoch may legitimately come
  /// again).
  public mutating func reset() {
    lastAcceptedTime = nil
  }

  /// The stateless part of the decision.
  public static func judge(
    _ fix: GPSFix, settings: FixQualitySettings, lastAcceptedTime: Double?
  ) -> FixVerdict {
    guard fix.latitude.isFinite, fix.longitude.isFinite, abs(fix.latitude) <= 90,
      abs(fix.longitude) <= 180
    else { return .rejected(.invalidPosition) }
    if fix.latitude == 0 && fix.longitude == 0 { return .rejected(.zeroPosition) }
    let clean = sanitised(fix)
    if let error = clean.horizontalError {
      if !(error <= settings.maxHorizontalError) {
        return .rejected(.horizontalErrorTooLarge(error: error, limit: settings.maxHorizontalError))
      }
    } else if !settings.acceptUnknownHorizontalError {
      return .rejected(.horizontalErrorUnknown)
    }
    if let time = clean.time, let last = lastAcceptedTime, time == last { return .rejected(.repeatedTime(time)) }
    return .accepted(clean)
  }

  /// A fix's values as the filter passes them on: any non-finite optional value removed, an
  /// altitude or speed no receiver can measure removed, the altitude dropped unless it is 3D.
  /// What completes an accepted fix (the gpsd source merges an epoch's later reports into it)
  /// goes through this too. An infinite horizontal error is one too large, not an unknown one
  /// (the largest finite value stands for it, so a rejection stays a finite, encodable figure);
  /// NaN or negative is unknown.
  public static func sanitised(_ fix: GPSFix) -> GPSFix {
    GPSFix(
      dimension: fix.dimension, time: finite(fix.time), latitude: fix.latitude, longitude: fix.longitude,
      altitude: fix.dimension == .threeD ? finite(fix.altitude).flatMap { altitudes.contains($0) ? $0 : nil } : nil,
      speed: finite(fix.speed).flatMap { $0 >= 0 && $0 <= maximumSpeed ? $0 : nil }, track: finite(fix.track),
      horizontalError: fix.horizontalError.flatMap { $0 >= 0 ? min($0, .greatestFiniteMagnitude) : nil },
      verticalError: finite(fix.verticalError).flatMap { $0 >= 0 ? $0 : nil })
  }

  /// A civil receiver reports no fix above 18,000 m or faster than 515 m/s (the export limits
  /// its firmware obeys, after CoCom), and the lowest land is about 430 m below sea level: an
  /// altitude or speed beyond these is a fault of the receiver or its report, not a measurement,
  /// and is dropped (the position stays, judged on its own). One such altitude would otherwise
  /// count as metres climbed and stay in the ride's totals.
  public static let altitudes: ClosedRange<Double> = -1_000...18_000
  public static let maximumSpeed = 515.0

  private static func finite(_ value: Double?) -> Double? {
    guard let value, value.isFinite else { return nil }
    return value
  }
}
