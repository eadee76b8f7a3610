import Foundation
import LinuxSupport
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutTestSupport

/// Every long-lived part of the real service starts one way and stops one way: a SIGTERM in
/// the middle of a ride stops the parts in the reverse of their starting order, and no thread
/// any of them started is left running.
@Suite(.serialized)
struct ServiceLifecycleTests {
  /// The parts as the log names them, in the order of `marker` ("part started: " or
  /// "part stopping: ").
  static func parts(_ log: String, _ marker: String) -> [String] {
    log.split(separator: "\n").compactMap { line in
      line.range(of: marker).map { String(line[$0.upperBound...]) }
    }
  }

  static func expectStoppedInReverse(_ service: ServiceProcess, including: [String]) throws {
    let log = service.log
    let started = parts(log, "part started: ")
    let stopping = parts(log, "part stopping: ")
    for name in including { #expect(started.contains { $0.hasPrefix(name) }, "\(name) started: \(started)") }
    #expect(started.first == "signal watch", "the signal watch first: \(started)")
    #expect(stopping == started.reversed(), "started \(started), stopped \(stopping)")
    #expect(log.contains("stopped: every part's threads have ended"), "\(log.suffix(1500))")
  }

  @Test func aStopMidRideOnTheSimulatedBoardStopsEveryPartInReverse() throws {
    let dir = ServiceDirectory()
    let config = dir.path + "/workoutd.toml"
    try "[web]\nenabled = true\naddress = \"127.0.0.1\"\nport = 0\n".write(
      toFile: config, atomically: true, encoding: .utf8)
    let service = try ServiceProcess(dir, arguments: ["--speed", "20", "--config", config])
    try service.waitUntilReady()
    try waitFor("the ride to be running", timeout: 60) {
      let status = try service.status()
      return status.state == .running && status.points > 20
    }
    // A control client that has connected and said nothing: the stop waits for it no longer
    // than its deadline.
    let idle = try UnixSocket.connect(path: dir.socket)
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
    idle.close()
    try Self.expectStoppedInReverse(
      service, including: ["control socket", "web server", "exporter", "simulated ride"])
  }

  @Test(.enabled(if: GPSFake.isAvailable, "needs gpsfake (make test installs gpsd-clients)"))
  func aStopMidRideOnTheLinuxBoardStopsEveryPartInReverse() throws {
    let dir = ServiceDirectory()
    let port = GPSFake.freePort()
    let gpsd = try GPSFake(capture: LinuxBoardGPSTests.capture, port: port, singleShot: false, cycle: 0.02)
    defer { gpsd.terminate() }
    let config = try LinuxBoardGPSTests().configuration(port: port, in: dir)
    let service = try ServiceProcess(dir, arguments: ["--config", config])
    try service.waitUntilReady()
    try waitFor("a GPS fix through gpsd", timeout: 60) { try service.status().gps == .fix }
    _ = try service.control(.start)
    try waitFor("recording", timeout: 30) { try service.status().points >= 3 }
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
    try Self.expectStoppedInReverse(service, including: ["control socket", "exporter", "gpsd 127.0.0.1:\(port)"])
  }
}
