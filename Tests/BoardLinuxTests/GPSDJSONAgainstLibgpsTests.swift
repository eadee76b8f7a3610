import CGPS
import Foundation
import SensorProtocols
import Testing
import WorkoutTestSupport

@testable import BoardLinux

/// The service decodes gpsd's JSON itself (`GPSDJSON`, through `GPSDConnection.decode`); these
/// tests hold it to libgps's own parser, `gps_unpack`, on every report line of gpsd's regression
/// captures and on edge cases, with one `gps_data_t` reused line after line as a libgps client
/// does. Run on bookworm (libgps 3.22) and in the trixie root (3.25) by `make test`.
@Suite("gpsd JSON decoded as libgps decodes it")
struct GPSDJSONAgainstLibgps {
  /// libgps's reading of one line: the TPV snapshot when it set STATUS_SET (TPVs only), the
  /// release when it set VERSION_SET.
  final class Libgps {
    let data: UnsafeMutablePointer<gps_data_t>

    init() {
      data = cgps_alloc()!
    }

    deinit { cgps_free(data) }

    enum Reading: Equatable {
      case tpv(TPVSnapshot)
      case version(String)
      case neither
    }

    func unpack(_ line: some StringProtocol) -> Reading {
      var bytes = Array(line.utf8).map { CChar(bitPattern: $0) }
      bytes.append(0)
      cgps_clear_set(data)
      _ = bytes.withUnsafeMutableBufferPointer { gps_unpack($0.baseAddress, data) }
      let set = cgps_set(data)
      if set & cgps_mask_status() != 0 {
        var raw = cgps_tpv()
        cgps_copy_tpv(data, &raw)
        return .tpv(Self.snapshot(raw))
      }
      if set & cgps_mask_version() != 0 { return .version(String(cString: cgps_version_release(data))) }
      return .neither
    }

    static func snapshot(_ raw: cgps_tpv) -> TPVSnapshot {
      TPVSnapshot(
        fields: fieldMask(raw.set), mode: Int(raw.mode), status: Int(raw.status),
        time: raw.time_sec != 0 || raw.time_nsec != 0
          ? GPSDTime(seconds: raw.time_sec, nanoseconds: raw.time_nsec) : nil,
        timeError: raw.ept, latitude: raw.latitude, longitude: raw.longitude,
        altitudeHAE: raw.alt_hae, altitudeMSL: raw.alt_msl, geoidSeparation: raw.geoid_sep,
        eph: raw.eph, epx: raw.epx, epy: raw.epy, epv: raw.epv, track: raw.track, speed: raw.speed,
        eps: raw.eps, climb: raw.climb, leapSeconds: Int(raw.leap_seconds))
    }

    static func fieldMask(_ set: UInt64) -> GPSDFieldMask {
      let bits: [(UInt64, GPSDFieldMask)] = [
        (cgps_mask_time(), .time), (cgps_mask_timerr(), .timeError), (cgps_mask_latlon(), .position),
        (cgps_mask_altitude(), .altitude), (cgps_mask_speed(), .speed), (cgps_mask_track(), .track),
        (cgps_mask_climb(), .climb), (cgps_mask_status(), .status), (cgps_mask_mode(), .mode),
        (cgps_mask_herr(), .horizontalError), (cgps_mask_verr(), .verticalError),
        (cgps_mask_speederr(), .speedError),
      ]
      var mask: GPSDFieldMask = []
      for (bit, field) in bits where set & bit != 0 { mask.insert(field) }
      return mask
    }
  }

  /// Ours, through the same entry the connection uses for each line it reads.
  static func ours(_ line: some StringProtocol) -> Libgps.Reading {
    let bytes = Array(line.utf8)
    switch bytes.withUnsafeBufferPointer({ GPSDConnection.decode($0) }) {
    case .tpv(let snapshot): return .tpv(snapshot)
    case .version(let release): return .version(release)
    default: return .neither
    }
  }

  static let captures: [String] = {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: GPSFake.fixtures)) ?? []
    return names.filter { $0.hasSuffix(".chk") }.sorted()
  }()

  @Test("every line of gpsd's regression captures", arguments: captures)
  func capture(_ name: String) throws {
    let text = try String(contentsOfFile: GPSFake.fixtures + "/" + name, encoding: .utf8)
    let libgps = Libgps()
    var tpvs = 0
    for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("{") {
      let theirs = libgps.unpack(line)
      #expect(Self.ours(line) == theirs, "\(name): \(line)")
      if case .tpv = theirs { tpvs += 1 }
    }
    #expect(tpvs > 0, "\(name) has no TPV")
  }

  @Test("the capture set is there (16 receivers)")
  func capturesPresent() {
    #expect(Self.captures.count >= 16)
  }

  /// Lines gpsd can send that the captures may not hold: every TPV member at once, escapes,
  /// exponents, a leap second, nanoseconds, members libgps ignores with nested values, and a
  /// greeting.
  static let edgeLines: [String] = [
    #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#,
    #"{"class":"VERSION","release":"3.25.1~dev","rev":"release-3.25","proto_major":3,"proto_minor":15}"#,
    #"{"class":"TPV","device":"/dev/ttyAMA0","status":2,"mode":3,"time":"2024-06-30T23:59:60.123456789Z","leapseconds":18,"ept":0.005,"lat":-33.123456789,"lon":151.987654321,"altHAE":12.5,"altMSL":-9.25,"alt":-9.25,"epx":1.5e0,"epy":2.25,"epv":3.5E+1,"track":359.99,"magtrack":1.0,"magvar":12.1,"speed":0.001,"climb":-0.5,"eps":0.02,"epc":0.3,"geoidSep":21.75,"eph":2.5,"sep":4.1,"ecefx":1.0,"ecefy":2.0,"ecefz":3.0,"ecefvx":0.0,"velN":0.1,"velE":0.2,"velD":-0.3}"#,
    #"{"class":"TPV","device":"\/dev\/ttyUSB0","mode":1}"#,
    #"{"class":"TPV","mode":0}"#,
    #"{"class":"TPV"}"#,
    #"{"class":"TPV","device":"/dev/ttyS0","mode":2,"time":"2019-04-06T23:57:24Z","lat":0,"lon":0,"speed":0}"#,
    #"{"class":"TPV","mode":3,"time":"2000-02-29T00:00:00.5Z","lat":89.999999,"lon":-179.999999,"altHAE":-400,"track":0}"#,
    #"{"class":"TPV","device":"/dev/pts/3","mode":3,"time":"2038-01-19T03:14:08.000Z","lat":1e-7,"lon":-1E-7,"eps":1.25e-2}"#,
    #"{"class":"TPV","mode":2,"lat":45.5,"lon":8.25,"time":"2023-01-01T00:00:00.000Z","ecef":{"x":1,"y":[1,2,{"z":3}]}}"#,
    #"{"class":"SKY","device":"/dev/ttyAMA0","satellites":[{"PRN":1,"el":45,"az":90,"ss":40,"used":true}]}"#,
    #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyAMA0","activated":"2024-01-01T00:00:00.000Z"}]}"#,
    #"{"class":"WATCH","enable":true,"json":true,"nmea":false,"raw":0,"scaled":false,"timing":false,"split24":false,"pps":false}"#,
  ]

  @Test("edge lines", arguments: edgeLines)
  func edge(_ line: String) {
    let libgps = Libgps()
    #expect(Self.ours(line) == libgps.unpack(line))
  }

  @Test("a TPV after a fuller one: nothing of the earlier report is carried over")
  func noCarryOver() {
    let libgps = Libgps()
    _ = libgps.unpack(Self.edgeLines[2])
    let sparse = #"{"class":"TPV","device":"/dev/ttyAMA0","mode":1}"#
    let theirs = libgps.unpack(sparse)
    #expect(Self.ours(sparse) == theirs)
    if case .tpv(let snapshot) = theirs {
      #expect(snapshot.latitude.isNaN)
      #expect(snapshot.time == nil)
    } else {
      Issue.record("libgps did not read a TPV")
    }
  }
}
