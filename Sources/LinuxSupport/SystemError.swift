#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A failed system call: which call, on what, and the errno it returned.
public struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
  public var call: String
  public var errno: Int32
  public var context: String

  public init(_ call: String, errno: Int32, context: String = "") {
    self.call = call
    self.errno = errno
    self.context = context
  }

  /// What the errno means (strerror(3)), without the call.
  public var reason: String { String(cString: strerror(errno)) }

  public var description: String {
    context.isEmpty ? "\(call): \(reason)" : "\(call) \(context): \(reason)"
  }

  /// The error of the call that just failed.
  public static func last(_ call: String, _ context: String = "") -> SystemError {
    SystemError(call, errno: Glibc.errno, context: context)
  }
}

/// Runs a system call, retrying it while it is interrupted by a signal (EINTR), and turns a
/// failure (a negative return) into a `SystemError` naming the call.
@discardableResult
public func retryingInterrupts<Result: BinaryInteger>(
  _ call: String, _ context: String = "", _ body: () -> Result
) throws(SystemError) -> Result {
  while true {
    let result = body()
    if result >= 0 { return result }
    let error = Glibc.errno
    if error == EINTR { continue }
    throw SystemError(call, errno: error, context: context)
  }
}
