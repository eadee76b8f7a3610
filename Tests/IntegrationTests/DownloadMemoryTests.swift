import Foundation
import LinuxSupport
import Testing
import WorkoutControl
import WorkoutCore
import WorkoutStore
import WorkoutTestSupport

/// Issue 57: a ride's files and its page's JSON are made as they are sent, in constant memory
/// whatever the ride's length and the number of phones, and nothing is staged in the runtime
/// directory (/run, a tmpfs: RAM the service's RSS does not show).
@Suite(.serialized)
struct DownloadMemoryTests {
  /// The service's peak resident memory so far (VmHWM), KiB.
  static func peakKiB(of service: ServiceProcess) throws -> Int {
    let status = try String(contentsOfFile: "/proc/\(service.process.processIdentifier)/status", encoding: .utf8)
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
      let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
    else { throw TestFailure("no VmHWM in /proc/…/status") }
    return kib
  }

  /// The bytes of the files under `path` (the runtime directory).
  static func bytes(under path: String) -> Int {
    let files = FileManager.default.enumerator(atPath: path)?.compactMap { $0 as? String } ?? []
    return files.reduce(0) { total, file in
      let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + file)
      return total + ((attributes?[.size] as? Int) ?? 0)
    }
  }

  /// A GET's body on a connection of its own, its chunks joined; nil when the body ended
  /// without the last chunk (RFC 9112 §7.1: a download cut short).
  static func download(
    _ path: String, port: Int, headers: [String: String], from source: String
  ) throws -> (WebResponse, [UInt8]?) {
    let socket = try connect(from: source, port: port)
    var text = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    try socket.send(Array((text + "\r\n").utf8))
    var bytes: [UInt8] = []
    let deadline = SystemClocks.monotonic() + 300
    while true {
      let chunk = try socket.receive(maximum: 65536, deadline: deadline)
      if chunk.isEmpty { break }
      bytes += chunk
    }
    let end = try #require(bytes.firstRange(of: Array("\r\n\r\n".utf8)))
    let head = try readResponse(bytes: Array(bytes[..<end.upperBound]))
    guard head.headers["transfer-encoding"] == "chunked" else { return (head, Array(bytes[end.upperBound...])) }
    var body: [UInt8] = []
    var at = end.upperBound
    while let line = bytes[at...].firstRange(of: [13, 10]) {
      guard let size = Int(String(decoding: bytes[at..<line.lowerBound], as: UTF8.self), radix: 16) else { break }
      at = line.upperBound
      if size == 0 { return (head, bytes[at...].starts(with: [13, 10]) ? body : nil) }
      guard at + size + 2 <= bytes.count else { break }
      body += bytes[at..<at + size]
      at += size + 2
    }
    return (head, nil)
  }

  static func readResponse(bytes: [UInt8]) throws -> WebResponse {
    let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n")
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
      let parts = line.split(separator: ":", maxSplits: 1)
      if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
    }
    let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
    return WebResponse(status: status, headers: headers, body: "")
  }

  typealias Download = Result<(WebResponse, [UInt8]?), any Error>

  /// `count` GETs of `path` at once, each on a thread and a connection of its own, each from
  /// its own loopback address (16 phones: the server allows 6 connections per address).
  static func atOnce(_ count: Int, _ path: String, port: Int, headers: [String: String]) -> [Download] {
    let results = Shared([Download]())
    let group = DispatchGroup()
    for number in 0..<count {
      group.enter()
      Thread {
        let result = Result { try download(path, port: port, headers: headers, from: "127.0.0.\(2 + number)") }
        results.change { $0.append(result) }
        group.leave()
      }.start()
    }
    group.wait()
    return results.value
  }

  @Test(
    .disabled(
      if: ProcessInfo.processInfo.environment["WORKOUTD_TEST_QEMU_USER"] != nil,
      "qemu-user (make test-arm64) shows the emulator's resident memory, not the service's, and its 64 emulated downloads of a 12-hour ride outlast their 300 s"
    ))
  func sixteenDownloadsOfEachFormatOfATwelveHourRideAtOnceAddLittleMemory() throws {
    let web = try WebService(speed: "2") { dir in try dir.record(EngineHarness.twelveHourRide()) }
    try waitFor("the ride to run", timeout: 60) { try web.service.status().state == .running }
    let token = try web.pair()
    // The exporter's files, to compare with.
    let out = web.dir.path + "/exported"
    let exported = try web.ctl(["export", "1", "--format", "fit,gpx,tcx,csv", "--out", out])
    #expect(exported.status == 0, "\(exported.output)")
    let names = try FileManager.default.contentsOfDirectory(atPath: out)

    // The runtime directory's size, sampled while the downloads run.
    let stagedPeak = Shared(0)
    let sampling = Shared(true)
    let runtime = web.dir.runtime
    let sampler = Thread {
      while sampling.value {
        let now = Self.bytes(under: runtime)
        stagedPeak.change { $0 = max($0, now) }
        usleep(5000)
      }
    }
    sampler.start()
    var pointsBefore = try web.service.status().engine.points
    let before = try Self.peakKiB(of: web.service)
    for format in ["fit", "gpx", "tcx", "csv"] {
      let name = try #require(names.first { $0.hasSuffix("." + format) })
      let file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: out + "/" + name)))
      let results = Self.atOnce(16, "/api/sessions/1/file.\(format)", port: web.port, headers: web.cookie(token))
      for result in results {
        let (head, body) = try result.get()
        #expect(head.status == 200 && head.headers["content-disposition"] == "attachment; filename=\"\(name)\"")
        #expect(body?.count == file.count, "\(format): a whole download, as the exporter's file")
        // (Compared first, so that a failure says so in a line, not with 20 MB of bytes.)
        let same = body == file
        #expect(same, "\(format): the exporter's bytes")
      }
      let points = try web.service.status().engine.points
      #expect(points > pointsBefore, "recording goes on during the downloads of \(format)")
      pointsBefore = points
      print(
        "\(format): \(file.count) bytes, 16 at once; peak RSS \(before) -> \(try Self.peakKiB(of: web.service)) KiB")
    }
    sampling.change { $0 = false }
    // A loose bound on what the downloads add to this debug build's peak (35 MiB before any;
    // 5.2 MiB added measured, 25.7 when all 16 were made at once). The target, the release
    // build's peak under 32 MiB, is measured by `make bench` (Benchmarks/downloads.py).
    let peak = try Self.peakKiB(of: web.service)
    #expect(peak - before < 12 * 1024, "peak RSS \(before) -> \(peak) KiB")
    let staged = stagedPeak.value
    #expect(staged < 64 * 1024, "the runtime directory held \(staged) bytes during the downloads")

    // The ride page's JSON: every event (500 notes, the auto-pauses, the laps) and 600 samples.
    let rides = Self.atOnce(16, "/api/sessions/1", port: web.port, headers: web.cookie(token))
    for result in rides {
      let (head, body) = try result.get()
      #expect(head.status == 200 && (body?.count ?? 0) > 100_000, "\(head)")
      #expect((body?.count ?? .max) < 1024 * 1024, "the ride's JSON is \(body?.count ?? -1) bytes")
    }
    let rideJSON = try rides[0].get().1?.count ?? -1
    let peakAfterJSON = try Self.peakKiB(of: web.service)
    print(
      "ride JSON: \(rideJSON) bytes, 16 at once; peak RSS \(peak) -> \(peakAfterJSON) KiB; /run held \(staged) bytes")
    #expect(peakAfterJSON - peak < 4 * 1024, "peak RSS \(peak) -> \(peakAfterJSON) KiB for the ride's JSON")
    #expect(try web.service.status().engine.points > pointsBefore, "recording goes on")
  }
}

/// A value threads share, behind a lock.
final class Shared<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var stored: Value
  init(_ value: Value) { stored = value }
  var value: Value { lock.withLock { stored } }
  func change(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}
