// What every fuzz target's entry points share; each target keeps only its two `@_cdecl`
// symbols, whose names libFuzzer and SwiftPM fix (`LLVMFuzzerTestOneInput`, `<module>_main`).
#if FUZZING
  @_silgen_name("LLVMFuzzerRunDriver")
  func llvmFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
  ) -> CInt

  public enum LibFuzzer {
    /// SwiftPM links a debug executable with `--defsym main=<module>_main`; libFuzzer has the
    /// real main, whose driver this hands over to.
    public static func run(
      _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
      _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt {
      var argc = argc
      var argv = argv
      return llvmFuzzerRunDriver(&argc, &argv, callback)
    }

    /// One input's bytes, or a failure of `check` on them stops the run with its reason.
    public static func test(
      _ data: UnsafePointer<UInt8>?, _ size: Int, _ check: ([UInt8]) -> String?
    ) -> CInt {
      let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
      if let failure = check(bytes) { fatalError(failure) }
      return 0
    }
  }
#endif
