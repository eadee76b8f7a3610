import BLEFuzzChecks
import Foundation
import SensorProtocols
import Testing

/// The fuzz targets' checks (Tests/Fuzz/Checks) on their seed corpora (Tests/Fuzz/seeds/<target>)
/// and on any input a fuzzer once failed on (Tests/Fuzz/regressions/<target>, kept when fixed).
@Suite("Fuzz targets: their checks hold on the seeds and past failures")
struct BLEFuzzSeedTests {
  static let root: URL = {
    var url = URL(fileURLWithPath: #filePath)
    url.deleteLastPathComponent()
    url.deleteLastPathComponent()
    return url.appendingPathComponent("Fuzz")
  }()

  static func inputs(_ folder: String, _ target: String) -> [(String, [UInt8])] {
    let dir = root.appendingPathComponent(folder).appendingPathComponent(target)
    let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
    return names.sorted().compactMap { name in
      (try? Data(contentsOf: dir.appendingPathComponent(name))).map { (name, Array($0)) }
    }
  }

  @Test(arguments: FuzzChecks.targets.keys.sorted())
  func checksHold(target: String) throws {
    let check = try #require(FuzzChecks.targets[target])
    let seeds = Self.inputs("seeds", target)
    #expect(seeds.count >= 2, "\(target) has seeds")
    for (name, bytes) in seeds + Self.inputs("regressions", target) {
      #expect(check(bytes) == nil, "\(target)/\(name)")
    }
  }

  /// The seeds are values the decoders accept, so the fuzzers start inside every decoder.
  @Test func seedsDecode() throws {
    for (name, bytes) in Self.inputs("seeds", "fuzz-ble-heart-rate") {
      #expect(throws: Never.self, "\(name)") { try HeartRateMeasurement(payload: bytes) }
    }
    for (name, bytes) in Self.inputs("seeds", "fuzz-ble-cycling-power") {
      #expect(throws: Never.self, "\(name)") { try CyclingPowerMeasurement(payload: bytes) }
    }
    for (name, bytes) in Self.inputs("seeds", "fuzz-ble-csc") {
      #expect(throws: Never.self, "\(name)") { try CSCMeasurement(payload: bytes) }
    }
    for (name, bytes) in Self.inputs("seeds", "fuzz-att-pdu") {
      #expect(throws: Never.self, "\(name)") { try ATTPDU.decode(bytes.dropFirst(), mtu: 23 + Int(bytes[0])) }
    }
    // ANT's: streams of messages the stick's decoder reads, and pages every reader takes.
    for (name, bytes) in Self.inputs("seeds", "fuzz-ant-message") {
      var reader = ANTFrameReader()
      reader.append(bytes.dropFirst())
      var messages = 0
      while let output = reader.next() {
        guard case .message(let message) = output else { continue }
        messages += 1
        #expect(throws: Never.self, "\(name)") { try ANTStickMessage(message) }
      }
      #expect(messages >= 1, "\(name)")
    }
    for (name, bytes) in Self.inputs("seeds", "fuzz-ant-pages") {
      #expect((bytes.count - 1) % 9 == 0, "\(name) is whole pages")
      var power = ANTPowerReadings()
      for start in stride(from: 1, to: bytes.count - 8, by: 9) {
        let page = Array(bytes[(start + 1)..<(start + 9)])
        #expect(throws: Never.self, "\(name)") { try ANTHeartRatePage(payload: page) }
        #expect(throws: Never.self, "\(name)") { try power.update(page, at: Double(start)) }
      }
    }
    // gpsd's: a report of a class the service reads (or one it skips, a SKY), a time, a number.
    for (name, bytes) in Self.inputs("seeds", "fuzz-gpsd-json") {
      let text = String(decoding: bytes, as: UTF8.self)
      let report = bytes.withUnsafeBufferPointer {
        GPSDJSON.tpv(from: $0) != nil || GPSDJSON.device(from: $0) != nil || GPSDJSON.versionRelease(from: $0) != nil
          || GPSDJSON.errorMessage(from: $0) != nil || GPSDJSON.members(of: $0) != nil
      }
      #expect(report || GPSDJSON.parseTime(text) != nil || Double(text) != nil, "\(name)")
    }
  }
}
