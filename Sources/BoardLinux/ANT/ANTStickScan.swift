import LinuxSupport
import SensorProtocols

/// Why a scan with the ANT stick could not be made.
public struct ANTScanError: Error, Sendable, Hashable, CustomStringConvertible {
  public var description: String

  public init(description: String) { self.description = description }
}

/// The ANT+ sensors in range, as a stick in Rx Scan Mode hears them (`workoutctl sensors
/// scan`): the link's `.scan` mode over a transport. The scan resets the stick, so it must not
/// run while an `ANTStickSource` has the same stick.
public enum ANTStickScan {
  /// Listens on `transport` until `seconds` from now (the stick's start-up included), or a
  /// stop; the sensors heard, each once, in the order heard. `settings` gives the network key.
  public static func run(
    settings: ANTStickSettings, transport: any ANTTransport, seconds: Double, signal: StopSignal
  ) throws(ANTScanError) -> [ANTSensor] {
    var link = ANTStickLink(settings: settings, mode: .scan)
    var found: [ANTSensor] = []
    let end = SystemClocks.monotonic() + seconds
    do {
      try ANTStickSession.drive(&link, over: transport, signal: signal, until: end) { actions throws(DeviceProblem) in
        for action in actions {
          switch action {
          case .send(let bytes): try ANTStickSession.send(bytes, to: transport)
          case .found(let sensor): found.append(sensor)
          case .end(let problem): throw problem
          default: continue
          }
        }
      }
    } catch {
      throw ANTScanError(description: error.description)
    }
    return found
  }
}
