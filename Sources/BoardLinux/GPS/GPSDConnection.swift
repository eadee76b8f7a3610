import CLinuxShims
import LinuxSupport
import SensorProtocols

#if canImport(Glibc)
  import Glibc
#endif

/// A gpsd connection that failed: what was being done, the errno, and a message naming the
/// endpoint.
public struct GPSDError: Error, Sendable, Hashable, CustomStringConvertible {
  public enum Operation: String, Sendable, Hashable {
    /// Resolving and connecting: gpsd not running, host unknown, port refused.
    case open
    /// Sending the WATCH command.
    case stream
    /// Reading: the connection closed or broke (gpsd stopped, restarted, or dropped us as a
    /// slow reader), or the peer sent a line too long to be gpsd's.
    case read
  }

  public var operation: Operation
  /// The errno of the failed call, or 0 when there is none (a name that did not resolve, a
  /// closed connection).
  public var code: Int32
  public var message: String

  public var description: String { "gpsd \(operation.rawValue): \(message)" }
}

/// One report read from gpsd.
public enum GPSDMessage: Sendable {
  /// A TPV, decoded as libgps decodes it (`GPSDJSON.tpv`).
  case tpv(TPVSnapshot)
  /// gpsd's VERSION greeting: its release ("3.22").
  case version(String)
  /// A DEVICE report: gpsd opened (`activated` true) or closed (false) a receiver.
  case device(GPSDJSON.DeviceReport)
  /// A DEVICES report (sent after WATCH): how many receivers gpsd has open.
  case devices(count: Int)
  /// gpsd's ERROR report.
  case error(String)
  /// Another class (SKY, WATCH, GST, ...), or a line that is not a report this client reads.
  case other
}

/// One connection to gpsd, speaking its JSON protocol (gpsd_json(5)) as libgps does: a TCP
/// connection, `?WATCH={"enable":true,"json":true};` (the bytes libgps's
/// `gps_stream(WATCH_ENABLE|WATCH_JSON)` sends), then one JSON report a line, each decoded by
/// `GPSDJSON` to the values libgps's `gps_unpack` gives (checked line by line against libgps
/// in BoardLinuxTests). Use it from one thread at a time (it keeps its line buffer);
/// `GPSDSource` owns one.
///
/// Why not libgps itself: it was only ever used for connecting and `gps_unpack`, and linking
/// it brings libstdc++, libdbus, libsystemd, libgcrypt and five more libraries into the
/// service (about 2 MiB of its resident memory on a board, and its start-up), with an API that
/// changes between Debian releases (API 11 in bookworm's 3.22, 14 in trixie's 3.25). gpsd's
/// JSON protocol is its documented client interface, the same in both.
///
/// Facts it is built on:
/// - gpsd sends its VERSION greeting first on every connection, then, after WATCH, DEVICES,
///   WATCH, and reports (TPV, SKY, ...) of up to `GPS_JSON_RESPONSE_MAX` (4096) bytes a line.
/// - The socket is non-blocking. A reader polls it (with its stop signal, and no timeout unless
///   it has a deadline of its own) and reads until nil, or reads whenever it chooses to look
///   (the engine, at its tick): a gpsd that stalls mid-line blocks nothing.
/// - Each packet is stamped by the kernel on arrival (SO_TIMESTAMPNS, CLOCK_REALTIME). For TCP
///   the stamp given with a read is the newest packet's, so reports read in one batch share it;
///   `GPSDSourceLoop` places earlier epochs of a batch by their GPS times.
/// - Writes use `MSG_NOSIGNAL`: a gpsd that has gone is an error, never SIGPIPE.
public final class GPSDConnection {
  private var socket: TCPSocket?
  public var isOpen: Bool { socket != nil }
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
  /// The last `recv` took less than `chunk` holds: the socket had nothing more then, so the
  /// next look for a line returns nil without asking it again (an EAGAIN `recv` a second is
  /// a system call for nothing on the recording path); the look after that reads it again.
  private var drained = false
  /// The first bytes of the line `read()` last returned, for messages about a peer that is
  /// not gpsd.
  private var lineStart: [UInt8] = []

  /// Bytes received on this connection (to tell a silent peer from one that sends garbage).
  public private(set) var bytesReceived = 0

  /// The start of the line `read()` last returned, printable, for messages about a peer that
  /// is not gpsd.
  public var lastLineStart: String {
    let text = String(decoding: lineStart.prefix(while: { $0 != 0 }), as: UTF8.self)
    let shown = text.prefix(40).map {
      $0.isASCII && ($0.isLetter || $0.isNumber || $0.isPunctuation || $0 == " " || $0.isSymbol) ? String($0) : "?"
    }
    return shown.joined() + (text.count > 40 ? "…" : "")
  }

  /// The longest line accepted: gpsd's JSON reports are at most a few KB (a SKY of 60+
  /// satellites); a peer sending more without a newline is not speaking gpsd's protocol.
  public static let maximumLineLength = 65_536

  /// What libgps's `gps_stream` sends to start and to stop JSON reports.
  static let watchEnable = Array(#"?WATCH={"enable":true,"json":true};"#.utf8)
  static let watchDisable = Array(#"?WATCH={"enable":false};"#.utf8)

  public init() {}

  deinit {
    close()
  }

  /// Connects and asks for JSON reports (WATCH). The socket is then non-blocking: `read()`
  /// never waits; wait for `fileDescriptor` to be readable (poll) before reading again.
  /// Connecting blocks (DNS, a remote host): call it where that stalls nothing else.
  public func open(host: String, port: String) throws(GPSDError) {
    close()
    received.removeAll(keepingCapacity: true)
    receivedHead = 0
    drained = false
    completeLines.removeAll()
    completeHead = 0
    lastArrival = nil
    bytesReceived = 0
    lineStart.removeAll()
    let connected: TCPSocket
    do {
      connected = try TCPSocket.connect(host: host, port: port)
    } catch {
      throw GPSDError(operation: .open, code: error.errno, message: error.description)
    }
    // Without stamps (a kernel that refuses them) a line's arrival is the time it is read.
    _ = shim_socket_stamp_arrivals(connected.descriptor)
    do {
      try connected.setNonBlocking()
      try connected.send(Self.watchEnable)
    } catch {
      connected.close()
      throw GPSDError(
        operation: .stream, code: error.errno, message: "cannot send WATCH to \(host):\(port): \(error)")
    }
    socket = connected
  }

  /// The connection's socket (to poll for POLLIN), -1 when closed.
  public var fileDescriptor: Int32 { socket?.descriptor ?? -1 }

  /// One report, nil when no complete line is buffered or waiting on the socket (it never
  /// blocks: call it until nil after each POLLIN, or whenever the caller chooses to look, since
  /// one `recv` may bring several reports). Throws when the connection is gone or the peer
  /// sends what cannot be gpsd's (a line longer than `maximumLineLength`); the connection is
  /// then closed. `lastArrival` tells when the returned report arrived.
  ///
  /// The socket is read here so that the kernel's arrival stamp (SO_TIMESTAMPNS) comes with
  /// the data: a reader that takes its reports a second late (the engine, at its tick) still
  /// knows when each came.
  public func read() throws(GPSDError) -> GPSDMessage? {
    guard isOpen else {
      throw GPSDError(operation: .read, code: 0, message: "not connected")
    }
    guard let next = try nextLine() else { return nil }
    lastArrival = next.arrival
    lineStart.removeAll(keepingCapacity: true)
    lineStart.append(contentsOf: next.bytes.prefix(64))
    return next.bytes.withUnsafeBufferPointer { Self.decode($0) }
  }

  /// Every report that has arrived, into `look` (its storage reused), with each one's arrival
  /// stamp; on a connection gpsd has not `greeted` on yet, a first line that is not its
  /// VERSION greeting ends the look there. Never blocks.
  func readAvailable(into look: inout GPSDRead, greeted: Bool) {
    look.messages.removeAll(keepingCapacity: true)
    look.notGreeting = nil
    look.failure = nil
    do {
      while let message = try read() {
        if !greeted, look.messages.isEmpty {
          guard case .version = message else {
            look.notGreeting = lastLineStart
            break
          }
        }
        look.messages.append((message, lastArrival))
      }
    } catch {
      look.failure = error
    }
    look.bytesReceived = bytesReceived
  }

  /// One line as a message: the class is read from the line's start (gpsd writes it first)
  /// and only the classes used are decoded; a SKY (the largest report of an epoch) is only
  /// told apart from them.
  static func decode(_ line: UnsafeBufferPointer<UInt8>) -> GPSDMessage {
    let report =
      reportClass(line)
      ?? GPSDJSON.members(of: line).flatMap { members in
        members.first { $0.key == "class" }.flatMap {
          if case .string(var name) = $0.value { name.withUTF8 { ReportClass($0) } } else { nil }
        }
      }
    switch report {
    case .tpv:
      if let snapshot = GPSDJSON.tpv(from: line) { return .tpv(snapshot) }
    case .version:
      if let release = GPSDJSON.versionRelease(from: line) { return .version(release) }
    case .device:
      if let report = GPSDJSON.device(from: line) { return .device(report) }
    case .devices:
      // Each open receiver is one DEVICE object in the list (gpsd_json(5)).
      let text = String(decoding: line, as: UTF8.self)
      return .devices(count: max(0, text.components(separatedBy: "{\"class\":\"DEVICE\"").count - 1))
    case .error:
      return .error(GPSDJSON.errorMessage(from: line) ?? String(decoding: line, as: UTF8.self))
    case .other, nil:
      break
    }
    return .other
  }

  /// The classes of report this client reads, told apart by their bytes: a report a second
  /// (SKY, or a TPV) makes no String.
  enum ReportClass {
    case tpv, version, device, devices, error, other

    init(_ name: UnsafeBufferPointer<UInt8>) {
      // Each case below has checked the length.
      func named(_ text: StaticString) -> Bool {
        guard let base = name.baseAddress else { return false }
        return memcmp(base, text.utf8Start, name.count) == 0
      }
      self =
        switch name.count {
        case 3 where named("TPV"): .tpv
        case 5 where named("ERROR"): .error
        case 6 where named("DEVICE"): .device
        case 7 where named("VERSION"): .version
        case 7 where named("DEVICES"): .devices
        default: .other
        }
    }
  }

  /// The `class` at the start of a line, `{"class":"NAME"`, without decoding the rest.
  private static func reportClass(_ line: UnsafeBufferPointer<UInt8>) -> ReportClass? {
    // Compared as bytes (a generic `starts(with:)` over a String's UTF-8 cost more than the
    // rest of a SKY's handling).
    let prefix: StaticString = #"{"class":""#
    let length = prefix.utf8CodeUnitCount
    guard line.count > length + 1,
      let start = line.baseAddress,
      memcmp(start, prefix.utf8Start, length) == 0
    else { return nil }
    var end = length
    while end < min(line.count, length + 16), line[end] != 34 { end += 1 }
    guard end < line.count, line[end] == 34 else { return nil }
    return ReportClass(UnsafeBufferPointer(rebasing: line[length..<end]))
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
      if drained {
        drained = false
        return nil
      }
      var arrival = -Double.infinity
      let got = chunk.withUnsafeMutableBytes { buffer in
        shim_receive_stamped(fileDescriptor, buffer.baseAddress, buffer.count, &arrival)
      }
      if got < 0 {
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK { return nil }
        if code == EINTR { continue }
        close(saying: false)
        throw GPSDError(operation: .read, code: code, message: String(cString: strerror(code)))
      }
      if got == 0 {
        // The peer is gone: nothing to say to it.
        close(saying: false)
        throw GPSDError(operation: .read, code: 0, message: "connection closed by gpsd")
      }
      if !arrival.isFinite { arrival = SystemClocks.wall() }
      drained = got < chunk.count
      bytesReceived += got
      let start = received.count
      received.append(contentsOf: chunk[0..<got])
      received.withUnsafeBufferPointer { all in
        guard let base = all.baseAddress else { return }
        var from = start
        while from < all.count, let newline = memchr(base + from, 10, all.count - from) {
          let end = base.distance(to: newline.assumingMemoryBound(to: UInt8.self)) + 1
          completeLines.append((end, arrival))
          from = end
        }
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

  /// Closes without a word to the peer (it is not gpsd, or not answering).
  public func abandon() {
    close(saying: false)
  }

  /// Says `?WATCH={"enable":false};` (as libgps's `gps_stream(WATCH_DISABLE)`) and closes;
  /// harmless when not open.
  public func close() {
    close(saying: true)
  }

  private func close(saying goodbye: Bool) {
    guard let socket else { return }
    // A full or gone peer is not waited on: the goodbye is a courtesy.
    if goodbye { try? socket.send(Self.watchDisable, timeout: 0) }
    socket.close()
    self.socket = nil
  }
}
