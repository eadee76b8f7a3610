import SensorProtocols
import Testing
import WorkoutCore
import WorkoutTestSupport

@testable import BoardLinux

/// `StrapLink` as the value it is: a heart-rate strap's PDUs (`GATTTestPeer`) and the time in,
/// actions out, on a manual clock. `StrapSourceTests` run the same through a socket and a thread.
@Suite struct StrapLinkTests {
  static let address = BluetoothAddress("00:AA:01:01:00:01")!
  static let heartRate = BluetoothUUID(0x2A37)
  /// The silence limit the deadlines below are reckoned from.
  static var settings: StrapSettings {
    var settings = StrapSettings(address: address)
    settings.silenceLimit = 15
    return settings
  }

  /// A link and its peer, every PDU the link sends answered by the peer at once.
  struct Strap {
    var link = StrapLink(settings: StrapLinkTests.settings)
    var peer = GATTTestPeer.heartRateStrap()
    var actions: [StrapLink.Action] = []
    var now = 100.0

    mutating func connect() {
      settle(link.start(now: now))
    }

    /// Carries the sends to the peer and its answers back until nothing is left to send.
    mutating func settle(_ first: [StrapLink.Action]) {
      var pending = first
      while !pending.isEmpty {
        actions += pending
        var next: [StrapLink.Action] = []
        for case .send(let pdu) in pending {
          if let answer = peer.answer(pdu) { next += link.received(answer, now: now) }
        }
        pending = next
      }
    }

    mutating func notify(_ value: [UInt8]) {
      settle(link.received(peer.notification(StrapLinkTests.heartRate, value), now: now))
    }

    var ended: DeviceProblem? {
      actions.lazy.compactMap { if case .end(let problem) = $0 { problem } else { nil } }.first
    }

    var heartRates: [Int] {
      actions.compactMap { if case .post(.reading(.heartRate(let bpm))) = $0 { bpm } else { nil } }
    }
  }

  @Test func discoveryEndsAvailableAndNotificationsAreReadings() throws {
    var s = Strap()
    s.connect()
    let available = s.actions.compactMap { if case .available(let detail) = $0 { detail } else { nil } }
    #expect(available.count == 1)
    #expect(available.first?.hasPrefix("00:AA:01:01:00:01 (ATT MTU") == true)
    s.notify([0x00, 142])
    s.notify([0x00, 143])
    #expect(s.heartRates == [142, 143])
    #expect(s.ended == nil)
  }

  @Test func aSensorSilentForTheLimitIsLostAtTheDeadlineItGives() throws {
    var s = Strap()
    s.connect()
    s.now = 103
    s.notify([0x00, 140])
    let deadline = try #require(s.link.deadline)
    #expect(deadline == 118, "the silence limit, from the last PDU")
    s.now = 117.9
    s.settle(s.link.timeElapsed(now: s.now))
    #expect(s.ended == nil)
    s.now = deadline
    s.settle(s.link.timeElapsed(now: s.now))
    #expect(s.ended?.condition == .lost)
    #expect(s.ended?.description == "00:AA:01:01:00:01 sent nothing for 15 s")
  }

  @Test func oneBadValueIsDroppedAndARunOfThemEndsTheLink() throws {
    var s = Strap()
    s.connect()
    // A heart rate of 0 is no rider's; the flags say a 16-bit value that is not there.
    s.notify([0x00, 0])
    s.notify([0x00, 150])
    #expect(s.ended == nil, "one is dropped, the next one counts")
    #expect(s.heartRates == [150])
    for _ in 0..<StrapLink.malformedLimit { s.notify([0x01, 150]) }
    #expect(s.ended?.condition == .failing)
    #expect(s.ended?.description.contains("\(StrapLink.malformedLimit) unusable values in a row") == true)
  }

  @Test func beforeDiscoveryEndsTheRequestsTimeoutIsTheDeadline() throws {
    var s = Strap()
    // Nothing answers the first request: the ATT transaction timeout (30 s) bounds the wait.
    s.actions = s.link.start(now: s.now)
    #expect(s.link.deadline == 130)
    s.now = 130
    s.actions += s.link.timeElapsed(now: s.now)
    #expect(s.ended?.condition == .failing)
  }
}
