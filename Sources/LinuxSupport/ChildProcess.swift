import CLinuxShims

#if canImport(Glibc)
  import Glibc
#endif

/// Runs a program and collects its standard output (`posix_spawn(3)`, a pipe, `waitpid(2)`):
/// no run loop, no sockets and no closing of every descriptor in the child, all of which
/// Foundation's `Process` does and which a sandboxed unit may not allow (seen under systemd 257:
/// "Could not create wakeup socket pair for CFSocket", then a hang). Our own descriptors are
/// close-on-exec, so the child inherits only its standard streams.
public enum ChildProcess {
  public struct Finished: Sendable, Hashable {
    /// The exit status; -1 when a signal ended it.
    public var status: Int32
    public var output: [UInt8]
  }

  /// Runs `path` with `arguments` (argv[1...]), standard input from /dev/null and standard
  /// error inherited, and waits for it.
  public static func run(
    _ path: String, _ arguments: [String], outputLimit: Int = 1 << 20
  ) throws(SystemError)
    -> Finished
  {
    // With no stop signal the run always finishes.
    try run(path, arguments, input: nil, stop: nil, outputLimit: outputLimit)!
  }

  /// Runs `path` with `arguments`, `input` (when given) as its standard input and standard
  /// error inherited, and waits for it; nil when `stop` came first (the child is killed with
  /// SIGKILL and reaped). The input goes through a socket, sent with MSG_NOSIGNAL: a child that
  /// exits before reading it all is EPIPE, never a SIGPIPE in a process that did not ignore it.
  public static func run(
    _ path: String, _ arguments: [String], input: [UInt8]?, stop: StopSignal?, outputLimit: Int = 1 << 20
  ) throws(SystemError) -> Finished? {
    var pipe: [Int32] = [-1, -1]
    guard Glibc.pipe(&pipe) == 0 else { throw SystemError("pipe", errno: errno) }
    // Close-on-exec at once: the child gets the write end only as its standard output.
    for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    let reading = FileDescriptor(owning: pipe[0])
    let writing = FileDescriptor(owning: pipe[1])
    defer { try? reading.close() }
    var pair: [Int32] = [-1, -1]
    if input != nil {
      guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
        throw SystemError("socketpair", errno: errno, context: path)
      }
    }
    let feeding = input == nil ? nil : FileDescriptor(owning: pair[0])
    let fed = input == nil ? nil : FileDescriptor(owning: pair[1])
    defer { try? feeding?.close() }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if let fed {
      posix_spawn_file_actions_adddup2(&actions, fed.rawValue, 0)
    } else {
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    }
    posix_spawn_file_actions_adddup2(&actions, writing.rawValue, 1)  // dup2 clears close-on-exec
    let argv = ([path] + arguments).map { strdup($0) }
    defer { argv.forEach { free($0) } }
    var cArguments: [UnsafeMutablePointer<CChar>?] = argv + [nil]
    // The child starts with no signal blocked and every signal at its default: a daemon's
    // thread blocks its stop signals for signalfd, and a child that inherited that could not
    // be stopped.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, &attributes, &cArguments, environ)
    try? writing.close()
    try? fed?.close()
    guard spawned == 0 else { throw SystemError("posix_spawn", errno: spawned, context: path) }
    func reap(killing: Bool) throws(SystemError) -> Int32 {
      if killing { kill(pid, SIGKILL) }
      var status: Int32 = 0
      while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw SystemError("waitpid", errno: errno, context: path) }
      }
      return status
    }
    // The input is given and the output taken at once, a poll(2) on both: a child that writes
    // before it has read everything (cat) would otherwise fill the pipe and wait for us while
    // we wait for it.
    var pending = input.map { $0[...] } ?? []
    var feedingOpen = feeding != nil
    var output: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      var entries = [pollfd(fd: reading.rawValue, events: Int16(POLLIN), revents: 0)]
      if feedingOpen, let feeding {
        if pending.isEmpty {
          try? feeding.close()
          feedingOpen = false
        } else {
          entries.append(pollfd(fd: feeding.rawValue, events: Int16(POLLOUT), revents: 0))
        }
      }
      let stopped: Bool
      if let stop {
        stopped = try stop.poll(&entries, until: nil)
      } else {
        stopped = false
        while Glibc.poll(&entries, nfds_t(entries.count), -1) < 0 {
          guard errno == EINTR else { throw SystemError("poll", errno: errno, context: path) }
        }
      }
      if stopped {
        _ = try reap(killing: true)
        return nil
      }
      if entries.count > 1, entries[1].revents != 0, let feeding {
        let sent = pending.withUnsafeBytes {
          Glibc.send(feeding.rawValue, $0.baseAddress!, min($0.count, 65536), Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
        if sent > 0 {
          pending = pending.dropFirst(sent)
        } else if errno != EINTR && errno != EAGAIN {
          pending = []  // the child has gone or stopped reading: its status says why
        }
      }
      if entries[0].revents != 0 {
        // To the end of its output (or a read error), kept up to the limit.
        guard let count = try? reading.read(into: &buffer), count > 0 else { break }
        if output.count < outputLimit { output += buffer[..<min(count, outputLimit - output.count)] }
      }
    }
    let status = try reap(killing: false)
    // WIFEXITED / WEXITSTATUS, spelled out (they are macros).
    let exited = status & 0x7F == 0
    return Finished(status: exited ? (status >> 8) & 0xFF : -1, output: output)
  }
}
