// libFuzzer target for the management-channel and advertising-data decoders: `make fuzz` builds it with
// `-sanitize=fuzzer,address -DFUZZING`; in an ordinary build it only says how to run it.
import BLEFuzzChecks

#if FUZZING
  @_cdecl("LLVMFuzzerTestOneInput")
  public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    LibFuzzer.test(data, size, FuzzChecks.scan)
  }

  @_cdecl("fuzz_ble_scan_main")
  public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    LibFuzzer.run(argc, argv, fuzzOne)
  }
#else
  @main enum FuzzTarget {
    static func main() {
      print("fuzz-ble-scan: a libFuzzer target; run it with `make fuzz` (see the Makefile)")
    }
  }
#endif
