import CGPS
import CLinuxShims
import LinuxSupport
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
  /// A DEVICES report (sent after WATCH): how many receivers gpsd has open.
  case devices(count: Int)
  /// gpsd's ERROR report.
  case error(String)
  /// Another class (SKY, WATCH, DEVICES, GST, ...), named when the line says.
  case other(String?)
}

/// One connection to gpsd: libgps's `gps_open` and `gps_stream(WATCH_ENABLE|WATCH_JSON)` to
/// connect and ask for JSON reports, the socket read here, each line parsed by libgps's
/// `gps_unpack`, `gps_close`. Use it from one thread at a time (it keeps its line buffer);
/// `GPSDSource` owns one.
///
/// Facts it is built on (libgps 3.22, API 11):
/// - `gps_data_t` is ~24 KB: allocated on the heap once and reused across reconnects.
/// - `set` is not cleared by `gps_unpack`: it is cleared here before each line, and a TPV is
///   recognised by `STATUS_SET`, which libgps sets for TPVs only.
/// - The socket is non-blocking. A reader polls it (with its stop signal, and no timeout unless
///   it has a deadline of its own) and reads until nil, or reads whenever it chooses to look
///   (the engine, at its tick): a gpsd that stalls mid-line blocks nothing.
/// - Each packet is stamped by the kernel on arrival (SO_TIMESTAMPNS, CLOCK_REALTIME). For TCP
///   the stamp given with a read is the newest packet's, so reports read in one batch share it;
///   `GPSDSourceLoop` places earlier epochs of a batch by their GPS times.
/// - libgps writes with `write()`, so a write to a gpsd that has gone raises SIGPIPE: call it
///   from a thread that blocks SIGPIPE (`GPSDSource`'s thread does), or ignore SIGPIPE in the
///   process. Reading never writes.
public final class GPSDConnection {
  private let data: UnsafeMutablePointer<gps_data_t>
  private var line: [CChar]
  public private(set) var isOpen = false
  /// When the report `read()` last returned arrived: CLOCK_REALTIME seconds of the kernel's
  /// stamp on the newest packet of the `recv` that completed its line.
  public private(set) var lastArrival: Double?
  /// Bytes received and not yet returned as lines; `receivedHead` is where the next line starts.
  private var received: [UInt8] = []
  private var receivedHead = 0
  /// Where in `received` a complete line ends (the index after its newline), with its arrival.
  private var completeLines: [(end: Int, arrival: Double)] = []
  private var completeHead = 0
  private var chunk = [UInt8](repeating: 0, count: 16_384)
  /// The line handed to `gps_unpack` (which wants it writable and NUL-terminated).
  private var whole: [CChar] = []

  /// The report classes decoded; the rest are only named.
  static let classesUsed: Set<String> = ["TPV", "VERSION", "DEVICE", "DEVICES", "ERROR"]
  /// Bytes received on this connection (to tell a silent peer from one that sends garbage).
  public private(set) var bytesReceived = 0

  /// The start of the line `read()` last returned, printable, for messages about a peer that
  /// is not gpsd.
  public var lastLineStart: String {
    let text = line.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    let shown = text.prefix(40).map {
      $0.isASCII && ($0.isLetter || $0.isNumber || $0.isPunctuation || $0 == " " || $0.isSymbol) ? String($0) : "?"
    }
    return shown.joined() + (text.count > 40 ? "…" : "")
  }

  /// The longest line accepted: gpsd's JSON reports are at most a few KB (a SKY of 60+
  /// satellites); a peer sending more without a newline is not speaking gpsd's protocol.
  public static let maximumLineLength = 65_536

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
    received.removeAll(keepingCapacity: true)
    receivedHead = 0
    completeLines.removeAll()
    completeHead = 0
    lastArrival = nil
    bytesReceived = 0
    let fd = cgps_fd(data)
    if fd >= 0 {
      let flags = fcntl(fd, F_GETFL)
      if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
      // Without stamps (a kernel that refuses them) a line's arrival is the time it is read.
      _ = shim_socket_stamp_arrivals(fd)
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

  /// One report, nil when no complete line is buffered or waiting on the socket (it never
  /// blocks: call it until nil after each POLLIN, or whenever the caller chooses to look, since
  /// one `recv` may bring several reports). Throws when the connection is gone or the peer
  /// sends what cannot be gpsd's (a line longer than `maximumLineLength`); the connection is
  /// then closed. `lastArrival` tells when the returned report arrived.
  ///
  /// The socket is read here, not by `gps_read`, so that the kernel's arrival stamp
  /// (SO_TIMESTAMPNS) comes with the data: a reader that takes its reports a second late (the
  /// engine, at its tick) still knows when each came. Each line is handed to libgps's own
  /// parser, `gps_unpack`, as `gps_read` would.
  public func read() throws(GPSDError) -> GPSDMessage? {
    guard isOpen else {
      throw GPSDError(operation: .read, code: 0, message: "not connected")
    }
    guard let next = try nextLine() else { return nil }
    lastArrival = next.arrival
    let length = min(next.bytes.count, line.count - 1)
    line.withUnsafeMutableBufferPointer { buffer in
      for i in 0..<length { buffer[i] = CChar(bitPattern: next.bytes[next.bytes.startIndex + i]) }
      buffer[length] = 0
    }
    let name = reportClass()
    if let name, !Self.classesUsed.contains(name) {
      // A SKY (the largest report of an epoch), WATCH, DEVICES, GST...: nothing here uses
      // them, so libgps need not decode them.
      return .other(name)
    }
    whole.removeAll(keepingCapacity: true)
    whole.append(contentsOf: next.bytes.lazy.map { CChar(bitPattern: $0) })
    whole.append(0)
    cgps_clear_set(data)
    _ = whole.withUnsafeMutableBufferPointer { gps_unpack($0.baseAddress, data) }
    let set = cgps_set(data)
    if set & cgps_mask_status() != 0 {
      var raw = cgps_tpv()
      cgps_copy_tpv(data, &raw)
      return .tpv(Self.snapshot(raw))
    }
    if set & cgps_mask_version() != 0 {
      return .version(String(cString: cgps_version_release(data)))
    }
    switch name {
    case "DEVICE":
      // libgps sets no mask bit for `"activated":0`, so the raw line is decoded here.
      let text = line.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
      if let report = GPSDJSON.device(from: text) { return .device(report) }
      return .other(name)
    case "DEVICES":
      // Each open receiver is one DEVICE object in the list (gpsd_json(5)).
      let text = line.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
      return .devices(count: max(0, text.components(separatedBy: "{\"class\":\"DEVICE\"").count - 1))
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

  /// The next complete line (without its newline) and when it arrived; reads the socket
  /// (without waiting) when none is buffered. nil when nothing complete is there.
  private func nextLine() throws(GPSDError) -> (bytes: ArraySlice<UInt8>, arrival: Double)? {
    while completeHead == completeLines.count {
      if receivedHead > 0 {  // every complete line was handed out: drop them
        received.removeFirst(receivedHead)
        receivedHead = 0
        completeLines.removeAll(keepingCapacity: true)
        completeHead = 0
      }
      var arrival = -Double.infinity
      let got = chunk.withUnsafeMutableBytes { buffer in
        shim_receive_stamped(cgps_fd(data), buffer.baseAddress, buffer.count, &arrival)
      }
      if got < 0 {
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK { return nil }
        if code == EINTR { continue }
        close(saying: false)
        throw GPSDError(operation: .read, code: code, message: Self.describe(code, fallback: "recv failed"))
      }
      if got == 0 {
        // The peer is gone: no WATCH_DISABLE (writing to it would raise SIGPIPE).
        close(saying: false)
        throw GPSDError(operation: .read, code: 0, message: "connection closed by gpsd")
      }
      if !arrival.isFinite { arrival = SystemClocks.wall() }
      bytesReceived += got
      let start = received.count
      received.append(contentsOf: chunk[0..<got])
      for index in start..<received.count where received[index] == 10 {
        completeLines.append((index + 1, arrival))
      }
      let unfinished = received.count - (completeLines.last?.end ?? receivedHead)
      if unfinished > Self.maximumLineLength {
        close(saying: false)
        throw GPSDError(
          operation: .read, code: EMSGSIZE,
          message: "more than \(Self.maximumLineLength) bytes without a line end: not gpsd's JSON")
      }
    }
    let (end, arrival) = completeLines[completeHead]
    completeHead += 1
    var bytes = received[receivedHead..<(end - 1)]
    if bytes.last == 13 { bytes = bytes.dropLast() }
    receivedHead = end
    return (bytes, arrival)
  }

  /// Closes without a word to the peer (it is not gpsd, or not answering): nothing is
  /// written, so a peer that has gone raises no SIGPIPE on any thread.
  public func abandon() {
    close(saying: false)
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
