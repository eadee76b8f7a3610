import Foundation
import LinuxSupport
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

/// The real `workoutd` process on the simulated board: crash, restart, signals, bad input.
@Suite(.serialized)
struct ServiceTests {
  /// Board speed for the crash tests: fast enough to ride on, slow enough that the host keeps
  /// up with one committed second per board second.
  static let speed = "20"

  @Test func killNineMidRideResumesTheSameSessionLosingAtMostASecond() throws {
    let dir = ServiceDirectory()
    let first = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try first.waitUntilReady()
    try waitFor("the ride to be running with some points", timeout: 60) {
      let status = try first.status()
      return status.state == .running && status.points > 60
    }
    // The last point the engine has recorded (it commits before it answers anything else).
    let before = try first.status()
    first.signal(SIGKILL)
    try first.waitForExit()

    let store = try WorkoutStore.openForReading(at: dir.database)
    #expect(try store.integrityCheck() == ["ok"])
    let committed = try store.pointCount(sessionID: before.sessionID!)
    let lastCommitted = try store.points(sessionID: before.sessionID!).last?.seq ?? -1
    let lost = (before.lastPointSequence ?? 0) - lastCommitted
    print(
      "kill -9: status said point \(before.lastPointSequence ?? -1), database has up to \(lastCommitted) (\(committed) points): \(max(0, lost)) s lost"
    )
    #expect(lost <= 1, "at most about one second of points may be lost")

    let second = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try second.waitUntilReady()
    let after = try second.status()
    #expect(after.sessionID == before.sessionID, "the same session continues")
    #expect(after.state == .running)
    try waitFor("points to continue", timeout: 30) { try second.status().points > committed + 20 }
    let events = try store.events(sessionID: before.sessionID!)
    let recovered = try #require(events.last { $0.kind == "recovered" })
    #expect(recovered.fromState == "running" && recovered.toState == "running")
    #expect(recovered.cause == "recovery")
    #expect(recovered.detail == "monotonic", "same boot: the gap is measured on the monotonic clock")
    #expect((recovered.value ?? 0) > 0, "the gap is recorded")
    // Sequence numbers go on from the last committed point, with no holes and no duplicates.
    let points = try store.points(sessionID: before.sessionID!)
    #expect(points.map(\.seq) == Array(0..<points.count))
    second.signal(SIGTERM)
    #expect(try second.waitForExit() == 0)
    // Start-up's code pages were let go of at READY (`ProcessMemory.releaseCodePages`), the
    // resume's among them, and the ride went on recording after it.
    let released = try #require(second.log.firstRange(of: "let go of ").map { second.log[$0.upperBound...] })
    // (Under qemu-user, make test-arm64, /proc/self/smaps is the emulator's own: nothing found.)
    if ProcessInfo.processInfo.environment["WORKOUTD_TEST_QEMU_USER"] == nil {
      #expect((Int(released.prefix { $0.isNumber }) ?? 0) > 0, "\(released.prefix(60))")
    }
  }

  /// SIGTERM keeps the WAL at the size the start made it, its header zero, everything in the
  /// database: the next start finds a clean stop and writes no room again; a kill -9 after
  /// that is still an unclean stop.
  @Test func aCleanStopKeepsTheWALForTheNextStart() throws {
    let dir = ServiceDirectory()
    let first = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try first.waitUntilReady()
    try waitFor("some points", timeout: 60) { try first.status().points > 20 }
    first.signal(SIGTERM)
    #expect(try first.waitForExit() == 0)
    #expect(first.log.contains("its WAL kept at"), "\(first.log)")
    let wal = dir.database + "-wal"
    func fileSize(_ path: String) -> Int? {
      (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
    }
    let size = try #require(fileSize(wal))
    #expect(size > 2_000_000, "the room the start made")
    // A WAL header (magic 0x377f0682) whose salts no frame after it carries.
    let handle = try #require(FileHandle(forReadingAtPath: wal))
    let head = [UInt8](try #require(try handle.read(upToCount: 56)))
    #expect(head.count == 56 && head[0..<4] == [0x37, 0x7F, 0x06, 0x82])
    #expect(head[16..<24] != head[40..<48])

    let second = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try second.waitUntilReady()
    #expect(!second.log.contains("not clean"), "\(second.log)")
    let before = try second.status().points
    try waitFor("points to go on", timeout: 60) { try second.status().points > before + 10 }
    #expect(fileSize(wal) == size, "no room made again, no commit grew it")
    second.signal(SIGKILL)
    try second.waitForExit()

    let third = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try third.waitUntilReady()
    #expect(third.log.contains("the last stop was not clean"), "\(third.log)")
    third.signal(SIGTERM)
    #expect(try third.waitForExit() == 0)
  }

  @Test func killNineWhilePausedResumesPaused() throws {
    let dir = ServiceDirectory()
    let first = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try first.waitUntilReady()
    try waitFor("the ride to be running", timeout: 60) { try first.status().state == .running }
    let paused = try first.control(.pause)
    #expect(paused.ok && paused.state == .paused)
    first.signal(SIGKILL)
    try first.waitForExit()

    let second = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try second.waitUntilReady()
    #expect(try second.status().state == .paused)
    #expect(try second.control(.resume).state == .running, "a rider's pause is resumed by the rider")
    second.signal(SIGTERM)
    try second.waitForExit()
  }

  /// A second service on a state directory in use would check, move aside or write the
  /// first's database under it: it is refused at once, and the first records on.
  @Test func aSecondServiceOnTheSameStateDirectoryIsRefusedAndTheFirstGoesOn() throws {
    let dir = ServiceDirectory()
    let first = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try first.waitUntilReady()
    try waitFor("the ride to be running", timeout: 60) { try first.status().points > 3 }
    let second = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    #expect(try second.waitForExit() == 1)
    #expect(second.log.contains("another workoutd is using \(dir.state)"), "\(second.log)")
    #expect(!second.log.contains("ready:") && !second.log.contains("database"), "\(second.log)")
    let points = try first.status().points
    try waitFor("the first to go on recording", timeout: 20) { try first.status().points > points + 2 }
    // Killed, the first leaves no lock behind: the next start takes the directory.
    first.signal(SIGKILL)
    _ = try first.waitForExit()
    let third = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try third.waitUntilReady()
    #expect(try third.status().state == .running)
  }

  @Test func sigtermStopsCleanlyAndTheSessionGoesOnAtTheNextStart() throws {
    let dir = ServiceDirectory()
    let first = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try first.waitUntilReady()
    try waitFor("the ride to be running", timeout: 60) { try first.status().points > 10 }
    let id = try first.status().sessionID
    first.signal(SIGTERM)
    #expect(try first.waitForExit() == 0)
    #expect(first.log.contains("stays running and resumes at the next start"))
    #expect(!FileManager.default.fileExists(atPath: dir.socket), "the control socket is removed")

    let second = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try second.waitUntilReady()
    let status = try second.status()
    #expect(status.sessionID == id)
    #expect(status.state == .running)
    second.signal(SIGINT)
    #expect(try second.waitForExit() == 0)
  }

  @Test func controlCommandsActAsButtonsAndRefusalsSayWhy() throws {
    let dir = ServiceDirectory()
    // A ride file with no presses: only the control socket drives the session.
    let ride = dir.path + "/no-presses.csv"
    let original = try String(
      contentsOfFile: repositoryRoot + "/board/sim/rides/garmin-edge-500-2011-09-25.csv", encoding: .utf8)
    try original.split(separator: "\n").filter { !$0.contains(",press,") }.prefix(400).joined(separator: "\n")
      .write(toFile: ride, atomically: true, encoding: .utf8)
    // No auto-pause: the ride starts slowly, and on a loaded host the commands below take
    // longer than the few ride seconds (at 20×) before it would pause by itself.
    let config = dir.path + "/no-auto-pause.toml"
    try "[auto_pause]\nenabled = false\n".write(toFile: config, atomically: true, encoding: .utf8)
    let service = try ServiceProcess(dir, arguments: ["--speed", Self.speed, "--ride", ride, "--config", config])
    try service.waitUntilReady()
    #expect(service.log.contains("has no start press: nothing is recorded unless a session is started"))

    var attributes = stat()
    #expect(stat(dir.socket, &attributes) == 0)
    #expect(attributes.st_mode & 0o777 == 0o660, "the control socket is for the service's group only")

    let ctl = binaryDirectory + "/workoutctl"
    let locations = ["--state-dir", dir.state, "--runtime-dir", dir.runtime]
    let refused = try run(ctl, ["pause"] + locations)
    #expect(refused.status == 1)
    #expect(refused.output.contains("there is no active session"))
    #expect(try run(ctl, ["start"] + locations).output.contains("start: session prepared"))
    try waitFor("the countdown to end", timeout: 30) { try service.status().state == .running }
    #expect(try run(ctl, ["lap"] + locations).output.contains("lap 1 marked"))
    #expect(try run(ctl, ["pause"] + locations).status == 0)
    let json = try run(ctl, ["resume", "--json"] + locations)
    #expect(json.status == 0)
    let reply = try ControlJSON.decode(ControlReply.self, from: json.output)
    #expect(reply.ok && reply.state == .running)
    let stop = try run(ctl, ["stop"] + locations)
    #expect(stop.status == 0)
    try waitFor("the session to end", timeout: 10) { try service.status().state == .ended }
    #expect(try run(ctl, ["resume"] + locations).status == 1, "ended is terminal")

    let sessions = try run(ctl, ["sessions", "--json"] + locations)
    #expect(sessions.status == 0)
    #expect(sessions.output.contains("\"state\":\"ended\""))
    let show = try run(ctl, ["show", "1"] + locations)
    #expect(show.output.contains("transition running → paused (button: control)"))
    #expect(show.output.contains("lap"))
    service.signal(SIGTERM)
    try service.waitForExit()
  }

  @Test func aServiceThatCannotOpenItsControlSocketLeavesTheUnfinishedSessionAlone() throws {
    let dir = ServiceDirectory()
    let first = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try first.waitUntilReady()
    try waitFor("a running ride", timeout: 60) { try first.status().state == .running }
    let session = try #require(try first.status().sessionID)
    first.signal(SIGKILL)
    try first.waitForExit()
    // A directory where the control socket goes: the socket cannot be made there.
    try? FileManager.default.removeItem(atPath: dir.socket)
    try FileManager.default.createDirectory(atPath: dir.socket + "/in-the-way", withIntermediateDirectories: true)
    for _ in 0..<3 {  // as systemd's Restart=always would
      let again = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
      #expect(try again.waitForExit() == 1)
      #expect(again.log.contains("cannot open the control socket"))
    }
    let events = try WorkoutStore.openForReading(at: dir.database).events(sessionID: session)
    #expect(!events.contains { $0.kind == "recovered" }, "no recovered event for starts that never ran")
  }

  @Test func noControlClientCanKeepAnotherWaiting() throws {
    let dir = ServiceDirectory()
    let service = try ServiceProcess.recording(in: dir)
    let ctl = binaryDirectory + "/workoutctl"
    let locations = ["--state-dir", dir.state, "--runtime-dir", dir.runtime]
    // Twelve connections that say nothing, and one that sends a byte every 1.5 s: within the
    // user's 16 places (a crowd beyond them is ControlLimitTests').
    let idle = try (0..<12).map { _ in try UnixSocket.connect(path: dir.socket) }
    let trickler = try UnixSocket.connect(path: dir.socket)
    let trickling = Thread {
      for byte in #"{"command":"status"}"#.utf8.prefix(4) {
        guard (try? trickler.writeAll(String(decoding: [byte], as: UTF8.self))) != nil else { return }
        Thread.sleep(forTimeInterval: 1.5)
      }
    }
    trickling.start()
    // Meanwhile a client is answered at once, every time (timed in this process: starting
    // workoutctl alone takes about a second under qemu-user), workoutctl too, and the ride
    // records on.
    let pointsBefore = try service.status().points
    for _ in 0..<3 {
      let started = Date()
      let reply = try sendControl(ControlRequest(command: .status), socketPath: dir.socket, timeout: 5)
      #expect(reply.ok)
      #expect(Date().timeIntervalSince(started) < 1.5, "not kept waiting by the trickler (cut off after 2 s)")
      let result = try run(ctl, ["status"] + locations)
      #expect(result.status == 0, "\(result.output)")
      Thread.sleep(forTimeInterval: 1)
    }
    #expect(try service.status().points >= pointsBefore + 2, "recording goes on")
    let stop = try run(ctl, ["stop"] + locations)
    #expect(stop.status == 0, "\(stop.output)")
    // The trickler is cut off after its 2 s, with one log line saying why.
    try waitFor("the slow client to be dropped", timeout: 10) { service.log.contains("no complete line in time") }
    for socket in idle { socket.close() }
    trickler.close()
    try waitFor("the session to end", timeout: 10) { try service.status().state == .ended }
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)
  }

  /// `make run` in miniature: the whole bundled ride at full speed, through the real process
  /// and store; the totals must match the recording device's within 2 %.
  /// Every ride in board/sim/rides (converted from real FIT, TCX and GPX recordings by
  /// board/sim/make-replay.py, smart-recorded ones among them) replays at full speed as one
  /// session that ends by itself; no point carries another second's data; and where the device
  /// wrote its own totals, distance and timer time are within 2 % of them, with its laps.
  @Test(arguments: try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/board/sim/rides").sorted())
  func everyBundledRideRecordsEndToEnd(_ file: String) throws {
    let path = repositoryRoot + "/board/sim/rides/" + file
    let dir = ServiceDirectory()
    let service = try ServiceProcess(dir, arguments: ["--speed", "max", "--exit-at-end", "--ride", path])
    #expect(try service.waitForExit(timeout: 300) == 0)
    let store = try WorkoutStore.openForReading(at: dir.database)
    #expect(try store.maxSessionID() == 1, "one session")
    let record = try #require(try store.session(id: 1))
    #expect(record.state == "ended")
    let summary = try #require(try store.summary(of: record))
    let rows = try store.points(sessionID: 1)
    // A point for each second of timer time: each stretch of running starts and ends inside a
    // second, so it may have up to one point less than its timer time (or one more).
    let stretches = try store.events(sessionID: 1).filter { $0.toState == "running" }.count
    #expect(
      abs(Double(rows.count) - summary.totals.timer) <= Double(stretches + 1),
      "\(rows.count) points, \(summary.totals.timer) s of timer time in \(stretches) stretches")
    let skewed = zip(rows, rows.dropFirst()).filter { a, b in
      abs((b.elapsed - a.elapsed) - (b.monotonic - a.monotonic)) > 0.01
    }
    #expect(
      skewed.isEmpty, "\(skewed.count) of \(rows.count) points: \(skewed.prefix(3).map { "\($0.0.seq)→\($0.1.seq)" })")

    let header = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
      .first { $0.hasPrefix("# device totals: ") }
    var totals: [String: Double] = [:]
    for pair in header?.dropFirst("# device totals: ".count).split(separator: ",") ?? [] {
      let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
      if parts.count == 2, let value = Double(parts[1]) { totals[parts[0]] = value }
    }
    print(
      "\(file): timer \(summary.totals.timer) s (device \(totals["total_timer_time"] ?? .nan)), distance "
        + "\(summary.totals.distance) m (device \(totals["total_distance"] ?? .nan)), laps \(summary.laps)")
    if let distance = totals["total_distance"] { #expect(abs(summary.totals.distance / distance - 1) < 0.02) }
    if let timer = totals["total_timer_time"] { #expect(abs(summary.totals.timer / timer - 1) < 0.02) }
    if let laps = totals["num_laps"] { #expect(try store.laps(sessionID: 1).count == Int(laps)) }
    #expect(try store.integrityCheck() == ["ok"])

    // The round trip: the FIT file the service exported as the session ended, read by Garmin's
    // own decoder, holds what the device said within the same tolerances, and every stretch of
    // running between a timer start and a stop_all.
    let exported = try FileManager.default.contentsOfDirectory(atPath: dir.state + "/exports")
    let fitName = try #require(exported.first { $0.hasSuffix(".fit") }, "\(exported)")
    #expect(exported.contains(String(fitName.dropLast(4)) + ".gpx"))
    let decoded = try decodeFIT(dir.state + "/exports/" + fitName)
    #expect((decoded["errors"] as? [String])?.isEmpty == true, "\(decoded["errors"] ?? "")")
    #expect(decoded["integrity"] as? Bool == true)
    #expect(decoded["records"] as? Int == rows.count)
    let fit = try #require(decoded["session"] as? [String: Any])
    func fitValue(_ key: String) -> Double? { (fit[key] as? Double) ?? (fit[key] as? Int).map(Double.init) }
    if let distance = totals["total_distance"] {
      #expect(try abs(#require(fitValue("total_distance")) / distance - 1) < 0.02)
    }
    if let timer = totals["total_timer_time"] {
      #expect(try abs(#require(fitValue("total_timer_time")) / timer - 1) < 0.02)
    }
    if let ascent = totals["total_ascent"] {
      // 15 % as against the devices (BundledRideTests), or 10 m on a ride with hardly any.
      #expect(try abs(#require(fitValue("total_ascent")) - ascent) <= max(0.15 * ascent, 10), "ascent")
    }
    if let heartRate = totals["avg_heart_rate"] {
      #expect(try abs(#require(fitValue("avg_heart_rate")) - heartRate) <= 3, "average heart rate")
    }
    let timer = try #require(decoded["timer_events"] as? [[Any]]).map { $0[1] as? String ?? "" }
    #expect(timer == Array(repeating: ["start", "stop_all"], count: stretches).flatMap { $0 }, "\(timer)")
  }

  /// Each recorded second is a point, even when the host cannot keep up with the board (here a
  /// simulated board at 300×, which asks for a synchronous commit every 3 ms): the loop catches
  /// up in time order instead of skipping seconds whose readings are waiting in its queue.
  @Test func everySecondOfTimerTimeHasItsPointUnderLoad() throws {
    let dir = ServiceDirectory()
    let original = try String(
      contentsOfFile: repositoryRoot + "/board/sim/rides/garmin-edge-500-2011-09-25.csv", encoding: .utf8)
    let lines = original.split(separator: "\n").filter { !$0.contains(",press,lap") }.prefix(1500)
    let ride = dir.path + "/short.csv"
    let end = Int(lines.last!.split(separator: ",")[0])! + 1
    try (lines.joined(separator: "\n") + "\n\(end),press,stop\n").write(toFile: ride, atomically: true, encoding: .utf8)
    let service = try ServiceProcess(dir, arguments: ["--speed", "300", "--ride", ride, "--exit-at-end"])
    #expect(try service.waitForExit(timeout: 120) == 0)
    let store = try WorkoutStore.openForReading(at: dir.database)
    let record = try #require(try store.session(id: 1))
    let summary = try #require(try store.summary(of: record))
    let points = try store.pointCount(sessionID: 1)
    print("under load: \(points) points for \(summary.totals.timer) s of timer time")
    #expect(abs(Double(points) - summary.totals.timer) <= 2)
    // No point carries another second's data: each point's elapsed time moves exactly as its
    // moment does (a point handled with the next second's readings would be a second ahead,
    // and the one after it would repeat them).
    let rows = try store.points(sessionID: 1)
    let skewed = zip(rows, rows.dropFirst()).filter { a, b in
      abs((b.elapsed - a.elapsed) - (b.monotonic - a.monotonic)) > 0.01
    }
    #expect(
      skewed.count == 0,
      "\(skewed.count) of \(rows.count) points: \(skewed.prefix(3).map { "\($0.0.seq)→\($0.1.seq)" })")
  }

  @Test func aRideWithNoStopPressEndsByItselfUnderExitAtEnd() throws {
    let dir = ServiceDirectory()
    let original = try String(
      contentsOfFile: repositoryRoot + "/board/sim/rides/garmin-edge-500-2011-09-25.csv", encoding: .utf8)
    let ride = dir.path + "/no-stop.csv"
    try
      (original.split(separator: "\n").prefix(600).filter { !$0.contains(",press,stop") }.joined(separator: "\n")
      + "\n").write(toFile: ride, atomically: true, encoding: .utf8)
    let service = try ServiceProcess(dir, arguments: ["--speed", "max", "--ride", ride, "--exit-at-end"])
    #expect(try service.waitForExit(timeout: 60) == 0, "\(service.log)")
    let store = try WorkoutStore.openForReading(at: dir.database)
    #expect(try store.session(id: 1)?.state == "ended")
    #expect(try store.session(id: 2) == nil, "one session")
  }

  @Test func aCorruptDatabaseIsMovedAsideAndRecordingGoesOn() throws {
    let dir = ServiceDirectory()
    try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: dir.database))
    let service = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try service.waitUntilReady()
    #expect(service.log.contains("failed its integrity check"))
    #expect(service.log.contains("moved it aside to \(dir.database).corrupt-"))
    let moved = try FileManager.default.contentsOfDirectory(atPath: dir.state).filter { $0.contains(".corrupt-") }
    #expect(moved.count == 1)
    try waitFor("recording", timeout: 60) { try service.status().points > 5 }
    service.signal(SIGTERM)
    try service.waitForExit()
  }

  /// A real full disk (a small tmpfs): an error event and one clear log line, no crash, the
  /// ride held in memory, and every second written once space returns.
  @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root (CI runs as root)"))
  func aFullDiskLosesNothingAndRecordingResumesWhenSpaceReturns() throws {
    let dir = ServiceDirectory()
    #expect(try run("/bin/mount", ["-t", "tmpfs", "-o", "size=6m", "tmpfs", dir.state]).status == 0)
    defer { _ = try? run("/bin/umount", ["-l", dir.state]) }
    let service = try ServiceProcess(dir, arguments: ["--speed", Self.speed])
    try service.waitUntilReady()
    try waitFor("recording", timeout: 60) { try service.status().points > 20 }

    let ballast = dir.state + "/ballast"
    _ = try run("/bin/dd", ["if=/dev/zero", "of=\(ballast)", "bs=64k"])
    try waitFor("the store to report the full disk", timeout: 60) { try service.status().storage.failing }
    let failing = try service.status()
    #expect(failing.storage.lastError?.contains("disk full") == true, "\(failing.storage.lastError ?? "")")
    #expect(service.log.contains("holding the ride in memory and retrying every second"))
    try waitFor("points to keep coming while the disk is full", timeout: 30) {
      try service.status().storage.pendingWrites > 20
    }
    #expect(service.process.isRunning)

    try FileManager.default.removeItem(atPath: ballast)
    try waitFor("the store to catch up", timeout: 60) {
      let status = try service.status()
      return !status.storage.failing && status.storage.pendingWrites == 0
    }
    #expect(service.log.contains("storage works again"))
    let status = try service.status()
    service.signal(SIGTERM)
    #expect(try service.waitForExit() == 0)

    let store = try WorkoutStore.openForReading(at: dir.database)
    #expect(try store.integrityCheck() == ["ok"])
    let points = try store.points(sessionID: status.sessionID!)
    #expect(points.map(\.seq) == Array(0..<points.count), "no second lost while the disk was full")
    #expect(points.count >= status.points)
    let kinds = try store.events(sessionID: status.sessionID!).map(\.kind)
    #expect(kinds.contains("storageFailing"))
    #expect(kinds.contains("storageRecovered"))
  }
}

/// Bad configuration: a clear error naming the file and key, and exit code 2.
@Suite(.serialized)
struct ConfigurationErrorTests {
  func runDaemon(config text: String?, extra: [String] = []) throws -> (status: Int32, output: String) {
    let dir = ServiceDirectory()
    var arguments = ["--state-dir", dir.state, "--runtime-dir", dir.runtime]
    if let text {
      let path = dir.path + "/workoutd.toml"
      try text.write(toFile: path, atomically: true, encoding: .utf8)
      arguments += ["--config", path]
    }
    return try run(binaryDirectory + "/workoutd", arguments + ["--check-config"] + extra)
  }

  @Test func aControlSocketGroupThatDoesNotExistIsAConfigurationError() throws {
    let result = try runDaemon(config: "[service]\ncontrol_socket_group = \"nosuchgroup\"\n")
    #expect(result.status == 2)
    #expect(result.output.contains(#"[service] control_socket_group names no group on this system ("nosuchgroup""#))
  }

  @Test func anUnknownKeyIsAnError() throws {
    let result = try runDaemon(config: "[session]\nactivty = \"running\"\n")
    #expect(result.status == 2)
    #expect(result.output.contains("[session] unknown key \"activty\""))
  }

  @Test func anUnknownSectionIsAnError() throws {
    let result = try runDaemon(config: "[sesion]\nactivity = \"running\"\n")
    #expect(result.status == 2)
    #expect(result.output.contains("unknown section [sesion]"))
  }

  @Test func aWrongValueIsAnError() throws {
    let result = try runDaemon(
      config: "[session]\nactivity = \"rowing\"\ncountdown_seconds = -1\n[sim]\nspeed = \"fast\"\n")
    #expect(result.status == 2)
    #expect(result.output.contains("[session] activity must be one of"))
    #expect(result.output.contains("[session] countdown_seconds must be between 0 and 60"))
    #expect(result.output.contains("[sim] speed must be a number or \"max\""))
  }

  @Test func malformedTOMLSaysWhere() throws {
    let result = try runDaemon(config: "[service]\nboard = \"sim\"\nlog_level = [\n")
    #expect(result.status == 2)
    #expect(result.output.contains("workoutd.toml:3:"))
  }

  @Test func checkConfigWithoutAFileSaysTheDefaultsAreUsed() throws {
    let result = try runDaemon(config: nil)
    #expect(result.status == 0)
    if FileManager.default.fileExists(atPath: "/etc/workoutd/workoutd.toml") {
      #expect(result.output.contains("configuration /etc/workoutd/workoutd.toml is valid"))
    } else {
      #expect(result.output.contains("no configuration file at /etc/workoutd/workoutd.toml: the defaults are used"))
      #expect(!result.output.contains("workoutd.toml is valid"))
    }
  }

  @Test func aMissingExplicitConfigIsAnError() throws {
    let result = try run(binaryDirectory + "/workoutd", ["--config", "/nonexistent/workoutd.toml", "--check-config"])
    #expect(result.status == 2)
    #expect(result.output.contains("/nonexistent/workoutd.toml: no such file"))
  }

  @Test func aBadFlagIsAnError() throws {
    let result = try runDaemon(config: nil, extra: ["--speed", "0"])
    #expect(result.status == 2)
  }

  @Test func aGoodConfigIsAccepted() throws {
    let result = try runDaemon(
      config: """
        [service]
        board = "sim"
        log_level = "debug"
        [session]
        activity = "running"
        countdown_seconds = 5
        [auto_pause]
        enabled = true
        stop_speed = 0.4
        resume_speed = 0.9
        [sim]
        speed = 60
        """)
    #expect(result.status == 0, "\(result.output)")
    #expect(result.output.contains("activity running"))
  }

  @Test func aBadRideFileSaysWhichLine() throws {
    let dir = ServiceDirectory()
    let ride = dir.path + "/bad.csv"
    try "# start: 2011-09-25T13:00:21Z\nt,kind,lat,lon,alt,speed,hr,cadence,temperature\n0,rec,91,0,,,,,\n".write(
      toFile: ride, atomically: true, encoding: .utf8)
    let result = try run(
      binaryDirectory + "/workoutd", ["--state-dir", dir.state, "--runtime-dir", dir.runtime, "--ride", ride])
    #expect(result.status == 2)
    #expect(result.output.contains("bad.csv:3: lat \"91\" is not a number in -90.0...90.0"))
    // Refused before anything is written: no database, no control socket.
    #expect(!FileManager.default.fileExists(atPath: dir.database))
    #expect(!FileManager.default.fileExists(atPath: dir.socket))
    // And --check-config says the same.
    let checked = try run(
      binaryDirectory + "/workoutd",
      ["--state-dir", dir.state, "--runtime-dir", dir.runtime, "--ride", ride, "--check-config"])
    #expect(checked.status == 2)
    #expect(checked.output.contains("bad.csv:3:"))
  }

  @Test func checkConfigChecksWhatStartUpWould() throws {
    let dir = ServiceDirectory()
    try #require(FileManager.default.createFile(atPath: dir.runtime, contents: Data()))
    let result = try run(
      binaryDirectory + "/workoutd",
      ["--state-dir", dir.state, "--runtime-dir", dir.runtime, "--ride", dir.path + "/missing.csv", "--check-config"])
    #expect(result.status == 2)
    #expect(result.output.contains("[service] runtime_directory \(dir.runtime) is a file, not a directory"))
    #expect(result.output.contains("cannot replay \(dir.path)/missing.csv"))
  }
}
