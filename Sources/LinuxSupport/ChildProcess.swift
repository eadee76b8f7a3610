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
    var pipe: [Int32] = [-1, -1]
    guard Glibc.pipe(&pipe) == 0 else { throw SystemError("pipe", errno: errno) }
    // Close-on-exec at once: the child gets the write end only as its standard output.
    for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    let reading = FileDescriptor(owning: pipe[0])
    let writing = FileDescriptor(owning: pipe[1])
    defer { try? reading.close() }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
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
    guard spawned == 0 else { throw SystemError("posix_spawn", errno: spawned, context: path) }
    var output: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    // To the end of its output (or a read error), kept up to the limit.
    while let count = try? reading.read(into: &buffer), count > 0 {
      if output.count < outputLimit { output += buffer[..<min(count, outputLimit - output.count)] }
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
      guard errno == EINTR else { throw SystemError("waitpid", errno: errno, context: path) }
    }
    // WIFEXITED / WEXITSTATUS, spelled out (they are macros).
    let exited = status & 0x7F == 0
    return Finished(status: exited ? (status >> 8) & 0xFF : -1, output: output)
  }
}
