import SensorProtocols
import Testing

@testable import BoardLinux

/// `GPSDConnection.decode` tells a report's class by its bytes (no String a line): each class it
/// reads, where gpsd writes it (first) and where another writer might (later in the object).
@Suite("gpsd report classes told apart by their bytes")
struct GPSDReportClassTests {
  static func decode(_ line: String) -> GPSDMessage {
    Array(line.utf8).withUnsafeBufferPointer { GPSDConnection.decode($0) }
  }

  @Test("each class read, first or later in the object")
  func classes() {
    for line in [
      #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#,
      #"{"release":"3.22","class":"VERSION","proto_major":3,"proto_minor":14}"#,
    ] {
      guard case .version("3.22") = Self.decode(line) else {
        Issue.record("not a VERSION: \(line)")
        continue
      }
    }
    for line in [
      #"{"class":"TPV","device":"/dev/ttyS0","mode":3,"time":"2024-05-01T10:00:00.000Z","lat":57.1,"lon":9.9}"#,
      #"{"mode":3,"class":"TPV","time":"2024-05-01T10:00:00.000Z","lat":57.1,"lon":9.9}"#,
    ] {
      guard case .tpv(let snapshot) = Self.decode(line) else {
        Issue.record("not a TPV: \(line)")
        continue
      }
      #expect(snapshot.latitude == 57.1)
    }
    guard
      case .device(let device) = Self.decode(
        #"{"class":"DEVICE","path":"/dev/ttyS0","activated":"2024-05-01T10:00:00.000Z"}"#)
    else {
      Issue.record("not a DEVICE")
      return
    }
    #expect(device.activated == true)
    #expect(device.path == "/dev/ttyS0")
    let devices =
      #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/a"},{"class":"DEVICE","path":"/dev/b"}]}"#
    guard case .devices(count: 2) = Self.decode(devices) else {
      Issue.record("not two DEVICES")
      return
    }
    guard case .error("unknown command") = Self.decode(#"{"class":"ERROR","message":"unknown command"}"#) else {
      Issue.record("not an ERROR")
      return
    }
  }

  @Test(
    "other classes, names that only start like one read, and lines that are no report",
    arguments: [
      #"{"class":"SKY","device":"/dev/ttyS0","satellites":[]}"#, #"{"class":"WATCH","enable":true}"#,
      #"{"class":"TPVX","mode":3}"#, #"{"class":"TP","mode":3}"#, #"{"class":"DEVICESS"}"#,
      #"{"class":"tpv","mode":3}"#, #"{"class":"","mode":3}"#, #"{"mode":3}"#, "not json", "",
    ])
  func others(_ line: String) {
    guard case .other = Self.decode(line) else {
      Issue.record("read as a report: \(line)")
      return
    }
  }
}
