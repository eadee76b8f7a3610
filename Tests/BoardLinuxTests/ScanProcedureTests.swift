import SensorProtocols
import Testing

@testable import BoardLinux

/// The scan's protocol without a socket or a clock: each step is given the events and the time,
/// and what it says to do next is checked, deadlines to the millisecond.
@Suite("the sensor scan's protocol on a manual clock")
struct ScanProcedureTests {
  typealias Events = [(controller: UInt16, event: Management.Event)]

  static func complete(
    _ opcode: Management.Opcode, _ status: Management.Status = .success, _ parameters: [UInt8] = []
  )
    -> Management.Event
  {
    .commandComplete(opcode: opcode.rawValue, status: status, parameters: parameters)
  }

  /// Read Controller Information's reply: powered, LE supported.
  static let information: [UInt8] =
    [6, 5, 4, 3, 2, 1, 9, 2, 0] + [0xFF, 0x02, 0, 0] + [0x01, 0x02, 0, 0] + [0, 0, 0]
    + [UInt8](repeating: 0, count: 260)

  static func strap(rssi: Int8) throws -> Management.Event {
    let advertising: [UInt8] = [0x03, 0x03, 0x0D, 0x18, 0x04, 0x09] + Array("H10".utf8)
    let parameters: [UInt8] =
      [0x56, 0x34, 0x12, 0x1A, 0x9E, 0xA0, 1, UInt8(bitPattern: rssi), 0, 0, 0, 0, UInt8(advertising.count), 0]
      + advertising
    let packet: [UInt8] = [0x12, 0, 0, 0, UInt8(parameters.count), 0] + parameters
    return try Management.decode(packet).event
  }

  func expectSend(
    _ next: ScanProcedure.Next, _ opcode: Management.Opcode, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    guard case .send(let packet) = next else {
      Issue.record("expected \(opcode), got \(next)", sourceLocation: sourceLocation)
      return
    }
    #expect(UInt16(packet[0]) | UInt16(packet[1]) << 8 == opcode.rawValue, sourceLocation: sourceLocation)
  }

  func expectWait(_ next: ScanProcedure.Next, until deadline: Double, sourceLocation: SourceLocation = #_sourceLocation)
  {
    guard case .wait(let until) = next else {
      Issue.record("expected a wait until \(deadline), got \(next)", sourceLocation: sourceLocation)
      return
    }
    #expect(abs(until - deadline) < 1e-9, "waits until \(until)", sourceLocation: sourceLocation)
  }

  /// A scan of hci0 for `seconds` from t = 100, its discovery started at `startedAt`.
  func discovering(seconds: Double, renewInterval: Double = 2.5, startedAt: Double = 100) -> ScanProcedure {
    var scan = ScanProcedure(controller: 0, seconds: seconds, commandTimeout: 3, renewInterval: renewInterval, now: 100)
    expectSend(scan.start(now: 100), .readControllerInformation)
    _ = scan.advance(events: [], now: 100, stopRequested: false)
    expectSend(
      scan.advance(
        events: [(0, Self.complete(.readControllerInformation, .success, Self.information))], now: 100,
        stopRequested: false), .startDiscovery)
    _ = scan.advance(events: [], now: 100, stopRequested: false)
    _ = scan.advance(events: [(0, Self.complete(.startDiscovery, .success, [6]))], now: startedAt, stopRequested: false)
    return scan
  }

  @Test func aDiscoveryIsRenewedAtItsIntervalWhileASecondWouldBeLeft() throws {
    var scan = discovering(seconds: 5, renewInterval: 2)
    expectWait(scan.advance(events: [], now: 100, stopRequested: false), until: 102)
    expectWait(scan.advance(events: [(0, try Self.strap(rssi: -70))], now: 101, stopRequested: false), until: 102)
    expectSend(scan.advance(events: [], now: 102, stopRequested: false), .stopDiscovery)
    expectWait(scan.advance(events: [], now: 102, stopRequested: false), until: 105)
    expectSend(
      scan.advance(events: [(0, Self.complete(.stopDiscovery, .success, [6]))], now: 102.1, stopRequested: false),
      .startDiscovery)
    // Renewed at 102.1 + 2: no, as less than a second would be left of the scan's 5.
    expectWait(
      scan.advance(events: [(0, Self.complete(.startDiscovery, .success, [6]))], now: 102.1, stopRequested: false),
      until: 105)
    expectSend(scan.advance(events: [(0, try Self.strap(rssi: -60))], now: 105, stopRequested: false), .stopDiscovery)
    guard
      case .finish(.success(let outcome)) = scan.advance(
        events: [(0, Self.complete(.stopDiscovery))], now: 105.01, stopRequested: false)
    else {
      Issue.record("not finished")
      return
    }
    #expect(outcome.controller == "hci0 (01:02:03:04:05:06)")
    #expect(outcome.devices.map(\.rssi) == [-60])
    #expect(outcome.devices.first?.advertisements == 2)
  }

  @Test func aDiscoveryTheKernelEndsIsStartedAgainNotBeforeASecond() throws {
    var scan = discovering(seconds: 10, renewInterval: 20)
    expectWait(
      scan.advance(events: [(0, .discovering(false))], now: 100.2, stopRequested: false), until: 101)
    expectSend(scan.advance(events: [], now: 101, stopRequested: false), .startDiscovery)
    _ = scan.advance(events: [], now: 101, stopRequested: false)
    // The started-again discovery counts from the time it was asked for.
    expectWait(
      scan.advance(events: [(0, Self.complete(.startDiscovery, .success, [6]))], now: 101.3, stopRequested: false),
      until: 110)
  }

  @Test func aCommandUnansweredAtItsDeadlineEndsTheScanAndAStopEndsIt() throws {
    var scan = ScanProcedure(controller: nil, seconds: 5, commandTimeout: 3, renewInterval: 2.5, now: 0)
    expectSend(scan.start(now: 0), .readControllerIndexList)
    expectWait(scan.advance(events: [], now: 0, stopRequested: false), until: 3)
    expectWait(scan.advance(events: [], now: 2.999, stopRequested: false), until: 3)
    guard case .finish(.failure(let error)) = scan.advance(events: [], now: 3, stopRequested: false) else {
      Issue.record("not failed at the deadline")
      return
    }
    #expect(error.description == "the kernel did not answer readControllerIndexList within 3 s")

    var stopped = ScanProcedure(controller: nil, seconds: 5, commandTimeout: 3, renewInterval: 2.5, now: 0)
    _ = stopped.start(now: 0)
    guard case .finish(.failure(let error)) = stopped.advance(events: [], now: 1, stopRequested: true) else {
      Issue.record("not stopped")
      return
    }
    #expect(error.description == "stopped")
  }

  @Test func aStopWhileListeningStopsTheDiscoveryAndKeepsWhatWasHeard() throws {
    var scan = discovering(seconds: 30)
    _ = scan.advance(events: [(0, try Self.strap(rssi: -50))], now: 101, stopRequested: false)
    expectSend(scan.advance(events: [], now: 101.5, stopRequested: true), .stopDiscovery)
    // Its reply is not waited for once stopped.
    guard case .finish(.success(let outcome)) = scan.advance(events: [], now: 101.5, stopRequested: true) else {
      Issue.record("not finished")
      return
    }
    #expect(outcome.devices.count == 1)
    // And a socket that fails while the last stop is out ends the scan as it was.
    var failing = discovering(seconds: 1)
    expectSend(failing.advance(events: [], now: 101, stopRequested: false), .stopDiscovery)
    guard case .finish(.success) = failing.failed("the socket went away") else {
      Issue.record("not finished")
      return
    }
  }

  @Test func theLowestPoweredLEControllerIsChosenAndAnotherControllersDevicesAreNotItsOwn() throws {
    var scan = ScanProcedure(controller: nil, seconds: 5, commandTimeout: 3, renewInterval: 2.5, now: 0)
    _ = scan.start(now: 0)
    let list = Self.complete(.readControllerIndexList, .success, [2, 0, 1, 0, 0, 0])
    expectSend(scan.advance(events: [(0xFFFF, list)], now: 0, stopRequested: false), .readControllerInformation)
    expectSend(
      scan.advance(
        events: [(0, Self.complete(.readControllerInformation, .success, Self.information))], now: 0,
        stopRequested: false), .readControllerInformation)
    expectSend(
      scan.advance(
        events: [(1, Self.complete(.readControllerInformation, .success, Self.information))], now: 0,
        stopRequested: false), .startDiscovery)
    _ = scan.advance(events: [(0, Self.complete(.startDiscovery, .success, [6]))], now: 0, stopRequested: false)
    _ = scan.advance(events: [(1, try Self.strap(rssi: -40))], now: 1, stopRequested: false)
    expectSend(scan.advance(events: [], now: 5, stopRequested: false), .stopDiscovery)
    guard
      case .finish(.success(let outcome)) = scan.advance(
        events: [(0, Self.complete(.stopDiscovery))], now: 5, stopRequested: false)
    else {
      Issue.record("not finished")
      return
    }
    #expect(outcome.controller.hasPrefix("hci0 "))
    #expect(outcome.devices.isEmpty, "hci1's device is not hci0's")
  }
}
