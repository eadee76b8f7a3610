import CLinuxShims

#if canImport(Glibc)
  import Glibc
#endif

/// An eventfd(2), non-blocking: a descriptor poll(2) waits on beside a device's own, made
/// readable by `signal()` from any thread, so a sleeping loop can be woken with no timeout.
public struct WakeEvent: Sendable {
  public let descriptor: FileDescriptor

  /// nil where the kernel refuses an eventfd (errno says why).
  public init?() {
    let fd = shim_event_open()
    guard fd >= 0 else { return nil }
    descriptor = FileDescriptor(owning: fd)
  }

  /// Makes it readable (adds 1 to its counter).
  public func signal() {
    _ = shim_event_signal(descriptor.rawValue)
  }

  /// Empties its counter after a wake, so the next poll sleeps again.
  public func consume() {
    var counter: UInt64 = 0
    _ = Glibc.read(descriptor.rawValue, &counter, 8)
  }

  /// The entry that waits for it in a poll(2) set.
  public var pollEntry: pollfd { pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0) }
}
