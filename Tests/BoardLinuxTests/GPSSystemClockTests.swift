import Testing

@testable import BoardLinux

#if canImport(Glibc)
  import Glibc
#endif

/// Setting the system clock is not exercised for real here (it would change this machine's
/// time); what can be checked without changing it is.
@Suite("System clock from GPS")
struct GPSSystemClockTests {
  @Test(
    "now + offset as a normalised timespec",
    arguments: [
      (100, 500_000_000, 1.25, 101, 750_000_000),
      (100, 900_000_000, 0.2, 101, 100_000_000),
      (100, 100_000_000, -0.2, 99, 900_000_000),
      (100, 0, -100.5, -1, 500_000_000),
      (0, 0, 1_554_595_044.02, 1_554_595_044, 20_000_000),
    ])
  func adding(sec: Int, nsec: Int, offset: Double, expectedSec: Int, expectedNsec: Int) {
    let result = SystemClock.adding(offset, to: timespec(tv_sec: sec, tv_nsec: nsec))
    #expect(result.tv_sec == expectedSec)
    #expect(abs(result.tv_nsec - expectedNsec) <= 1_000)
    #expect((0..<1_000_000_000).contains(result.tv_nsec))
  }

  @Test("the kernel's refusal comes back as a typed error (an invalid value: the clock is untouched)")
  func kernelRefusal() {
    var invalid = timespec(tv_sec: 1_554_595_044, tv_nsec: 2_000_000_000)
    #expect(throws: SystemClockError.self) { try SystemClock.set(&invalid) }
    do {
      try SystemClock.set(&invalid)
    } catch {
      #expect(error.errno == EINVAL || error.errno == EPERM)
      #expect(error.description.hasPrefix("clock_settime"))
    }
  }

  @Test("small offsets and non-finite ones are left alone")
  func skipped() {
    let setter = SystemClockSetter(minimumStep: 1)
    #expect(setter.apply(offset: 0.4) == .skipped(offset: 0.4))
    #expect(setter.apply(offset: -0.99) == .skipped(offset: -0.99))
    if case .skipped = setter.apply(offset: .nan) {} else { Issue.record("NaN offset applied") }
    #expect(SystemClockError(call: "clock_settime", errno: EPERM).description.contains("CAP_SYS_TIME"))
  }
}
