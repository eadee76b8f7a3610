// libFuzzer target for the wheel speed and crank cadence calculators: `make fuzz` builds it with
// `-sanitize=fuzzer,address -DFUZZING`; in an ordinary build it only says how to run it.
import BLEFuzzChecks

#if FUZZING
  @_cdecl("LLVMFuzzerTestOneInput")
  public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    if let failure = FuzzChecks.revolutions(bytes) { fatalError(failure) }
    return 0
  }

  // SwiftPM links a debug executable with `--defsym main=<module>_main`; libFuzzer has the
  // real main, whose driver this hands over to.
  @_silgen_name("LLVMFuzzerRunDriver")
  func runDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
  ) -> CInt

  @_cdecl("fuzz_ble_revolutions_main")
  public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var argc = argc
    var argv = argv
    return runDriver(&argc, &argv, fuzzOne)
  }
#else
  @main enum FuzzTarget {
    static func main() {
      print("fuzz-ble-revolutions: a libFuzzer target; run it with `make fuzz` (see the Makefile)")
    }
  }
#endif
