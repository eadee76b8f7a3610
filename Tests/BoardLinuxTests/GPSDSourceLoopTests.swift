import SensorProtocols
import Testing
import WorkoutCore

@testable import BoardLinux

/// `GPSDSourceLoop` as the value it is: reports and times in, inputs and verdicts out, on a
/// manual clock (monotonic 100 s is wall 1_795_000_100 s). The same loop against a real gpsd is
/// `GPSDLive`'s.
@Suite struct GPSDSourceLoopTests {
  static let wallOffset = 1_795_000_000.0
  static let version = #"{"class":"VERSION","release":"3.25","rev":"3.25","proto_major":3,"proto_minor":15}"#

  /// A loop, what it emitted (input and when it arrived, monotonic), and the clock.
  struct Loop {
    var loop = GPSDSourceLoop(settings: GPSDSourceSettings(initialBackoff: 1, maximumBackoff: 8), observer: nil)
    var emitted: [(input: EngineInput, at: Double)] = []
    var now = 100.0

    /// The reports as one look at `now`, each arrived `age` seconds earlier.
    mutating func look(
      _ lines: [String], age: Double = 0, failure: GPSDError? = nil, notGreeting: String? = nil, bytes: Int = 0
    ) -> GPSDConnectionVerdict {
      let wall = now + GPSDSourceLoopTests.wallOffset
      let read = GPSDRead(
        messages: lines.map { (GPSDSourceLoopTests.message($0), wall - age) }, notGreeting: notGreeting,
        failure: failure, bytesReceived: bytes)
      var emitted = self.emitted
      defer { self.emitted = emitted }
      return loop.received(read, now: now, wallNow: wall) { emitted.append(($0, $1)) }
    }

    var conditions: [DeviceStatus] {
      emitted.compactMap { if case .device(let status) = $0.input, status.device == .gps { status } else { nil } }
    }

    var fixes: [GPSFix] { emitted.compactMap { if case .reading(.gps(let fix)) = $0.input { fix } else { nil } } }
  }

  static func message(_ line: String) -> GPSDMessage {
    Array(line.utf8).withUnsafeBufferPointer { GPSDConnection.decode($0) }
  }

  static func tpv(second: Int, east: Double = 0, alt: Double? = nil) -> String {
    let altitude = alt.map { #","altMSL":\#($0),"alt":\#($0)"# } ?? ""
    return
      #"{"class":"TPV","device":"/dev/ttyS0","mode":3,"time":"2026-12-04T10:00:\#(String(format: "%02d", second)).000Z","lat":43.7134,"lon":\#(-79.3661 + east),"epx":2.0,"epy":2.5,"speed":5.0\#(altitude)}"#
  }

  @Test func theGreetingMakesTheGPSAvailableAsOfWhenItArrived() {
    var l = Loop()
    l.loop.connected(at: 100)
    l.now = 100.5
    #expect(l.look([Self.version], age: 0.25) == .keep)
    #expect(l.conditions.map(\.condition) == [.available])
    #expect(l.conditions.first?.detail == "connected to gpsd 3.25 at localhost:2947")
    #expect(l.emitted.first?.at == 100.25, "placed on the monotonic clock by its kernel stamp")
    #expect(l.loop.answered)
  }

  @Test func aPeerWhoseFirstLineIsNotTheGreetingIsRefused() {
    var l = Loop()
    l.loop.connected(at: 100)
    #expect(l.look([], notGreeting: "HTTP/1.1 400 Bad Request") == .refused)
    #expect(!l.loop.isConnected)
    #expect(l.conditions.map(\.condition) == [.failing])
    #expect(l.conditions.first?.detail.contains("its first line was not gpsd's VERSION greeting") == true)
  }

  @Test func silenceIsRefusedAtTheGreetingTimeoutAndSaysWhetherBytesCame() {
    var l = Loop()
    l.loop.connected(at: 100)
    #expect(l.loop.nextDeadline == 105, "the loop looks again when the greeting is due")
    l.now = 104.9
    #expect(l.look([]) == .keep)
    l.now = 105
    #expect(l.look([]) == .refused)
    #expect(l.conditions.last?.detail.hasPrefix("no answer from gpsd at localhost:2947") == true)

    var garbled = Loop()
    garbled.loop.connected(at: 100)
    garbled.now = 105
    #expect(garbled.look([], bytes: 12) == .refused)
    #expect(garbled.conditions.last?.detail.hasPrefix("not gpsd at localhost:2947: 12 bytes in 5 s") == true)
  }

  @Test func aBreakIsLostAfterTheGreetingAndAbsentBefore() {
    let reset = GPSDError(operation: .read, code: 104, message: "Connection reset by peer")
    var l = Loop()
    l.loop.connected(at: 100)
    _ = l.look([Self.version])
    l.now = 101
    #expect(l.look([], failure: reset) == .broken)
    #expect(l.conditions.map(\.condition) == [.available, .lost])
    #expect(l.conditions.last?.detail == "lost gpsd at localhost:2947 (Connection reset by peer); reconnecting")

    var never = Loop()
    never.loop.connected(at: 100)
    #expect(never.look([], failure: reset) == .broken)
    #expect(never.conditions.map(\.condition) == [.absent])
  }

  @Test func connectFailuresAreReportedOnceNotAtEveryRetry() {
    var l = Loop()
    let refused = GPSDError(operation: .open, code: 111, message: "Connection refused")
    var emitted: [(input: EngineInput, at: Double)] = []
    for _ in 0..<6 { l.loop.connectFailed(refused, at: l.now) { emitted.append(($0, $1)) } }
    l.emitted += emitted
    #expect(l.conditions.map(\.condition) == [.absent], "said once, not at every retry")
    #expect(l.conditions.last?.detail == "gpsd at localhost:2947 not reachable (Connection refused); retrying")
    l.loop.connected(at: l.now)
    _ = l.look([Self.version])
    l.now += 1
    _ = l.look([], failure: GPSDError(operation: .read, code: 104, message: "Connection reset by peer"))
    var after: [(input: EngineInput, at: Double)] = []
    l.loop.connectFailed(refused, at: l.now) { after.append(($0, $1)) }
    l.emitted += after
    #expect(l.conditions.map(\.condition) == [.absent, .available, .lost], "gone after it answered: lost, once")
  }

  @Test func anEpochsReportsAreOneFixHandedOnWhenTheEpochSettles() throws {
    var l = Loop()
    l.loop.connected(at: 100)
    _ = l.look([Self.version])
    l.now = 101
    // RMC's TPV, then GGA's with the altitude, as gpsd writes them for one NMEA epoch.
    #expect(l.look([Self.tpv(second: 1), Self.tpv(second: 1, alt: 120.5)]) == .keep)
    #expect(l.fixes.isEmpty, "the epoch may bring more")
    let settled = try #require(l.loop.nextDeadline)
    l.now = settled
    _ = l.look([])
    #expect(l.fixes.count == 1, "handed on at the very deadline the loop gave")
    #expect(l.fixes.first?.altitude == 120.5)
    // The next epoch's first report ends it at once.
    l.now = 102
    _ = l.look([Self.tpv(second: 2, east: 0.0001)])
    l.now = 103
    _ = l.look([Self.tpv(second: 3, east: 0.0002)])
    #expect(l.fixes.count == 2)
  }

  @Test func reportsWithoutAFixSayNoFixOnceUntilAFixComes() {
    var l = Loop()
    l.loop.connected(at: 100)
    _ = l.look([Self.version])
    let noFix = #"{"class":"TPV","device":"/dev/ttyS0","mode":1}"#
    for second in 1...3 {
      l.now = 100 + Double(second)
      _ = l.look([noFix])
    }
    let noFixes = l.emitted.filter { if case .reading(.gpsNoFix) = $0.input { true } else { false } }
    #expect(noFixes.count == 1)
  }
}
