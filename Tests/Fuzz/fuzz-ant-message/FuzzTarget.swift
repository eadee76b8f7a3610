// libFuzzer target for the ANT frame reader and the stick's messages: `make fuzz` builds it with
// `-sanitize=fuzzer,address -DFUZZING`; in an ordinary build it only says how to run it.
import BLEFuzzChecks

#if FUZZING
  @_cdecl("LLVMFuzzerTestOneInput")
  public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    LibFuzzer.test(data, size, FuzzChecks.antMessage)
  }

  @_cdecl("fuzz_ant_message_main")
  public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    LibFuzzer.run(argc, argv, fuzzOne)
  }
#else
  @main enum FuzzTarget {
    static func main() {
      print("fuzz-ant-message: a libFuzzer target; run it with `make fuzz` (see the Makefile)")
    }
  }
#endif
