import Testing
import WorkoutTestSupport

@testable import SensorProtocols

/// Runs a client against a scripted peer until neither has anything more to say, at one time.
private func converse(_ client: inout GATTClient, _ peer: inout GATTTestPeer, now: Double = 0) -> [GATTClient.Output] {
  run(&client, &peer, client.start(now: now), now: now)
}

/// Feeds `outputs` (what the client just said) to the peer, and its answers back, to the end.
private func run(
  _ client: inout GATTClient, _ peer: inout GATTTestPeer, _ outputs: [GATTClient.Output], now: Double = 0
) -> [GATTClient.Output] {
  var queue = outputs
  var index = 0
  while index < queue.count {
    if case .send(let bytes) = queue[index], let reply = peer.answer(bytes) {
      queue += client.received(reply, now: now)
    }
    index += 1
  }
  return queue
}

private func sent(_ outputs: [GATTClient.Output]) -> [[UInt8]] {
  outputs.compactMap { if case .send(let b) = $0 { b } else { nil } }
}

private func values(_ outputs: [GATTClient.Output]) -> [GATTCharacteristicID: [UInt8]] {
  var out: [GATTCharacteristicID: [UInt8]] = [:]
  for case .value(let id, let value, _) in outputs { out[id] = value }
  return out
}

private func summary(_ outputs: [GATTClient.Output]) -> GATTConnectionSummary? {
  for case .ready(let s) in outputs { return s }
  return nil
}

private func failure(_ outputs: [GATTClient.Output]) -> GATTClientError? {
  for case .failed(let e) in outputs { return e }
  return nil
}

@Suite("GATT client: discovery, reads and subscriptions against a scripted sensor")
struct GATTClientTests {
  @Test func heartRateStrap() throws {
    var peer = GATTTestPeer.heartRateStrap()
    var client = GATTClient()
    let out = converse(&client, &peer)
    let ready = try #require(summary(out))
    #expect(failure(out) == nil)
    #expect(ready.mtu == 185)
    #expect(ready.subscribed == [.heartRateMeasurement: .notification, .batteryLevel: .notification])
    #expect(ready.services == [.heartRateService, .batteryService])
    #expect(values(out) == [.bodySensorLocation: [0x01], .batteryLevel: [87]])
    // The CCCDs hold "notifications on" now; the GAP service was not looked into.
    #expect(peer.configured[peer.valueHandle(.heartRateMeasurement)!] == 0x0001)
    #expect(peer.configured[peer.valueHandle(.batteryLevel)!] == 0x0001)
    #expect(!sent(out).contains(ATTPDU.readRequest(handle: peer.valueHandle(BluetoothUUID(0x2A00))!).encode()))
    #expect(client.isReady && client.deadline == nil)

    // Then measurements flow, and one for a handle never discovered is dropped with a word.
    let hr = client.received(peer.notification(.heartRateMeasurement, [0x10, 72, 0x00, 0x04]), now: 1)
    #expect(hr == [.value(.heartRateMeasurement, [0x10, 72, 0x00, 0x04], .notification)])
    let stray = client.received(ATTPDU.handleValueNotification(handle: 0x0003, value: [1]).encode(), now: 1)
    #expect(stray == [.ignored("a notification for unknown handle 0x0003")])
  }

  /// A strap with the services a real one lists: GAP, GATT, Device Information, Heart Rate,
  /// Battery (five 6-byte group entries: one page at 185 bytes, two at 23).
  private func fullStrap() -> GATTTestPeer {
    GATTTestPeer([
      GATTTestPeer.Service(.genericAccess, [.init(BluetoothUUID(0x2A00), [.read], value: Array("H10".utf8))]),
      GATTTestPeer.Service(.genericAttribute, [.init(BluetoothUUID(0x2A05), [.indicate])]),
      GATTTestPeer.Service(.deviceInformation, [.init(BluetoothUUID(0x2A29), [.read], value: Array("Polar".utf8))]),
      GATTTestPeer.Service(
        .heartRateService,
        [.init(.heartRateMeasurement, [.notify]), .init(.bodySensorLocation, [.read], value: [0x01])]),
      GATTTestPeer.Service(.batteryService, [.init(.batteryLevel, [.read, .notify], value: [87])]),
    ])
  }

  @Test func oldStrapWithoutMTUExchangeAtTheMinimumMTU() throws {
    var peer = fullStrap()
    peer.refusesMTUExchange = true
    var client = GATTClient()
    let out = converse(&client, &peer)
    let ready = try #require(summary(out))
    #expect(ready.mtu == 23)
    #expect(ready.subscribed == [.heartRateMeasurement: .notification, .batteryLevel: .notification])
    #expect(peer.mtu == 23)
    // At 23 bytes service discovery takes two pages, at 185 one.
    var roomy = fullStrap()
    var other = GATTClient()
    _ = converse(&other, &roomy)
    #expect(roomy.mtu == 185)
    #expect(peer.requests.filter { $0 == .readByGroupTypeRequest }.count == 3)
    #expect(roomy.requests.filter { $0 == .readByGroupTypeRequest }.count == 2)
  }

  @Test func powerMeterWithSpeedCadenceAndAVendorService() throws {
    let vendor = BluetoothUUID("A026EE01-0A7D-4AB3-97FA-F1500F9FEB8B")!
    var peer = GATTTestPeer(
      [
        GATTTestPeer.Service(.genericAccess, [.init(BluetoothUUID(0x2A00), [.read], value: [0x50])]),
        GATTTestPeer.Service(vendor, [.init(vendor, [.write, .notify])]),
        GATTTestPeer.Service(
          .cyclingPowerService,
          [
            .init(.cyclingPowerMeasurement, [.notify], extraDescriptors: [BluetoothUUID(0x2901)]),
            .init(.cyclingPowerFeature, [.read], value: [0x0C, 0, 0, 0]),
            .init(.sensorLocation, [.read], value: [0x05]),
          ]),
        GATTTestPeer.Service(
          .cyclingSpeedAndCadenceService,
          [.init(.cscMeasurement, [.notify]), .init(.cscFeature, [.read], value: [0x03, 0x00])]),
      ], first: 0x0020, gap: 3)
    var client = GATTClient()
    let out = converse(&client, &peer)
    let ready = try #require(summary(out))
    #expect(ready.subscribed == [.cyclingPowerMeasurement: .notification, .cscMeasurement: .notification])
    #expect(values(out) == [.cyclingPowerFeature: [0x0C, 0, 0, 0], .cscFeature: [0x03, 0x00]])
    #expect(peer.configured.count == 2)
    // The vendor's own notify characteristic is none of ours: never subscribed.
    #expect(peer.configured[peer.valueHandle(vendor)!] == nil)
  }

  @Test func indicateOnlyCharacteristicsAreIndicatedAndConfirmed() throws {
    var peer = GATTTestPeer([GATTTestPeer.Service(.heartRateService, [.init(.heartRateMeasurement, [.indicate])])])
    var client = GATTClient()
    let out = converse(&client, &peer)
    #expect(summary(out)?.subscribed == [.heartRateMeasurement: .indication])
    #expect(peer.configured[peer.valueHandle(.heartRateMeasurement)!] == 0x0002)
    let handle = peer.valueHandle(.heartRateMeasurement)!
    let indicated = client.received(ATTPDU.handleValueIndication(handle: handle, value: [0, 90]).encode(), now: 2)
    #expect(
      indicated == [
        .send(ATTPDU.handleValueConfirmation.encode()), .value(.heartRateMeasurement, [0, 90], .indication),
      ])
    // A malformed indication (no handle) is still confirmed: the peer waits for it.
    let broken = client.received([0x1D, 0x01], now: 2)
    #expect(broken.first == .send(ATTPDU.handleValueConfirmation.encode()))
  }

  @Test func aSensorWithOnlyABatteryIsOfNoUse() {
    var peer = GATTTestPeer([GATTTestPeer.Service(.batteryService, [.init(.batteryLevel, [.read, .notify])])])
    var client = GATTClient()
    let out = converse(&client, &peer)
    #expect(summary(out) == nil)
    #expect(failure(out) == .noMeasurement(found: [.batteryService]))
    #expect(client.hasFailed)
    // Nothing found at all names no service.
    var empty = GATTTestPeer([GATTTestPeer.Service(.genericAccess, [.init(BluetoothUUID(0x2A00), [.read])])])
    var other = GATTClient()
    #expect(failure(converse(&other, &empty)) == .noMeasurement(found: []))
  }

  @Test func aStrapThatWantsPairingSaysSo() {
    var peer = GATTTestPeer([
      GATTTestPeer.Service(
        .heartRateService, [.init(.heartRateMeasurement, [.notify], writeError: .insufficientAuthentication)])
    ])
    var client = GATTClient()
    let error = failure(converse(&client, &peer))
    #expect(error == .needsPairing(.heartRateMeasurement, .insufficientAuthentication))
    #expect(error?.description.contains("bluetoothctl") == true)
  }

  @Test func refusedReadsAndOptionalSubscriptionsLeaveTheConnectionUp() throws {
    var peer = GATTTestPeer([
      GATTTestPeer.Service(
        .heartRateService,
        [
          .init(.heartRateMeasurement, [.notify]),
          .init(.bodySensorLocation, [.read], value: [1], readError: .insufficientEncryption),
        ]),
      GATTTestPeer.Service(
        .batteryService, [.init(.batteryLevel, [.read, .notify], value: [50], writeError: .writeNotPermitted)]),
    ])
    var client = GATTClient()
    let out = converse(&client, &peer)
    #expect(out.contains(.refused(.bodySensorLocation, .readRequest, .insufficientEncryption)))
    #expect(out.contains(.refused(.batteryLevel, .writeRequest, .writeNotPermitted)))
    #expect(try #require(summary(out)).subscribed == [.heartRateMeasurement: .notification])
  }

  @Test func aNotifyingCharacteristicWithoutCCCDIsNamed() {
    var peer = GATTTestPeer([
      GATTTestPeer.Service(.heartRateService, [.init(.heartRateMeasurement, [.notify], hasCCCD: false)])
    ])
    var client = GATTClient()
    let out = converse(&client, &peer)
    #expect(
      out.contains(
        .ignored(
          "0x2A37 in 0x180D can notify but has no Client Characteristic Configuration descriptor"
        )) || out.contains { if case .ignored(let s) = $0 { s.contains("no Client Characteristic") } else { false } })
    #expect(failure(out) == .noMeasurement(found: [.heartRateService]))
  }

  @Test func aSilentPeerTimesOutAfterThirtySeconds() {
    var client = GATTClient()
    let first = client.start(now: 100)
    #expect(sent(first) == [ATTPDU.exchangeMTURequest(clientRxMTU: 247).encode()])
    #expect(client.deadline == 130)
    #expect(client.timeElapsed(now: 129.9).isEmpty)
    #expect(client.timeElapsed(now: 130) == [.failed(.transactionTimeout(.exchangeMTURequest))])
    // Dead to ATT from then on: nothing more is sent or taken.
    #expect(client.deadline == nil)
    #expect(client.received(ATTPDU.exchangeMTUResponse(serverRxMTU: 23).encode(), now: 131).isEmpty)
    #expect(client.start(now: 132).isEmpty)
  }

  @Test func responsesThatBreakTheProtocolEndTheConnection() {
    // A response with nothing asked.
    var idle = GATTClient()
    #expect(idle.received(ATTPDU.writeResponse.encode(), now: 0) == [.failed(.unexpectedResponse(.writeResponse))])
    // A response of the wrong kind, and an error response naming another request.
    var a = GATTClient()
    _ = a.start(now: 0)
    #expect(
      a.received(ATTPDU.readResponse(value: [1]).encode(), now: 0) == [.failed(.unexpectedResponse(.readResponse))])
    var b = GATTClient()
    _ = b.start(now: 0)
    let wrongError = ATTPDU.errorResponse(request: 0x0A, handle: 1, error: .invalidHandle).encode()
    #expect(b.received(wrongError, now: 0) == [.failed(.unexpectedResponse(.errorResponse))])
    // A truncated response to the request outstanding.
    var c = GATTClient()
    _ = c.start(now: 0)
    guard case .failed(.malformedResponse(.exchangeMTUResponse, _)) = c.received([0x03, 0x17], now: 0).first else {
      Issue.record("a 2-byte Exchange MTU Response was taken")
      return
    }
    // Services going backwards: a characteristic declared outside its service.
    var d = GATTClient()
    _ = d.start(now: 0)
    _ = d.received(ATTPDU.exchangeMTUResponse(serverRxMTU: 23).encode(), now: 0)
    _ = d.received(
      ATTPDU.readByGroupTypeResponse([ATTGroupValue(handle: 0x10, endGroupHandle: 0xFFFF, value: [0x0D, 0x18])])
        .encode(), now: 0)
    let outside = ATTPDU.readByTypeResponse([
      ATTHandleValue(
        handle: 0x08,
        value: GATTCharacteristicDeclaration(
          handle: 0x08, properties: .notify, valueHandle: 0x09, uuid: .heartRateMeasurement
        ).value)
    ])
    guard case .failed(.malformedResponse(.readByTypeResponse, _)) = d.received(outside.encode(), now: 0).first else {
      Issue.record("a characteristic before its service's first handle was taken")
      return
    }
  }

  @Test func discoveryErrorsOtherThanNotFoundEndTheConnection() {
    var client = GATTClient()
    _ = client.start(now: 0)
    _ = client.received(ATTPDU.exchangeMTUResponse(serverRxMTU: 23).encode(), now: 0)
    let out = client.received(
      ATTPDU.errorResponse(request: 0x10, handle: 1, error: .insufficientResources).encode(), now: 0)
    #expect(out == [.failed(.discoveryFailed(.readByGroupTypeRequest, .insufficientResources))])
  }

  @Test func thePeerAsAClientIsAnswered() {
    var client = GATTClient()
    // An MTU exchange started by the peer: answered, and the smaller MTU used.
    #expect(
      client.received(ATTPDU.exchangeMTURequest(clientRxMTU: 100).encode(), now: 0) == [
        .send(ATTPDU.exchangeMTUResponse(serverRxMTU: 247).encode())
      ])
    #expect(client.mtu == 100)
    // A read of our (empty) database: not supported, rather than a 30 s wait for the peer.
    #expect(
      client.received(ATTPDU.readRequest(handle: 3).encode(), now: 0) == [
        .send(ATTPDU.errorResponse(request: 0x0A, handle: 0, error: .requestNotSupported).encode())
      ])
    // A request we do not know (Read Blob), and one we cannot parse.
    #expect(
      client.received([0x0C, 0x03, 0x00, 0x00, 0x00], now: 0) == [
        .send(ATTPDU.errorResponse(request: 0x0C, handle: 0, error: .requestNotSupported).encode())
      ])
    #expect(
      client.received([0x0A, 0x03], now: 0) == [
        .send(ATTPDU.errorResponse(request: 0x0A, handle: 0, error: .invalidPDU).encode())
      ])
    // Commands get no answer.
    #expect(client.received(ATTPDU.writeCommand(handle: 3, value: [1]).encode(), now: 0).count == 1)
    #expect(!client.hasFailed)
  }

  @Test func notificationsDuringDiscoveryAreKept() throws {
    // A strap may notify as soon as its CCCD is written, before the Write Response arrives.
    var peer = GATTTestPeer.heartRateStrap()
    var client = GATTClient()
    var out = client.start(now: 0)
    var index = 0
    var injected = false
    while index < out.count {
      if case .send(let bytes) = out[index] {
        if !injected, bytes.first == 0x12, bytes.count == 5,
          UInt16(bytes[1]) | UInt16(bytes[2]) << 8 == peer.valueHandle(.heartRateMeasurement)! + 1
        {
          injected = true
          let reply = peer.answer(bytes)
          // Needs the value handles: known once discovery is done, which it is by now.
          out += client.received(peer.notification(.heartRateMeasurement, [0, 61]), now: 0)
          if let reply { out += client.received(reply, now: 0) }
        } else if let reply = peer.answer(bytes) {
          out += client.received(reply, now: 0)
        }
      }
      index += 1
    }
    #expect(injected)
    #expect(out.contains(.value(.heartRateMeasurement, [0, 61], .notification)))
    #expect(try #require(summary(out)).subscribed[.heartRateMeasurement] == .notification)
  }

  @Test func randomBytesNeverCrashIt() {
    var random = SeededRandom(seed: 0x6A77)
    for _ in 0..<2_000 {
      var client = GATTClient()
      _ = client.start(now: 0)
      for step in 0..<8 {
        let count = Int(random.next() % 24)
        let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let out = client.received(bytes, now: Double(step))
        if client.hasFailed { #expect(client.received(bytes, now: 9).isEmpty) }
        for case .send(let pdu) in out { #expect(pdu.count <= client.mtu) }
      }
    }
  }
}
