import CGPS
import SensorProtocols

#if canImport(Glibc)
  import Glibc
#endif

/// A libgps call that failed.
public struct GPSDError: Error, Sendable, Hashable, CustomStringConvertible {
  public enum Operation: String, Sendable, Hashable {
    /// `gps_open`: gpsd not running, host unknown, port refused.
    case open
    /// `gps_stream`: the WATCH command could not be sent.
    case stream
    /// `gps_read`: the connection closed or broke (gpsd stopped, restarted, or dropped us as a
    /// slow reader), or a line overflowed libgps's buffer.
    case read
    /// No memory for `gps_data_t`.
    case allocate
  }

  public var operation: Operation
  /// The negative code libgps returned through errno (`NL_NOCONNECT` = -6 ...), a positive
  /// errno, or 0 when libgps said nothing more.
  public var code: Int32
  /// `gps_errstr(code)`, or a plain description when there is no code.
  public var message: String

  public var description: String { "gps_\(operation.rawValue): \(message)" }
}

/// One report read from gpsd.
public enum GPSDMessage: Sendable {
  /// A TPV, copied out of `gps_data_t` (`set` cleared before the read, so the mask is this
  /// report's own).
  case tpv(TPVSnapshot)
  /// gpsd's VERSION greeting: its release ("3.22").
  case version(String)
  /// A DEVICE report: gpsd opened (`activated` true) or closed (false) a receiver.
  case device(GPSDJSON.DeviceReport)
  /// gpsd's ERROR report.
  case error(String)
  /// Another class (SKY, WATCH, DEVICES, GST, ...), named when the line says.
  case other(String?)
}

/// One connection to gpsd through libgps: `gps_open`, `gps_stream(WATCH_ENABLE|WATCH_JSON)`,
/// `gps_waiting`, `gps_read`, `gps_close`. Use it from one thread only (libgps keeps its line
/// buffer in `gps_data_t`); `GPSDSource` owns one on its device thread.
///
/// Facts it is built on (libgps 3.22, API 11):
/// - `gps_data_t` is ~24 KB: allocated on the heap once and reused across reconnects.
/// - `set` is not cleared by `gps_read`: it is cleared here before each read, and a TPV is
///   recognised by `STATUS_SET`, which libgps sets for TPVs only.
/// - `gps_read` returns 0 for a partial line, a negative value when the connection is gone
///   (errno is often 0 then), and copies the raw line into the buffer given.
/// - libgps leaves its socket non-blocking and returns 0 from `gps_read` when `recv` has nothing
///   (EAGAIN) or only part of a line. The reader polls the socket (with its stop signal, and no
///   timeout unless it has a deadline of its own), then reads until nil: one wake-up per batch
///   of reports, none while gpsd is quiet, and a gpsd that stalls mid-line blocks nothing.
/// - libgps writes with `write()`, so a write to a gpsd that has gone raises SIGPIPE: call it
///   from a thread that blocks SIGPIPE (`GPSDSource`'s thread does), or ignore SIGPIPE in the
///   process.
public final class GPSDConnection {
  private let data: UnsafeMutablePointer<gps_data_t>
  private var line: [CChar]
  public private(set) var isOpen = false

  /// The maximum line copied for classification (gpsd's own JSON lines are ≤ 4 KB; a longer
  /// one is only truncated in the copy, libgps still parses it whole).
  public static let lineBufferSize = 8_192

  public init() throws(GPSDError) {
    guard let data = cgps_alloc() else {
      throw GPSDError(operation: .allocate, code: ENOMEM, message: "no memory for gps_data_t")
    }
    self.data = data
    self.line = [CChar](repeating: 0, count: Self.lineBufferSize)
  }

  deinit {
    close()
    cgps_free(data)
  }

  /// Connects (`gps_open`) and asks for JSON reports (`gps_stream(WATCH_ENABLE|WATCH_JSON)`).
  /// The socket stays non-blocking, as libgps leaves it: `read()` never waits; wait for
  /// `fileDescriptor` to be readable (poll) before reading again.
  public func open(host: String, port: String) throws(GPSDError) {
    close()
    cgps_reset(data)
    cgps_set_errno(0)
    let status = gps_open(host, port, data)
    if status != 0 {
      let code = cgps_errno()
      throw GPSDError(operation: .open, code: code, message: Self.describe(code, fallback: "cannot connect"))
    }
    isOpen = true
    let fd = cgps_fd(data)
    if fd >= 0 {
      let flags = fcntl(fd, F_GETFL)
      if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }
    cgps_set_errno(0)
    if gps_stream(data, cgps_watch_enable_json(), nil) != 0 {
      let code = cgps_errno()
      close(saying: false)
      throw GPSDError(operation: .stream, code: code, message: Self.describe(code, fallback: "cannot send WATCH"))
    }
  }

  /// The connection's socket (to poll for POLLIN), -1 when closed.
  public var fileDescriptor: Int32 { isOpen ? cgps_fd(data) : -1 }

  /// `gps_waiting`: whether a report can be read within `timeout` seconds (true at once when
  /// libgps already holds buffered data).
  public func waiting(timeout: Double) -> Bool {
    guard isOpen else { return false }
    let micros = Int32(max(0, min(timeout, 60)) * 1_000_000)
    return gps_waiting(data, micros)
  }

  /// `gps_read`: one report, nil when no complete line is buffered or waiting on the socket
  /// (it never blocks: call it until nil after each POLLIN, since one `recv` may bring several
  /// reports and libgps hands out one per call). Throws when the connection is gone; the
  /// connection is then closed.
  public func read() throws(GPSDError) -> GPSDMessage? {
    guard isOpen else {
      throw GPSDError(operation: .read, code: 0, message: "not connected")
    }
    cgps_clear_set(data)
    line[0] = 0
    cgps_set_errno(0)
    let status = line.withUnsafeMutableBufferPointer { buffer in
      gps_read(data, buffer.baseAddress, Int32(buffer.count))
    }
    if status < 0 {
      let code = cgps_errno()
      // The peer is gone: no WATCH_DISABLE (writing to it would raise SIGPIPE).
      close(saying: false)
      throw GPSDError(
        operation: .read, code: code, message: Self.describe(code, fallback: "connection closed by gpsd"))
    }
    if status == 0 { return nil }
    let set = cgps_set(data)
    if set & cgps_mask_status() != 0 {
      var raw = cgps_tpv()
      cgps_copy_tpv(data, &raw)
      return .tpv(Self.snapshot(raw))
    }
    if set & cgps_mask_version() != 0 {
      return .version(String(cString: cgps_version_release(data)))
    }
    let name = reportClass()
    switch name {
    case "DEVICE":
      // libgps sets no mask bit for `"activated":0`, so the raw line is decoded here.
      let text = line.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
      if let report = GPSDJSON.device(from: text) { return .device(report) }
      return .other(name)
    case "ERROR":
      let text = line.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
      if let members = GPSDJSON.members(of: text),
        let message = members.first(where: { $0.key == "message" }), case .string(let s) = message.value
      {
        return .error(s)
      }
      return .error(text)
    default:
      return .other(name)
    }
  }

  /// `gps_stream(WATCH_DISABLE)` then `gps_close`; harmless when not open.
  public func close() {
    close(saying: true)
  }

  private func close(saying goodbye: Bool) {
    guard isOpen else { return }
    if goodbye { _ = gps_stream(data, cgps_watch_disable(), nil) }
    _ = gps_close(data)
    isOpen = false
  }

  /// The `class` at the start of the copied line (gpsd writes it first), without decoding
  /// the whole line.
  private func reportClass() -> String? {
    line.withUnsafeBufferPointer { buffer -> String? in
      let prefix: [UInt8] = Array("{\"class\":\"".utf8)
      guard buffer.count > prefix.count + 1 else { return nil }
      for (i, byte) in prefix.enumerated() where UInt8(bitPattern: buffer[i]) != byte { return nil }
      var end = prefix.count
      while end < min(buffer.count, prefix.count + 16), buffer[end] != 0, buffer[end] != 34 { end += 1 }
      guard end < buffer.count, buffer[end] == 34 else { return nil }
      let bytes = (prefix.count..<end).map { UInt8(bitPattern: buffer[$0]) }
      return String(decoding: bytes, as: UTF8.self)
    }
  }

  /// libgps's flat copy as the Swift snapshot, the mask translated bit by bit.
  static func snapshot(_ raw: cgps_tpv) -> TPVSnapshot {
    TPVSnapshot(
      fields: fieldMask(raw.set), mode: Int(raw.mode), status: Int(raw.status),
      time: raw.time_sec != 0 || raw.time_nsec != 0
        ? GPSDTime(seconds: raw.time_sec, nanoseconds: raw.time_nsec) : nil,
      timeError: raw.ept, latitude: raw.latitude, longitude: raw.longitude,
      altitudeHAE: raw.alt_hae, altitudeMSL: raw.alt_msl, geoidSeparation: raw.geoid_sep,
      eph: raw.eph, epx: raw.epx, epy: raw.epy, epv: raw.epv, track: raw.track, speed: raw.speed,
      eps: raw.eps, climb: raw.climb, leapSeconds: Int(raw.leap_seconds))
  }

  /// libgps's `set` bits as `GPSDFieldMask`.
  static func fieldMask(_ set: UInt64) -> GPSDFieldMask {
    var mask: GPSDFieldMask = []
    if set & cgps_mask_time() != 0 { mask.insert(.time) }
    if set & cgps_mask_timerr() != 0 { mask.insert(.timeError) }
    if set & cgps_mask_latlon() != 0 { mask.insert(.position) }
    if set & cgps_mask_altitude() != 0 { mask.insert(.altitude) }
    if set & cgps_mask_speed() != 0 { mask.insert(.speed) }
    if set & cgps_mask_track() != 0 { mask.insert(.track) }
    if set & cgps_mask_climb() != 0 { mask.insert(.climb) }
    if set & cgps_mask_status() != 0 { mask.insert(.status) }
    if set & cgps_mask_mode() != 0 { mask.insert(.mode) }
    if set & cgps_mask_herr() != 0 { mask.insert(.horizontalError) }
    if set & cgps_mask_verr() != 0 { mask.insert(.verticalError) }
    if set & cgps_mask_speederr() != 0 { mask.insert(.speedError) }
    return mask
  }

  /// `gps_errstr` for libgps's negative codes, `strerror` for positive errno values.
  static func describe(_ code: Int32, fallback: String) -> String {
    if code < 0, let text = gps_errstr(code) { return String(cString: text) }
    if code > 0, let text = strerror(code) { return String(cString: text) }
    return fallback
  }
}
