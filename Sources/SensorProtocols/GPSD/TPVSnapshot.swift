/// Which fields of a gpsd report were filled, as libgps's `gps_data_t.set` says
/// (`TIME_SET`, `LATLON_SET`, `MODE_SET`, ...).
///
/// The bit values are workoutd's own: BoardLinux translates libgps's mask bit by bit, so nothing
/// here depends on the C constants (which gpsd has renumbered between API versions).
public struct GPSDFieldMask: OptionSet, Sendable, Hashable, Codable {
  public let rawValue: UInt64
  public init(rawValue: UInt64) { self.rawValue = rawValue }

  /// `TIME_SET`: `fix.time` is non-zero.
  public static let time = GPSDFieldMask(rawValue: 1 << 0)
  /// `TIMERR_SET`: `ept` is finite.
  public static let timeError = GPSDFieldMask(rawValue: 1 << 1)
  /// `LATLON_SET`: latitude and longitude are finite.
  public static let position = GPSDFieldMask(rawValue: 1 << 2)
  /// `ALTITUDE_SET`: one of the altitudes is finite.
  public static let altitude = GPSDFieldMask(rawValue: 1 << 3)
  /// `SPEED_SET`
  public static let speed = GPSDFieldMask(rawValue: 1 << 4)
  /// `TRACK_SET`
  public static let track = GPSDFieldMask(rawValue: 1 << 5)
  /// `CLIMB_SET`
  public static let climb = GPSDFieldMask(rawValue: 1 << 6)
  /// `STATUS_SET`: libgps sets it for every TPV, and only for TPVs.
  public static let status = GPSDFieldMask(rawValue: 1 << 7)
  /// `MODE_SET`: the report carried a mode other than `MODE_NOT_SEEN`.
  public static let mode = GPSDFieldMask(rawValue: 1 << 8)
  /// `HERR_SET`: `epx` and `epy` are finite.
  public static let horizontalError = GPSDFieldMask(rawValue: 1 << 9)
  /// `VERR_SET`: `epv` is finite.
  public static let verticalError = GPSDFieldMask(rawValue: 1 << 10)
  /// `SPEEDERR_SET`: `eps` is finite.
  public static let speedError = GPSDFieldMask(rawValue: 1 << 11)
}

/// A time as gpsd gives it: `fix.time`, a `timespec` of UTC since 1970.
public struct GPSDTime: Sendable, Hashable, Codable {
  public var seconds: Int64
  public var nanoseconds: Int64

  public init(seconds: Int64, nanoseconds: Int64) {
    self.seconds = seconds
    self.nanoseconds = nanoseconds
  }

  /// Seconds since 1970 as a `Double` (microsecond precision for current dates, plenty for
  /// a 1 Hz logger).
  public var secondsSince1970: Double { Double(seconds) + Double(nanoseconds) / 1_000_000_000 }
}

/// The fields of one gpsd TPV ("time-position-velocity") report, copied out of libgps's
/// `gps_data_t` by BoardLinux (or decoded from the JSON line by `GPSDJSON`), with libgps's
/// conventions kept as they are: every `Double` is NaN when unknown, `fields` says what the
/// report filled, `mode` is gpsd's raw value (0 not seen, 1 no fix, 2 2D, 3 3D).
///
/// Nothing here is judged yet: `GPSDMapping` decides what the snapshot means for the core.
/// Equality treats NaN as equal to NaN (two snapshots are equal when the same fields are
/// unknown and the known ones match), so snapshots can be compared in tests.
public struct TPVSnapshot: Sendable, Equatable {
  public var fields: GPSDFieldMask
  /// gpsd `fix.mode`.
  public var mode: Int
  /// gpsd `fix.status` (1 plain GPS, 2 DGPS, ... 0 unknown).
  public var status: Int
  /// `fix.time`; nil when libgps left it at zero (the report had no time).
  public var time: GPSDTime?
  /// `ept`, seconds.
  public var timeError: Double
  public var latitude: Double
  public var longitude: Double
  /// `altHAE`, metres above the WGS84 ellipsoid.
  public var altitudeHAE: Double
  /// `altMSL`, metres above mean sea level.
  public var altitudeMSL: Double
  /// `geoid_sep`, MSL above the ellipsoid, metres.
  public var geoidSeparation: Double
  /// `eph`, estimated horizontal position error, metres (gpsd aims at 95 %).
  public var eph: Double
  /// `epx`, `epy`: longitude and latitude error, metres.
  public var epx: Double
  public var epy: Double
  /// `epv`, vertical error, metres.
  public var epv: Double
  /// Course over ground, degrees from true north.
  public var track: Double
  /// Speed over ground, m/s.
  public var speed: Double
  /// `eps`, speed error, m/s.
  public var eps: Double
  /// Climb rate, m/s.
  public var climb: Double
  /// GPS−UTC leap seconds, when gpsd knows them (0 otherwise).
  public var leapSeconds: Int

  /// A snapshot with nothing known: what libgps holds after a TPV with no fields.
  public init(
    fields: GPSDFieldMask = [], mode: Int = 0, status: Int = 0, time: GPSDTime? = nil,
    timeError: Double = .nan, latitude: Double = .nan, longitude: Double = .nan,
    altitudeHAE: Double = .nan, altitudeMSL: Double = .nan, geoidSeparation: Double = .nan,
    eph: Double = .nan, epx: Double = .nan, epy: Double = .nan, epv: Double = .nan,
    track: Double = .nan, speed: Double = .nan, eps: Double = .nan, climb: Double = .nan,
    leapSeconds: Int = 0
  ) {
    self.fields = fields
    self.mode = mode
    self.status = status
    self.time = time
    self.timeError = timeError
    self.latitude = latitude
    self.longitude = longitude
    self.altitudeHAE = altitudeHAE
    self.altitudeMSL = altitudeMSL
    self.geoidSeparation = geoidSeparation
    self.eph = eph
    self.epx = epx
    self.epy = epy
    self.epv = epv
    self.track = track
    self.speed = speed
    self.eps = eps
    self.climb = climb
    self.leapSeconds = leapSeconds
  }

  public static func == (a: TPVSnapshot, b: TPVSnapshot) -> Bool {
    func same(_ x: Double, _ y: Double) -> Bool { x == y || (x.isNaN && y.isNaN) }
    return a.fields == b.fields && a.mode == b.mode && a.status == b.status && a.time == b.time
      && same(a.timeError, b.timeError) && same(a.latitude, b.latitude)
      && same(a.longitude, b.longitude) && same(a.altitudeHAE, b.altitudeHAE)
      && same(a.altitudeMSL, b.altitudeMSL) && same(a.geoidSeparation, b.geoidSeparation)
      && same(a.eph, b.eph) && same(a.epx, b.epx) && same(a.epy, b.epy) && same(a.epv, b.epv)
      && same(a.track, b.track) && same(a.speed, b.speed) && same(a.eps, b.eps)
      && same(a.climb, b.climb) && a.leapSeconds == b.leapSeconds
  }
}
