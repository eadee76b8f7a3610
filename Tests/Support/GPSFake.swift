import CLinuxShims
import Foundation
import LinuxSupport
import SensorProtocols
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A real gpsd started by `gpsfake` (Debian package gpsd-clients), replaying a capture from
/// Tests/Fixtures/gpsd on a loopback port of its own.
///
/// In pipe mode (`-p`) gpsfake is itself a JSON client of the gpsd it started and writes every
/// report it receives to stdout: that is the reference, "what gpsd sent in this run", captured
/// into a file while our `GPSDSource` reads the same gpsd.
public final class GPSFake {
  public static let fixtures: String = {
    var url = URL(fileURLWithPath: #filePath)
    url.deleteLastPathComponent()
    url.deleteLastPathComponent()
    return url.appendingPathComponent("Fixtures/gpsd").path
  }()

  public static var isAvailable: Bool {
    FileManager.default.isExecutableFile(atPath: "/usr/bin/gpsfake")
      && FileManager.default.isExecutableFile(atPath: "/usr/sbin/gpsd")
  }

  public let port: Int
  public let capture: String
  private var pid: pid_t = 0
  private var exited = false
  private let directory: URL
  private let outputPath: String
  private let errorPath: String

  /// Starts `gpsfake` on `capture` (a file name in Tests/Fixtures/gpsd).
  /// - `singleShot`: one pass through the log (`-1`), then gpsfake ends and stops its gpsd;
  ///   otherwise the log repeats until `terminate()`.
  /// - `cycle`: seconds between sentences (`-c`).
  ///
  /// Spawned with `posix_spawn`, an empty signal mask and default signal actions: Foundation's
  /// `Process` starts children with most signals blocked, and a gpsd that cannot receive
  /// SIGTERM makes gpsfake spin for ever in its cleanup. The child keeps only its standard
  /// streams: a descriptor it inherited from this test process would be held for as long as
  /// gpsfake runs, and Foundation's `Pipe` is not close-on-exec, so another test's `Process`
  /// output pipe caught at that moment would not see its end until this replay ended (a
  /// `workoutctl status` that took 15 s in CI).
  /// - `losingTheReceiverAdd`: gpsfake's own add of its pty is lost, as in the race
  ///   `addReceiver` guards against, and the harness does not add it: gpsd serves its port but
  ///   has no receiver until the test calls `addReceiver` (see `lostAddGPSD`).
  public init(
    capture: String, port: Int, singleShot: Bool = true, cycle: Double = 0.005, losingTheReceiverAdd: Bool = false
  ) throws {
    self.port = port
    self.capture = capture
    directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "gpsfake-\(getpid())-\(port)-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    outputPath = directory.appendingPathComponent("reports.json").path
    errorPath = directory.appendingPathComponent("stderr.txt").path
    var arguments = [
      "/usr/bin/gpsfake", "-q", "-p", "-r", #"?WATCH={"json":true}"#, "-c", String(cycle), "-P", String(port),
    ]
    if singleShot { arguments.insert("-1", at: 1) }
    arguments.append(Self.fixtures + "/" + capture)
    // gpsfake names gpsd's control socket "$TMPDIR/gpsfake-<its pid>.sock" and waits only for
    // that file to exist before it adds its pty there (gps/fake.py: wait_ready, add_device, which
    // drops a refused connect without a word) and connects its own client to the TCP port. gpsd
    // leaves the file behind when it is killed, so in a shared /tmp a file of an earlier run with
    // the same pid (pids wrap at 32768 here) let gpsfake go on before gpsd was up: either "socket
    // error ... Connection refused", or worse, a gpsd that never got the pty (its clients see no
    // receiver and gpsfake blocks writing to a pty nobody reads). In this instance's own fresh
    // directory the file is gpsd's own.
    var environment = ProcessInfo.processInfo.environment.merging(["TMPDIR": directory.path]) { $1 }
    if losingTheReceiverAdd {
      // gpsfake runs the first executable "gpsd" it finds in GPSD_HOME (gps/fake.py: spawn_sub).
      let wrapper = directory.appendingPathComponent("gpsd").path
      try Self.lostAddGPSD.write(toFile: wrapper, atomically: true, encoding: .utf8)
      chmod(wrapper, 0o755)
      environment["GPSD_HOME"] = directory.path
    }
    // gpsd binds that socket a moment before it listens: a start refused in that moment is
    // tried again on the same port (the source under test keeps retrying it).
    for attempt in 1...3 {
      exited = false
      pid = try Self.spawn(arguments, environment: environment, stdout: outputPath, stderr: errorPath)
      if waitUntilListening() || attempt == 3 || !stderr.contains("socket error") { break }
    }
    if isRunning && !losingTheReceiverAdd { addReceiver() }
  }

  /// gpsd as gpsfake starts it ("-b -N -S port -F control-socket ..."), but with its control
  /// socket at "control-socket.real"; once gpsd serves its port, gpsfake's path becomes a plain
  /// file. gpsfake's add of its pty there is refused and dropped, and its client connects to a
  /// gpsd that has no receiver: the state gpsd's moment between bind() and listen() leaves.
  static let lostAddGPSD = #"""
    #!/bin/sh
    previous=
    for argument do
      shift
      if [ "$previous" = -F ]; then control=$argument; set -- "$@" "$argument.real"; else set -- "$@" "$argument"; fi
      previous=$argument
    done
    (
      tries=0
      while [ ! -S "$control.real" ] && [ $tries -lt 200 ]; do sleep 0.05; tries=$((tries + 1)); done
      sleep 0.5
      : > "$control"
    ) &
    exec /usr/sbin/gpsd "$@"

    """#

  /// What gpsd said to an add of gpsfake's pty.
  public enum ReceiverAdd: Equatable, Sendable {
    /// gpsd did not have it: gpsfake's own add was lost, and the pty is added now.
    case added
    /// gpsd had it already and changed nothing.
    case alreadyThere
  }

  /// Adds gpsfake's pty to its gpsd, in case gpsfake's own add was lost; nil when the pty or
  /// the control socket could not be found or reached in `timeout` seconds.
  ///
  /// gpsfake adds its pty through gpsd's control socket as soon as the socket's file exists
  /// (gps/fake.py: wait_ready, add_device), and drops a refused connect without a word. gpsd
  /// creates that file with bind() a moment before it listen()s on it (gpsd.c: filesock): an
  /// add that falls in that moment is lost, and gpsd has no receiver for the whole run (seen
  /// once, in CI on a loaded 2-core machine: trixie's gpsd 3.25, no fix in 30 s). Adding it
  /// again is harmless: gpsd refuses a device it already has and changes nothing (gpsd.c:
  /// handle_control, "already active").
  @discardableResult
  public func addReceiver(timeout: Double = 10) -> ReceiverAdd? {
    var pty: String?
    var socketPath: String?
    gpsdWaitUntil(timeout: timeout) {
      pty = receiverPath()
      socketPath = gpsdControlSocket()
      return (pty != nil && socketPath != nil) || !isRunning
    }
    guard let pty, let socketPath else { return nil }
    // The format gpsfake and gpsdctl use: "+path", CR LF, NUL. gpsd answers one line: "OK" or
    // "ERROR" up to 3.22, {"class":"ACK"} or {"class":"ERROR"} since 3.23.
    var answer: String?
    gpsdWaitUntil(timeout: timeout) {
      // A refused connect (gpsd between bind() and listen()) is tried again.
      if let control = try? UnixSocket.connect(path: socketPath) {
        defer { control.close() }
        try? control.setTimeouts(seconds: 5)
        if (try? control.writeAll("+\(pty)\r\n\0")) != nil { answer = try? control.readLine(limit: 256) }
      }
      return answer != nil || !isRunning
    }
    guard let answer else { return nil }
    if answer.contains("ERROR") { return .alreadyThere }
    return answer.contains("OK") || answer.contains("ACK") ? .added : nil
  }

  /// The pty gpsfake feeds the capture into (its slave side, the device gpsd opens), once
  /// gpsfake has made it. gpsfake holds two: a probe it opens first to see whether ptys work
  /// (and never closes), then the receiver's, whose slave it makes rw-rw-rw- for gpsd
  /// (gpsfake, gps/fake.py: FakePTY).
  public func receiverPath() -> String? {
    openFiles().reversed().first { path in
      var info = stat()
      return path.hasPrefix("/dev/pts/") && stat(path, &info) == 0 && info.st_mode & 0o777 == 0o666
    }
  }

  /// Waits until gpsd accepts connections on the port (true), or gpsfake has ended (false).
  private func waitUntilListening(timeout: Double = 30) -> Bool {
    var listening = false
    gpsdWaitUntil(timeout: timeout) {
      listening = Self.accepts(port: port)
      return listening || !isRunning
    }
    return listening
  }

  deinit {
    terminate()
    try? FileManager.default.removeItem(at: directory)
  }

  static func spawn(
    _ arguments: [String], environment: [String: String], stdout: String, stderr: String
  ) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    // A file, not a pipe: a long replay must never block on a full pipe.
    posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let closing = shim_spawn_close_from(&actions, 3)
    guard closing == 0 else { throw POSIXError(POSIXErrorCode(rawValue: closing) ?? .EINVAL) }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGPIPE, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGCHLD] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for case let pointer? in argv { free(pointer) } }
    var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for case let pointer? in envp { free(pointer) } }
    var pid: pid_t = 0
    let status = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, &envp)
    guard status == 0 else { throw POSIXError(POSIXErrorCode(rawValue: status) ?? .EIO) }
    return pid
  }

  /// Whether gpsfake is still running (reaps it when it has ended).
  public var isRunning: Bool {
    guard !exited else { return false }
    var status: Int32 = 0
    let result = waitpid(pid, &status, WNOHANG)
    if result == pid || result < 0 { exited = true }
    return !exited
  }

  /// Waits for gpsfake to end by itself (bounded); true if it did.
  @discardableResult
  public func waitForExit(timeout: Double = 120) -> Bool {
    gpsdWaitUntil(timeout: timeout) { !self.isRunning }
  }

  /// Ends gpsfake (SIGTERM: it stops its gpsd; SIGKILL to both if that does not work in 10 s).
  public func terminate() {
    guard isRunning else { return }
    let gpsd = gpsdPID()
    kill(pid, SIGTERM)
    if !waitForExit(timeout: 10) {
      if let gpsd { kill(gpsd, SIGKILL) }
      kill(pid, SIGKILL)
      waitForExit(timeout: 10)
    }
  }

  /// The gpsd that this gpsfake started (its child process).
  public func gpsdPID() -> pid_t? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8) else {
      return nil
    }
    for child in text.split(separator: " ").compactMap({ pid_t($0) }) {
      let comm = (try? String(contentsOfFile: "/proc/\(child)/comm", encoding: .utf8)) ?? ""
      if comm.hasPrefix("gpsd") { return child }
    }
    return nil
  }

  /// The control socket this run's gpsd was started with (its `-F` argument).
  public func gpsdControlSocket() -> String? {
    guard let gpsd = gpsdPID(),
      let text = try? String(contentsOfFile: "/proc/\(gpsd)/cmdline", encoding: .utf8)
    else { return nil }
    let arguments = text.split(separator: "\0", omittingEmptySubsequences: false).map(String.init)
    guard let index = arguments.firstIndex(of: "-F"), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
  }

  /// What gpsfake's descriptors refer to ("pipe:[1234]", a path, ...), as /proc shows them, in
  /// the order of their numbers (the order gpsfake opened them, as none is closed before).
  public func openFiles() -> [String] {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
    return fds.compactMap(Int.init).sorted().compactMap {
      try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")
    }
  }

  /// The directory this instance keeps its files in (gpsfake's TMPDIR).
  public var privateDirectory: String { directory.path }

  /// Kills this run's gpsd with SIGKILL (a crash, as far as its clients can tell).
  public func killGPSD() -> Bool {
    guard let pid = gpsdPID() else { return false }
    return kill(pid, SIGKILL) == 0
  }

  /// Every report gpsfake's own client received, as lines.
  public func reportLines() -> [String] {
    let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    return text.split(whereSeparator: \.isNewline).map(String.init).filter { $0.hasPrefix("{") }
  }

  /// The TPVs gpsd sent in this run, decoded as libgps would.
  public func referenceTPVs() -> [TPVSnapshot] {
    reportLines().compactMap { $0.hasPrefix(#"{"class":"TPV""#) ? GPSDJSON.tpv(from: $0) : nil }
  }

  public var stderr: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

  /// A TCP port on 127.0.0.1 that nobody listens on, below the kernel's ephemeral range
  /// (net.ipv4.ip_local_port_range). A port in that range can be taken by the source under test
  /// itself: while gpsd is not up yet it keeps connecting to the port, and a connection whose
  /// ephemeral source port happens to equal the port connects to itself (TCP simultaneous
  /// open) and holds it, so gpsd cannot bind it. Ports are handed out in turn from a random
  /// start, so tests running at once in this process never get the same one.
  public static func freePort() -> Int {
    let ephemeralLow =
      (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
      .flatMap { $0.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } } ?? 32768
    let range = 10_000..<max(ephemeralLow, 10_001)
    for _ in 0..<200 {
      let port = range.lowerBound + nextPort.add(1, ordering: .relaxed).oldValue % range.count
      if canBind(port: port) { return port }
    }
    return range.lowerBound + Int(getpid()) % range.count
  }

  private static let nextPort = Atomic<Int>(Int.random(in: 0..<20_000))

  /// Whether something accepts a TCP connection on 127.0.0.1:`port` (closed at once).
  private static func accepts(port: Int) -> Bool { onLoopback(port: port) { connect($0, $1, $2) } }

  /// Whether 127.0.0.1:`port` is free to bind (released at once).
  private static func canBind(port: Int) -> Bool { onLoopback(port: port) { bind($0, $1, $2) } }

  /// A TCP socket listening on 127.0.0.1:`port` (SO_REUSEADDR), for a test's stand-in for
  /// gpsd; the caller closes it.
  /// Close-on-exec: a gpsfake another test spawns meanwhile must not inherit it (it would hold
  /// the port after this test closes it).
  public static func listen(port: Int, backlog: Int32 = 16) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    let bound = onLoopback(port: port, socket: fd) { bind($0, $1, $2) }
    guard bound, Glibc.listen(fd, backlog) == 0 else {
      let code = errno
      close(fd)
      throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EADDRINUSE)
    }
    return fd
  }

  /// Calls `call` (connect or bind) with a fresh TCP socket and 127.0.0.1:`port`, then closes
  /// the socket; true when the call succeeded.
  private static func onLoopback(
    port: Int, socket given: Int32? = nil, _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32
  ) -> Bool {
    let fd = given ?? socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { if given == nil { close(fd) } }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        call(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }
}

/// Polls `condition` every 20 ms until it holds or `timeout` seconds pass.
@discardableResult
public func gpsdWaitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
  let deadline = gpsdMonotonicNow() + timeout
  while gpsdMonotonicNow() < deadline {
    if condition() { return true }
    usleep(20_000)
  }
  return condition()
}

public func gpsdMonotonicNow() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// What the source posted and traced, in the order its thread did it.

/// Something on gpsd's port that is not a working gpsd: it accepts connections and then says
/// nothing, sends random bytes, or sends a greeting line and then the given lines in turn, one
/// every `interval` seconds, for as long as it runs.
public final class FakeGPSDPeer: @unchecked Sendable {
  public enum Behaviour: Sendable {
    case silent
    case randomBytes
    case lines(greeting: String, repeating: [String])
  }

  private final class Shared: @unchecked Sendable {
    let running = Atomic<Bool>(true)
    let clients = Mutex<[Int32]>([])
  }

  public let port: Int
  private let listener: Int32
  private let shared = Shared()

  public init(port: Int, behaviour: Behaviour, interval: Double = 0.05) throws {
    self.port = port
    let fd = try GPSFake.listen(port: port, backlog: 8)
    listener = fd
    let shared = self.shared
    let thread = Thread {
      var lineIndex = 0
      while shared.running.load(ordering: .relaxed) {
        var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&ready, 1, Int32(interval * 1000)) > 0 {
          let client = accept(fd, nil, nil)
          if client >= 0 {
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)  // not inherited by another test's gpsfake
            shared.clients.withLock { $0.append(client) }
            if case .lines(let greeting, _) = behaviour { _ = Self.send(greeting + "\n", to: client) }
          }
        }
        for client in shared.clients.withLock({ $0 }) {
          switch behaviour {
          case .silent:
            break
          case .randomBytes:
            let bytes = (0..<64).map { _ in UInt8.random(in: 0...255) }
            _ = bytes.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
          case .lines(_, let repeating):
            guard !repeating.isEmpty else { break }
            _ = Self.send(repeating[lineIndex % repeating.count] + "\n", to: client)
          }
        }
        lineIndex += 1
      }
    }
    thread.start()
  }

  private static func send(_ text: String, to client: Int32) -> Int {
    Array(text.utf8).withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  }

  /// Stops accepting and closes every connection.
  public func stop() {
    guard shared.running.exchange(false, ordering: .relaxed) else { return }
    usleep(200_000)
    close(listener)
    for client in shared.clients.withLock({ $0 }) { close(client) }
  }

  deinit { stop() }
}
