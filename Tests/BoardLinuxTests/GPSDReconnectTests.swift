import Foundation
import SensorProtocols
import Testing
import WorkoutCore
import WorkoutTestSupport

@testable import BoardLinux

#if canImport(Glibc)
  import Glibc
#endif

extension GPSDLive {
  @Suite("GPSDSource when gpsd is missing, dies, comes back")
  struct Reconnect {
    /// A source for gpsd on `port` (30 m limit, backoffs of 0.05-0.2 s), posting into `recorder`.
    func startedSource(port: Int, recorder: GPSDRecorder) -> GPSDSource {
      let source = GPSDSource(
        settings: GPSDSourceSettings(
          host: "localhost", port: port, quality: FixQualitySettings(maxHorizontalError: 30), initialBackoff: 0.05,
          maximumBackoff: 0.2),
        observer: { recorder.trace($0) })
      source.start(sink: recorder)
      return source
    }

    @Test("no gpsd yet → absent, retries; gpsd starts → fixes; gpsd killed → lost; restarted → fixes again")
    func lifecycle() throws {
      let port = GPSFake.freePort()
      let recorder = GPSDRecorder()
      let source = startedSource(port: port, recorder: recorder)
      defer { source.stop() }

      // 1. Nobody listens: the GPS is absent, said once, and the source keeps trying.
      #expect(gpsdWaitUntil(timeout: 10) { recorder.connectFailures >= 3 })
      #expect(recorder.statuses.map(\.condition) == [.absent])

      // 2. gpsd appears (a looping replay): connected, fixes flow.
      // A pipe of this process's that is not close-on-exec, as another test's `Process` output
      // is: gpsfake must not hold it (its reader would wait for the replay's end).
      let pipe = Pipe()
      let pipeEnd = try FileManager.default.destinationOfSymbolicLink(
        atPath: "/proc/self/fd/\(pipe.fileHandleForWriting.fileDescriptor)")
      var fake = try GPSFake(capture: "gp-320fw-2019-04-06-overflow.log", port: port, singleShot: false, cycle: 0.01)
      #expect(
        gpsdWaitUntil(timeout: 30) { recorder.fixes.count >= 5 },
        "\(fake.stderr) \(recorder.statuses) \(recorder.all.suffix(5))")
      #expect(recorder.statuses.map(\.condition) == [.absent, .available])
      // gpsd's control socket is in this gpsfake's own directory, never a stale file of an
      // earlier run in /tmp (which let gpsfake add its pty before gpsd listened: see GPSFake).
      #expect(
        fake.gpsdControlSocket()?.hasPrefix(fake.privateDirectory + "/gpsfake-") == true,
        "\(fake.gpsdControlSocket() ?? "no gpsd")")
      #expect(!fake.openFiles().contains(pipeEnd), "gpsfake holds \(pipeEnd): \(fake.openFiles())")
      // The receiver behind it: gpsfake adds it after gpsd greets (so at first there may be
      // none), and it is open by the time fixes flow.
      #expect(recorder.receiverStatuses.last?.condition == .available, "\(recorder.receiverStatuses)")

      // 3. gpsd is killed mid-stream: the GPS is lost, said once; the source retries.
      let before = recorder.fixes.count
      #expect(fake.killGPSD())
      #expect(gpsdWaitUntil(timeout: 10) { recorder.statuses.last?.condition == .lost })
      fake.terminate()
      let failuresAtLoss = recorder.connectFailures
      #expect(gpsdWaitUntil(timeout: 10) { recorder.connectFailures >= failuresAtLoss + 2 })
      #expect(recorder.statuses.map(\.condition) == [.absent, .available, .lost], "\(recorder.statuses)")
      let lostAt = gpsdMonotonicNow()
      // Let the outage last longer than the fix monitor's limit used below.
      usleep(1_200_000)
      #expect(recorder.fixes.count <= before + 1)

      // 4. gpsd restarted on the same port: available again, fixes flow again.
      fake = try GPSFake(capture: "gp-320fw-2019-04-06-overflow.log", port: port, singleShot: false, cycle: 0.01)
      defer { fake.terminate() }
      #expect(
        gpsdWaitUntil(timeout: 30) { recorder.fixes.count >= before + 5 },
        "\(fake.stderr)\nstatuses: \(recorder.statuses)\nlast: \(recorder.all.suffix(8))")
      #expect(recorder.statuses.map(\.condition) == [.absent, .available, .lost, .available])
      source.stop()
      #expect(recorder.hasStopped)

      // The engine's view, with the runtime's stamps: a fix monitor (1 s limit) records the
      // outage as lost, then regained, with the gap.
      var monitor = FixMonitor(settings: FixMonitorSettings(lostAfter: 1))
      var events: [FixMonitorEvent] = []
      for (at, entry) in recorder.stamped {
        if case .input(.reading(let reading)) = entry {
          events += monitor.observe(reading, at: at)
        } else if let event = monitor.advance(to: at) {
          events.append(event)
        }
      }
      let lost = events.compactMap { if case .lost(let last, _) = $0 { last } else { nil } }
      let regained = events.compactMap { if case .regained(_, let gap) = $0 { gap } else { nil } }
      #expect(lost.count >= 1)
      #expect(lost.contains { $0 <= lostAt })
      #expect(regained.contains { $0 >= 1.2 })
    }

    /// The harness's guard against gpsfake's lost add (see `GPSFake.addReceiver`): without it a
    /// gpsd has no receiver for the whole run, as in a CI run where the test above saw no fix.
    @Test(
      "gpsfake's add of its pty lost: gpsd has no receiver until the harness adds it; a second add is harmless")
    func lostReceiverAdd() throws {
      let port = GPSFake.freePort()
      let fake = try GPSFake(
        capture: "gp-320fw-2019-04-06-overflow.log", port: port, singleShot: false, cycle: 0.01,
        losingTheReceiverAdd: true)
      defer { fake.terminate() }
      // gpsfake connects its own client after its add: once it has, the add has been lost.
      #expect(
        gpsdWaitUntil(timeout: 10) { fake.openFiles().contains { $0.hasPrefix("socket:") } }, "\(fake.openFiles())")
      #expect(fake.receiverPath()?.hasPrefix("/dev/pts/") == true, "\(fake.openFiles())")

      let recorder = GPSDRecorder()
      let source = startedSource(port: port, recorder: recorder)
      defer { source.stop() }
      #expect(gpsdWaitUntil(timeout: 10) { recorder.receiverStatuses.last?.condition == .absent })
      usleep(1_000_000)
      #expect(recorder.fixes.isEmpty, "\(recorder.all.suffix(5))")

      #expect(fake.addReceiver() == .added)
      #expect(
        gpsdWaitUntil(timeout: 30) { recorder.fixes.count >= 5 },
        "\(recorder.receiverStatuses) \(recorder.all.suffix(5))")
      #expect(recorder.receiverStatuses.last?.condition == .available, "\(recorder.receiverStatuses)")
      // gpsd already has it: "already active", nothing changes, fixes go on.
      #expect(fake.addReceiver() == .alreadyThere)
      let count = recorder.fixes.count
      #expect(gpsdWaitUntil(timeout: 10) { recorder.fixes.count >= count + 5 })
    }

    @Test("a port nobody listens on is a typed open error naming the endpoint and the errno")
    func refused() throws {
      let connection = GPSDConnection()
      let port = GPSFake.freePort()
      do {
        try connection.open(host: "127.0.0.1", port: String(port))
        Issue.record("connected to a closed port")
      } catch {
        #expect(error.operation == .open)
        #expect(error.code == ECONNREFUSED)
        #expect(error.message == "cannot connect to 127.0.0.1:\(port): Connection refused")
      }
      #expect(!connection.isOpen)
      #expect(throws: GPSDError.self) { try connection.read() }
    }

    @Test("a host that does not resolve is a typed open error with the resolver's words")
    func unresolvable() {
      let connection = GPSDConnection()
      do {
        try connection.open(host: "no-such-host.invalid", port: "2947")
        Issue.record("resolved an .invalid name")
      } catch {
        #expect(error.operation == .open)
        #expect(error.code == 0)
        #expect(error.message.hasPrefix("cannot resolve no-such-host.invalid:2947: "))
        #expect(error.message.count > "cannot resolve no-such-host.invalid:2947: ".count)
      }
      #expect(!connection.isOpen)
    }

    @Test("an unknown host is absent, not a crash")
    func unknownHost() {
      let recorder = GPSDRecorder()
      let source = GPSDSource(
        settings: GPSDSourceSettings(
          host: "no-such-host.invalid", port: 2947, initialBackoff: 0.05, maximumBackoff: 0.1),
        observer: { recorder.trace($0) })
      source.start(sink: recorder)
      #expect(gpsdWaitUntil(timeout: 10) { recorder.connectFailures >= 2 })
      source.stop()
      #expect(recorder.statuses.map(\.condition) == [.absent])
      #expect(recorder.hasStopped)
    }

    @Test("stop() during a long backoff returns at once, not after the backoff")
    func stopDuringBackoff() {
      let recorder = GPSDRecorder()
      let source = GPSDSource(
        settings: GPSDSourceSettings(
          host: "127.0.0.1", port: GPSFake.freePort(), initialBackoff: 30, maximumBackoff: 30),
        observer: { recorder.trace($0) })
      source.start(sink: recorder)
      #expect(gpsdWaitUntil(timeout: 10) { recorder.connectFailures >= 1 })
      let started = gpsdMonotonicNow()
      source.stop()
      #expect(gpsdMonotonicNow() - started < 10)
      #expect(recorder.hasStopped)
      // Stopping twice, or a source never started, is harmless.
      source.stop()
      GPSDSource().stop()
    }
  }
}
