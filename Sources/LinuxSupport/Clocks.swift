import CLinuxShims

#if canImport(Glibc)
  import Glibc
#endif

/// The kernel's clocks, read directly (`clock_gettime(2)`).
public enum SystemClocks {
  /// Seconds on CLOCK_BOOTTIME: monotonic and, unlike CLOCK_MONOTONIC, still counting while the
  /// board is suspended, so a ride's durations stay right across a suspend.
  public static func boottime() -> Double { read(CLOCK_BOOTTIME) }

  /// Seconds on CLOCK_MONOTONIC (what pthread condition timeouts are measured against).
  public static func monotonic() -> Double { read(CLOCK_MONOTONIC) }

  /// Seconds since 1970 on CLOCK_REALTIME (may be wrong on a board without an RTC).
  public static func wall() -> Double { read(CLOCK_REALTIME) }

  private static func read(_ clock: clockid_t) -> Double {
    var spec = timespec()
    clock_gettime(clock, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
  }

  /// The kernel's id for this boot: a monotonic reading means something only within one boot.
  public static func bootID() -> String {
    guard let file = fopen("/proc/sys/kernel/random/boot_id", "r") else { return "unknown-boot" }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 64)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "unknown-boot" }
    let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return text.trimmingWhitespace()
  }

  /// Whether the kernel believes the wall clock is synchronised (NTP, or set by a GPS time
  /// source that clears STA_UNSYNC), read with `adjtimex(2)` without changing anything.
  public static func wallClockSynchronised() -> Bool {
    var status: Int32 = 0
    let state = shim_clock_sync_state(&status)
    // Under systemd's ProtectClock= even a read-only adjtimex is refused; then believe
    // systemd-timesyncd, which marks a synchronised clock with this file (systemd 239+).
    guard state >= 0 else { return access("/run/systemd/timesync/synchronized", F_OK) == 0 }
    // TIME_ERROR (5) means "clock not synchronised"; STA_UNSYNC (0x40) says the same.
    return state != 5 && status & 0x40 == 0
  }
}

extension String {
  func trimmingWhitespace() -> String {
    let scalars = unicodeScalars
    guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
    let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
    return String(scalars[first...last])
  }
}
