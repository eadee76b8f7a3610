import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// GPS trouble the rider can see (issue 18), through the engine on a manual clock: refused
/// fixes, gpsd without a receiver, devices that flap.
struct DeviceWatchTests {
  let fix = GPSFix(dimension: .threeD, time: 1_790_000_000, latitude: 52.37, longitude: 5.2, horizontalError: 8)
  let tooCoarse = FixRejection.horizontalErrorTooLarge(error: 180, limit: 100)

  func events(_ h: EngineHarness) -> [SessionEvent] {
    h.commands.compactMap { if case .recordEvent(_, let e) = $0 { e } else { nil } }
  }

  func gpsdAnswers(_ h: inout EngineHarness) {
    h.send(.device(DeviceStatus(device: .gps, condition: .available, detail: "connected to gpsd 3.22 at x:2947")))
    h.send(.device(DeviceStatus(device: .gpsReceiver, condition: .available, detail: "gpsd has 1 receiver open")))
  }

  @Test("a device kind hashes its case: every case its own ordinal, equal kinds equal hashes, all usable as keys")
  func deviceKindsHashByCase() {
    let ordinals = DeviceKind.allCases.map(\.ordinal)
    #expect(Set(ordinals).count == DeviceKind.allCases.count)
    #expect(ordinals == ordinals.sorted(), "in declaration order")
    var byKind: [DeviceKind: String] = [:]
    for kind in DeviceKind.allCases { byKind[kind] = kind.rawValue }
    for kind in DeviceKind.allCases {
      #expect(byKind[kind] == kind.rawValue)
      #expect(kind.hashValue == DeviceKind(rawValue: kind.rawValue)!.hashValue)
    }
  }

  @Test("fixes refused for 10 s: a warning, an event with the reason, the LED's fault; a good fix ends it")
  func refusedFixesThatLast() throws {
    var h = EngineHarness()
    gpsdAnswers(&h)
    h.commands.removeAll()
    let began = h.now.monotonic
    for second in 0..<9 {
      h.advance(by: 1)
      h.send(.reading(.gpsRejected(tooCoarse)))
      #expect(h.engine.gps == .rejecting, "second \(second)")
    }
    // Not yet told: the first poor fixes after a cold start are normal.
    #expect(events(h).isEmpty)
    #expect(h.engine.indicator == .waitingForFix)
    #expect(h.engine.nextDeadline == began + 1 + 10, "the engine wakes when it would tell")
    let status = h.engine.status(at: h.now)
    #expect(status.gps == .rejecting)
    #expect(status.gpsDetail?.contains("horizontal error 180 m > limit 100 m") == true, "\(status.gpsDetail ?? "")")
    #expect(status.gpsDetail?.contains("max_horizontal_error") == true, "names the setting to change")

    h.advance(by: 2)
    h.send(.wakeup)
    let told = try #require(events(h).first)
    #expect(told.kind == .deviceFailing)
    #expect(told.detail?.hasPrefix("gps: refusing fixes: fixes arrive and are refused") == true, "\(told.detail ?? "")")
    #expect(told.detail?.contains("limit 100 m") == true)
    #expect(h.engine.indicator == .fault)
    #expect(h.engine.faultyDevices == [.gps])
    #expect(
      h.commands.contains(
        .log(.warning, "gps refusing fixes: \(told.detail!.dropFirst("gps: refusing fixes: ".count))")))
    // Said once, not every second.
    for _ in 0..<20 {
      h.advance(by: 1)
      h.send(.reading(.gpsRejected(tooCoarse)))
      h.send(.wakeup)
    }
    #expect(events(h).count == 1)

    // The limit raised (or the sky cleared): a fix is taken, and that is said too.
    h.advance(by: 1)
    h.send(.reading(.gps(fix)))
    #expect(h.engine.gps == .fix)
    #expect(h.engine.indicator == .off)
    let back = try #require(events(h).last)
    #expect(back.kind == .deviceAvailable)
    #expect(back.detail?.contains("fixes are accepted again") == true)
  }

  @Test("fixes refused for an absurd error (past Int's range): status and the event tell it, the engine goes on")
  func refusedForAnAbsurdError() throws {
    var h = EngineHarness()
    gpsdAnswers(&h)
    h.commands.removeAll()
    // What the filter makes of a TPV whose eph is 1e19 m: the status and the warning once used
    // Int(_:) on it, which traps, and the service would restart into the same receiver.
    let absurd = FixRejection.horizontalErrorTooLarge(error: 1e19, limit: 20)
    for _ in 0..<11 {
      h.advance(by: 1)
      h.send(.reading(.gpsRejected(absurd)))
      h.send(.wakeup)
    }
    let detail = h.engine.status(at: h.now).gpsDetail ?? ""
    #expect(detail.contains("horizontal error 1e+19 m > limit 20 m"), "\(detail)")
    let told = try #require(events(h).first)
    #expect(told.detail?.contains("horizontal error 1e+19 m") == true, "\(told.detail ?? "")")
    h.advance(by: 1)
    h.send(.reading(.gps(fix)))
    #expect(h.engine.gps == .fix)
  }

  @Test("refused fixes that stop before 10 s (a fix, or no fix) are never reported")
  func briefRefusals() {
    var h = EngineHarness()
    gpsdAnswers(&h)
    h.commands.removeAll()
    for _ in 0..<5 {
      h.advance(by: 1)
      h.send(.reading(.gpsRejected(.zeroPosition)))
    }
    h.advance(by: 1)
    h.send(.reading(.gpsNoFix))
    #expect(h.engine.gps == .searching)
    h.advance(by: 30)
    h.send(.wakeup)
    #expect(events(h).isEmpty)
    #expect(h.engine.indicator == .waitingForFix)
  }

  @Test("status tells no gpsd, gpsd without a receiver, no fix, refused fixes and a fix apart")
  func gpsConditions() {
    var h = EngineHarness()
    #expect(h.engine.gps == .none)
    h.send(.device(DeviceStatus(device: .gps, condition: .failing, detail: "no answer from gpsd at x:2947")))
    #expect(h.engine.gps == .noGPSD)
    #expect(h.engine.status(at: h.now).gpsDetail == "failing: no answer from gpsd at x:2947")
    #expect(h.engine.indicator == .fault)
    h.send(.device(DeviceStatus(device: .gps, condition: .available, detail: "connected")))
    h.send(.device(DeviceStatus(device: .gpsReceiver, condition: .absent, detail: "gpsd has no receiver open")))
    #expect(h.engine.gps == .noReceiver)
    #expect(h.engine.status(at: h.now).gpsDetail == "absent: gpsd has no receiver open")
    #expect(h.engine.indicator == .fault)
    h.send(.device(DeviceStatus(device: .gpsReceiver, condition: .available, detail: "gpsd opened the receiver")))
    h.send(.reading(.gpsNoFix))
    #expect(h.engine.gps == .searching)
    #expect(h.engine.indicator == .waitingForFix)
    h.send(.reading(.gpsRejected(tooCoarse)))
    #expect(h.engine.gps == .rejecting)
    h.send(.reading(.gps(fix)))
    #expect(h.engine.gps == .fix)
    #expect(h.engine.indicator == .off)
    // gpsd goes: no gpsd, whatever the fix monitor still says.
    h.send(.device(DeviceStatus(device: .gps, condition: .lost, detail: "lost gpsd")))
    #expect(h.engine.gps == .noGPSD)
  }

  @Test("a device that flaps: a bounded number of events, one saying it is unstable, one when it is steady")
  func flapping() throws {
    var h = EngineHarness()
    gpsdAnswers(&h)
    h.commands.removeAll()
    // A loose receiver: gpsd closes and reopens it twice a second for a minute.
    for index in 0..<120 {
      h.advance(by: 0.5)
      let open = index % 2 == 1
      h.send(
        .device(
          DeviceStatus(device: .gpsReceiver, condition: open ? .available : .lost, detail: open ? "opened" : "closed")))
    }
    let during = events(h)
    #expect(during.count <= 5, "\(during.map { $0.detail ?? "" })")
    let unstable = try #require(during.last)
    #expect(unstable.kind == .deviceFailing)
    #expect(
      unstable.detail?.hasPrefix("gpsReceiver: unstable: its condition changed") == true, "\(unstable.detail ?? "")")
    #expect(h.engine.indicator == .fault, "unstable is a fault, even in a moment it is available")
    #expect(h.engine.faultyDevices.contains(.gpsReceiver))
    // Steady (open) for a minute: one event says so, with the count, and the fault clears.
    let lastChange = h.now.monotonic
    #expect(h.engine.nextDeadline == lastChange + 60)
    h.advance(by: 61)
    h.send(.wakeup)
    let steady = try #require(events(h).last)
    #expect(steady.kind == .deviceAvailable)
    #expect(steady.detail?.contains("steady again after") == true, "\(steady.detail ?? "")")
    #expect((steady.value ?? 0) > 100, "the changes counted while unstable")
    #expect(events(h).count == during.count + 1)
    #expect(h.engine.indicator != .fault)
    // A single change later is an ordinary event again.
    h.advance(by: 1)
    h.send(.device(DeviceStatus(device: .gpsReceiver, condition: .lost, detail: "closed")))
    #expect(events(h).last?.detail == "gpsReceiver: closed")
  }
}

@Suite("A BLE strap's comings and goings during a ride")
struct StrapEventTests {
  func recorded(_ h: EngineHarness) -> [SessionEvent] {
    h.commands.compactMap { if case .recordEvent(_, let e) = $0 { e } else { nil } }
  }

  /// A session running, with `device` connected (its address the status's detail).
  func running(with device: DeviceKind, address: String) -> EngineHarness {
    var h = EngineHarness()
    _ = h.press(.start)
    h.finishCountdown()
    h.send(.device(DeviceStatus(device: device, condition: .available, detail: address)))
    return h
  }

  @Test func disconnectedAndConnectedAgainWithTheLEDShowingTheGapAndNoValuesInvented() throws {
    let strap = "A0:9E:1A:12:34:56"
    var h = running(with: .heartRateStrap, address: strap)
    for _ in 0..<3 {
      h.advance(by: 1)
      h.send(.reading(.heartRate(bpm: 140)))
      h.send(.tick)
    }
    h.send(.device(DeviceStatus(device: .heartRateStrap, condition: .lost, detail: "\(strap): link lost; retrying")))
    #expect(h.engine.indicator == .fault)
    // The ride goes on; once the last value is stale the points carry no heart rate.
    for _ in 0..<8 {
      h.advance(by: 1)
      h.send(.tick)
    }
    #expect(h.engine.state == .running)
    h.send(.device(DeviceStatus(device: .heartRateStrap, condition: .available, detail: strap)))
    #expect(h.engine.indicator != .fault)

    let kinds = recorded(h).map(\.kind).filter { $0 == .sensorConnected || $0 == .sensorDisconnected }
    #expect(kinds == [.sensorConnected, .sensorDisconnected, .sensorConnected])
    let gone = try #require(recorded(h).first { $0.kind == .sensorDisconnected })
    #expect(gone.detail?.contains("heartRateStrap") == true && gone.detail?.contains("link lost") == true)
    let points = h.commands.compactMap { if case .recordPoint(_, let p) = $0 { p } else { nil } }
    #expect(points.prefix(3).allSatisfy { $0.heartRate == 140 })
    #expect(points.dropFirst(3).allSatisfy { $0.heartRate == nil }, "from the loss on, a gap")
  }

  @Test(
    "a sensor's last values are not recorded after its loss or its removal",
    arguments: [DeviceKind.heartRateStrap, .powerMeter, .speedCadenceSensor], [false, true])
  func lostOrRemovedSensorsValuesStopAtOnce(_ device: DeviceKind, removed: Bool) throws {
    var h = running(with: device, address: "A0:9E:1A:12:34:56")
    func readings() {
      switch device {
      case .heartRateStrap: h.send(.reading(.heartRate(bpm: 155)))
      case .powerMeter:
        h.send(.reading(.power(watts: 300)))
        h.send(.reading(.cadence(rpm: 90)))
      default:
        h.send(.reading(.wheelSpeed(metersPerSecond: 8, distance: 8)))
        h.send(.reading(.cadence(rpm: 90)))
      }
    }
    for _ in 0..<3 {
      h.advance(by: 1)
      readings()
      h.send(.tick)
    }
    if removed {
      h.send(.deviceRemoved(device))
    } else {
      h.send(.device(DeviceStatus(device: device, condition: .lost, detail: "link lost; retrying")))
    }
    for _ in 0..<3 {
      h.advance(by: 1)
      h.send(.tick)
    }
    let points = h.commands.compactMap { if case .recordPoint(_, let p) = $0 { p } else { nil } }
    #expect(points.count == 6)
    func carries(_ p: TrackPoint) -> Bool {
      p.heartRate != nil || p.power != nil || p.cadence != nil || p.wheelSpeed != nil
    }
    #expect(points.prefix(3).allSatisfy(carries))
    #expect(!points.dropFirst(3).contains(where: carries), "\(points.dropFirst(3))")
  }

  @Test(
    "a power meter and a speed/cadence pod are BLE sensors too: their own events, and the LED",
    arguments: [DeviceKind.powerMeter, .speedCadenceSensor])
  func otherSensors(kind: DeviceKind) throws {
    #expect(kind.isRideSensor)
    var h = running(with: kind, address: "C1:00:00:00:00:01")
    h.send(.device(DeviceStatus(device: .heartRateStrap, condition: .available, detail: "A0:9E:1A:12:34:56")))
    h.send(.device(DeviceStatus(device: kind, condition: .lost, detail: "C1:00:00:00:00:01 sent nothing for 15 s")))
    #expect(h.engine.indicator == .fault)
    #expect(h.engine.faultyDevices == [kind])
    let gone = try #require(recorded(h).last { $0.kind == .sensorDisconnected })
    #expect(gone.detail?.contains(kind.rawValue) == true)
    #expect(!DeviceKind.gps.isRideSensor && !DeviceKind.barometer.isRideSensor)
    // Removed with workoutctl: forgotten, so no fault and nothing in status; the ride goes on.
    h.send(.deviceRemoved(kind))
    #expect(h.engine.indicator != .fault)
    #expect(h.engine.faultyDevices.isEmpty)
    #expect(h.engine.state == .running)
  }

  /// A speed sensor failing in part (its wheel pairs refused) while it stays connected, then
  /// good again: the event says it is available again, not that it connected; one that failed
  /// and was connected anew says connected.
  @Test func aSensorGoodAgainOnItsConnectionIsAvailableNotConnected() throws {
    let pod = "C1:00:00:00:00:02"
    var h = running(with: .speedCadenceSensor, address: pod)
    h.send(.device(DeviceStatus(device: .speedCadenceSensor, condition: .failing, detail: "\(pod): pairs refused")))
    #expect(h.engine.indicator == .fault)
    h.advance(by: 1)
    h.send(
      .device(DeviceStatus(device: .speedCadenceSensor, condition: .available, detail: pod, sameConnection: true)))
    #expect(h.engine.indicator != .fault)
    h.advance(by: 61)  // past the flapping window: these are changes, not a flapping sensor
    h.send(.device(DeviceStatus(device: .speedCadenceSensor, condition: .failing, detail: "\(pod): GATT error")))
    h.advance(by: 1)
    h.send(.device(DeviceStatus(device: .speedCadenceSensor, condition: .available, detail: pod)))
    let kinds = recorded(h).filter { $0.detail?.contains("speedCadenceSensor") == true }.map(\.kind)
    let expected: [SessionEvent.Kind] = [
      .sensorConnected, .deviceFailing, .deviceAvailable, .deviceFailing, .sensorConnected,
    ]
    #expect(kinds == expected, "\(kinds)")
    // A status from a build before the flag reads as a new connection.
    let older = try JSONDecoder().decode(
      DeviceStatus.self, from: Data(#"{"device":"powerMeter","condition":"available","detail":"x"}"#.utf8))
    #expect(older.sameConnection == nil)
    #expect(DeviceWatch.notice(for: older).kind == .sensorConnected)
  }

  /// The gauge stays available whether or not there is a battery: the battery it reads
  /// appearing (a power bank's gauge plugged in) or changing is recorded and logged once;
  /// the same detail again is not.
  @Test func aBatteryThatAppearsIsNewsThoughTheGaugeStaysAvailable() {
    var h = running(with: .battery, address: "no battery information")
    h.commands.removeAll()
    h.send(.device(DeviceStatus(device: .battery, condition: .available, detail: "battery sbs-0-000b")))
    h.advance(by: 61)
    h.send(.device(DeviceStatus(device: .battery, condition: .available, detail: "battery sbs-0-000b")))
    let details = recorded(h).map { $0.detail ?? "" }
    #expect(details.count == 1, "\(details)")
    #expect(details.first?.contains("sbs-0-000b") == true, "\(details)")
    let logged = h.commands.contains { if case .log(_, let line) = $0 { line.contains("sbs-0-000b") } else { false } }
    #expect(logged, "\(h.commands)")
  }
}
