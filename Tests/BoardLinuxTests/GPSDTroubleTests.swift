import Foundation
import SensorProtocols
import Testing
import WorkoutCore
import WorkoutTestSupport

@testable import BoardLinux

#if canImport(Glibc)
  import Glibc
#endif

/// GPS trouble the rider can see (issue 18), at the source: fixes refused by a real gpsd's
/// errors, a port that never speaks, a peer that sends garbage, a receiver that flaps.
extension GPSDLive {
  @Suite("GPS trouble at the source")
  struct Trouble {
    @Test(
      "a real gpsd whose fixes exceed the limit: one refusal an epoch, with the error and the limit; a raised limit takes them"
    )
    func refusedFixes() throws {
      // quectel-eg25-g reports horizontal errors of 21–78 m (gpsd derives them from HDOP).
      let strict = try gpsdReplay("quectel-eg25-g.log", limit: 5)
      let refused = strict.recorder.rejections
      #expect(!refused.isEmpty)
      #expect(strict.recorder.fixes.allSatisfy { $0.horizontalError == nil }, "only fixes of unknown error pass 5 m")
      for reason in refused {
        guard case .horizontalErrorTooLarge(let error, let limit) = reason else {
          Issue.record("refused for \(reason)")
          continue
        }
        #expect(limit == 5 && error > 5)
      }
      // One an epoch: no more refusals than epochs gpsd reported with a 2D/3D fix (a run of
      // fix reports with one time; its fixes after a no-fix carry no time at first).
      var epochs = 0
      var previous: (fix: Bool, time: Double?)?
      for tpv in strict.reference {
        let current = (fix: tpv.mode >= 2, time: tpv.time?.secondsSince1970)
        if current.fix, previous.map({ !$0.fix || $0.time != current.time }) ?? true { epochs += 1 }
        previous = current
      }
      #expect(refused.count <= epochs, "\(refused.count) refusals for \(epochs) epochs")
      #expect(refused.count >= epochs / 2)
      #expect(refused.first?.description.contains("max_horizontal_error") == true)

      let lenient = try gpsdReplay("quectel-eg25-g.log", limit: 100)
      #expect(lenient.recorder.rejections.isEmpty)
      #expect(lenient.recorder.fixes.count > 20)
    }

    func waitForFailing(_ recorder: GPSDRecorder, timeout: Double) -> DeviceStatus? {
      _ = gpsdWaitUntil(timeout: timeout) { recorder.statuses.last?.condition == .failing }
      return recorder.statuses.last { $0.condition == .failing }
    }

    @Test("a port that accepts and never speaks: 'no answer from gpsd' within 10 s; a real gpsd there later clears it")
    func silentPeer() throws {
      let port = GPSFake.freePort()
      let peer = try FakeGPSDPeer(port: port, behaviour: .silent)
      let recorder = GPSDRecorder()
      let source = GPSDSource(
        settings: GPSDSourceSettings(host: "127.0.0.1", port: port, initialBackoff: 0.5, maximumBackoff: 1),
        reading: .byEngine, observer: { recorder.trace($0) })
      let started = gpsdMonotonicNow()
      source.start(sink: recorder)
      let reader = EngineReader(source, into: recorder, every: 1)
      defer {
        reader.stop()
        source.stop()
      }
      let failing = try #require(waitForFailing(recorder, timeout: 10))
      #expect(gpsdMonotonicNow() - started < 10)
      #expect(failing.detail.hasPrefix("no answer from gpsd at 127.0.0.1:\(port)"), "\(failing.detail)")
      #expect(!recorder.statuses.contains { $0.condition == .available }, "never taken for a working gpsd")
      // Said once, though the source keeps retrying.
      Thread.sleep(forTimeInterval: 3)
      #expect(recorder.statuses.filter { $0.condition == .failing }.count == 1)

      peer.stop()
      let fake = try GPSFake(capture: "gp-320fw-2019-04-06-overflow.log", port: port, singleShot: false, cycle: 0.01)
      defer { fake.terminate() }
      #expect(gpsdWaitUntil(timeout: 30) { recorder.statuses.last?.condition == .available }, "\(recorder.statuses)")
      #expect(recorder.statuses.last?.detail.hasPrefix("connected to gpsd 3.") == true)
    }

    @Test("a peer that sends random bytes: 'not gpsd' within 10 s, never reported as a working gpsd")
    func garbagePeer() throws {
      let port = GPSFake.freePort()
      let peer = try FakeGPSDPeer(port: port, behaviour: .randomBytes)
      defer { peer.stop() }
      let recorder = GPSDRecorder()
      let source = GPSDSource(
        settings: GPSDSourceSettings(host: "127.0.0.1", port: port, initialBackoff: 0.5, maximumBackoff: 1),
        observer: { recorder.trace($0) })
      let started = gpsdMonotonicNow()
      source.start(sink: recorder)
      defer { source.stop() }
      let failing = try #require(waitForFailing(recorder, timeout: 10))
      #expect(gpsdMonotonicNow() - started < 10)
      #expect(failing.detail.hasPrefix("not gpsd at 127.0.0.1:\(port)"), "\(failing.detail)")
      #expect(!recorder.statuses.contains { $0.condition == .available })
      #expect(recorder.fixes.isEmpty)
    }

    /// A fake gpsd on a port of its own, greeting as gpsd 3.22 and then sending `lines` in turn,
    /// one every `interval` seconds, over and over; a source started on it, posting to a recorder.
    func gpsdSaying(_ lines: [String], every interval: Double) throws -> (FakeGPSDPeer, GPSDRecorder, GPSDSource) {
      let port = GPSFake.freePort()
      let peer = try FakeGPSDPeer(
        port: port,
        behaviour: .lines(
          greeting: #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#,
          repeating: lines), interval: interval)
      let recorder = GPSDRecorder()
      let source = GPSDSource(settings: GPSDSourceSettings(host: "127.0.0.1", port: port))
      source.start(sink: recorder)
      return (peer, recorder, source)
    }

    @Test(
      "an epoch whose later report brings an altitude and a speed no receiver can measure: the fix posted carries neither"
    )
    func absurdFiguresLaterInAnEpoch() throws {
      // An NMEA receiver's epoch as gpsd reports it: RMC's position first (no altitude yet),
      // then GGA's report of the same time with the altitude, here 1e300 m at 1e300 m/s; then
      // the next epoch, which hands the first on.
      let (peer, recorder, source) = try gpsdSaying(
        [
          #"{"class":"DEVICE","path":"/dev/ttyS0","activated":"2026-11-23T18:00:00.000Z","driver":"NMEA0183"}"#,
          #"{"class":"TPV","mode":3,"time":"2026-11-23T18:00:01.000Z","lat":45.5,"lon":7.25,"eph":5}"#,
          #"{"class":"TPV","mode":3,"time":"2026-11-23T18:00:01.000Z","lat":45.5,"lon":7.25,"eph":5,"altMSL":1e300,"speed":1e300}"#,
          #"{"class":"TPV","mode":3,"time":"2026-11-23T18:00:02.000Z","lat":45.5,"lon":7.2501,"eph":5,"altMSL":300,"speed":8}"#,
        ], every: 0.05)
      defer { peer.stop() }
      #expect(gpsdWaitUntil(timeout: 10) { recorder.fixes.count >= 3 })
      source.stop()
      let fixes = recorder.fixes
      let first = try #require(fixes.first { $0.time == GPSDCapturesTime.iso("2026-11-23T18:00:01Z") })
      #expect(first.altitude == nil && first.speed == nil, "\(first)")
      let next = try #require(fixes.first { $0.time == GPSDCapturesTime.iso("2026-11-23T18:00:02Z") })
      #expect(next.altitude == 300 && next.speed == 8)
      #expect(fixes.allSatisfy { ($0.altitude ?? 0) < 18_000 && ($0.speed ?? 0) <= 515 })
    }

    @Test("a receiver that gpsd closes and reopens ten times a second: the engine records a bounded number of events")
    func flappingReceiver() throws {
      let (peer, recorder, source) = try gpsdSaying(
        [
          #"{"class":"DEVICE","path":"/dev/ttyS0","activated":0}"#,
          #"{"class":"DEVICE","path":"/dev/ttyS0","activated":"2026-11-23T18:00:00.000Z","driver":"NMEA0183"}"#,
        ], every: 0.1)
      defer { peer.stop() }
      Thread.sleep(forTimeInterval: 4)
      source.stop()
      // The source passes on every change (about 40 here); the engine bounds what is recorded.
      let changes = recorder.receiverStatuses
      #expect(changes.count >= 20, "\(changes.count)")
      var engine = SessionEngine(settings: EngineSettings())
      var recorded: [SessionEvent] = []
      for (at, entry) in recorder.stamped {
        guard case .input(let input) = entry else { continue }
        let step = engine.handle(input, at: Moment(monotonic: at, wall: at))
        recorded += step.commands.compactMap { if case .recordEvent(_, let e) = $0 { e } else { nil } }
      }
      let aboutReceiver = recorded.filter { $0.detail?.hasPrefix("gpsReceiver:") == true }
      #expect(aboutReceiver.count <= 5, "\(aboutReceiver.map { $0.detail ?? "" })")
      #expect(aboutReceiver.last?.detail?.contains("unstable") == true)
      #expect(engine.indicator == .fault)
    }
  }
}
