import SensorProtocols
import WorkoutWeb

/// The properties the fuzz targets check on every input, one function per target. Each
/// returns nil when the input is fine, or what went wrong; the fuzz targets (Tests/Fuzz/*)
/// trap on it so libFuzzer keeps the input, and SensorProtocolsTests runs the same checks on
/// the seed corpora (Tests/Fuzz/seeds). A decoder that traps fails here by itself.
public enum FuzzChecks {
  public static let targets: [String: @Sendable ([UInt8]) -> String?] = [
    "fuzz-ble-heart-rate": heartRate, "fuzz-ble-cycling-power": cyclingPower, "fuzz-ble-csc": csc,
    "fuzz-ble-readables": readables, "fuzz-ble-revolutions": revolutions, "fuzz-att-pdu": att,
    "fuzz-ble-scan": scan, "fuzz-http-request": httpRequest, "fuzz-gpsd-json": gpsdJSON,
    "fuzz-ant-message": antMessage, "fuzz-ant-pages": antPages,
  ]

  /// The web server's request parser (not BLE, but the same kind of untrusted bytes): the first
  /// byte chooses where the rest is split in two, as two reads from a socket would split it;
  /// both ways give the same requests and the same verdict, never a trap; a request's field
  /// names are lower-case and its body within the limit.
  public static func httpRequest(_ bytes: [UInt8]) -> String? {
    guard let selector = bytes.first else { return nil }
    let input = Array(bytes.dropFirst())
    func parse(_ pieces: [[UInt8]]) -> ([HTTPRequest], HTTPParseError?) {
      var parser = HTTPRequestParser(headerLimit: 512, bodyLimit: 256)
      var requests: [HTTPRequest] = []
      for piece in pieces {
        parser.append(piece)
        do {
          while let request = try parser.next() { requests.append(request) }
        } catch {
          return (requests, error)
        }
      }
      return (requests, nil)
    }
    let whole = parse([input])
    let cut = input.isEmpty ? 0 : Int(selector) % (input.count + 1)
    let split = parse([Array(input[..<cut]), Array(input[cut...])])
    guard whole.0 == split.0 else { return "split at \(cut): \(split.0.count) requests, whole: \(whole.0.count)" }
    // Split, an over-long header can be refused before its end arrives; otherwise the same.
    if whole.1 != split.1, !(split.1.map { if case .headerTooLarge = $0 { true } else { false } } ?? false) {
      return "split at \(cut): \(String(describing: split.1)), whole: \(String(describing: whole.1))"
    }
    for request in whole.0 {
      if request.headers.contains(where: { $0.name != $0.name.lowercased() }) { return "a field name not lower-cased" }
      if request.body.count > 256 { return "a body over the limit" }
    }
    return nil
  }

  /// A decoded measurement encodes back to a value that decodes to the same measurement, of
  /// the same length when no reserved flag bit allowed trailing bytes.
  public static func heartRate(_ bytes: [UInt8]) -> String? {
    guard let m = try? HeartRateMeasurement(payload: bytes) else { return nil }
    guard let again = try? HeartRateMeasurement(payload: m.payload), again == m else {
      return "HR re-encoding \(m.payload) does not decode to \(m)"
    }
    if m.reservedFlags == 0 && m.payload.count != bytes.count { return "HR length \(m.payload.count)" }
    if m.rrIntervalsSeconds.count != m.rrIntervals.count || m.rrIntervalsMilliseconds.contains(where: { !($0 >= 0) }) {
      return "HR RR conversion"
    }
    return nil
  }

  public static func cyclingPower(_ bytes: [UInt8]) -> String? {
    guard let m = try? CyclingPowerMeasurement(payload: bytes) else { return nil }
    guard let again = try? CyclingPowerMeasurement(payload: m.payload), again == m else {
      return "CP re-encoding \(m.payload) does not decode to \(m)"
    }
    if m.reservedFlags == 0 && m.payload.count != bytes.count { return "CP length \(m.payload.count)" }
    if m.wheel != nil && m.wheel?.eventTimeUnit != .oneOver2048 { return "CP wheel time unit" }
    return nil
  }

  public static func csc(_ bytes: [UInt8]) -> String? {
    guard let m = try? CSCMeasurement(payload: bytes) else { return nil }
    guard let again = try? CSCMeasurement(payload: m.payload), again == m else {
      return "CSC re-encoding \(m.payload) does not decode to \(m)"
    }
    if m.reservedFlags == 0 && m.payload.count != bytes.count { return "CSC length \(m.payload.count)" }
    if m.wheel != nil && m.wheel?.eventTimeUnit != .oneOver1024 { return "CSC wheel time unit" }
    return nil
  }

  /// The first byte picks the characteristic, the rest is its value; what decodes encodes back
  /// to the same bytes.
  public static func readables(_ bytes: [UInt8]) -> String? {
    guard let selector = bytes.first else { return nil }
    let value = Array(bytes.dropFirst())
    let encoded: [UInt8]?
    switch selector % 4 {
    case 0:
      let level = try? BatteryLevel(payload: value)
      if let level, level.percent > 100 { return "battery \(level.percent)" }
      encoded = level?.payload
    case 1: encoded = (try? BodySensorLocation(payload: value))?.payload
    case 2: encoded = (try? CSCFeature(payload: value))?.payload
    default: encoded = (try? CyclingPowerFeature(payload: value))?.payload
    }
    if let encoded, encoded != value { return "readable \(selector % 4) re-encodes as \(encoded)" }
    return nil
  }

  /// 8-byte records (uint32 revolutions, uint16 event time, uint16 milliseconds since the last
  /// record) through a wheel (CSC or CP time unit by the first byte) and a crank calculator:
  /// every value is finite, positive and within the limits.
  public static func revolutions(_ bytes: [UInt8]) -> String? {
    guard let first = bytes.first else { return nil }
    let unit: EventTimeUnit = first & 1 == 0 ? .oneOver1024 : .oneOver2048
    let circumference = 0.1 + Double(first >> 1) * 0.03
    guard var wheel = WheelSpeedCalculator(circumference: circumference, stoppedAfter: 3),
      var crank = CrankCadenceCalculator(stoppedAfter: 4)
    else { return "calculator refused circumference \(circumference)" }
    var now = 0.0
    var i = 1
    while i + 8 <= bytes.count {
      func u16(_ j: Int) -> UInt16 { UInt16(bytes[j]) | UInt16(bytes[j + 1]) << 8 }
      let revolutions = UInt32(u16(i)) | UInt32(u16(i + 2)) << 16
      let time = u16(i + 4)
      now += Double(u16(i + 6)) / 1000
      i += 8
      let w = wheel.update(
        WheelRevolutionData(cumulativeRevolutions: revolutions, lastEventTime: time, eventTimeUnit: unit), at: now)
      if case .value(let speed) = w, !(speed > 0 && speed <= WheelSpeedCalculator.maximumSpeed) {
        return "wheel speed \(speed)"
      }
      let c = crank.update(
        CrankRevolutionData(cumulativeRevolutions: UInt16(truncatingIfNeeded: revolutions), lastEventTime: time),
        at: now)
      if case .value(let rpm) = c, !(rpm > 0 && rpm <= CrankCadenceCalculator.maximumCadence) {
        return "cadence \(rpm)"
      }
    }
    return nil
  }

  /// The first byte sets the ATT_MTU (23…278), the rest is a PDU. What decodes encodes back to
  /// a PDU that decodes the same, never longer than the input (16-bit UUIDs sent in full come
  /// back short); service and characteristic declarations parse or throw.
  public static func att(_ bytes: [UInt8]) -> String? {
    guard let selector = bytes.first else { return nil }
    let mtu = 23 + Int(selector)
    let pdu = Array(bytes.dropFirst())
    guard let decoded = try? ATTPDU.decode(pdu, mtu: mtu) else { return nil }
    let encoded = decoded.encode()
    guard encoded.count <= pdu.count else { return "ATT \(decoded) re-encodes longer: \(encoded)" }
    guard let again = try? ATTPDU.decode(encoded, mtu: mtu), again == decoded else {
      return "ATT \(decoded) re-encodes as \(encoded), which does not decode the same"
    }
    switch decoded {
    case .readByGroupTypeResponse(let groups):
      for group in groups { _ = try? GATTService(group) }
    case .readByTypeResponse(let entries):
      for entry in entries {
        if let declaration = try? GATTCharacteristicDeclaration(entry),
          declaration.value.count > entry.value.count
        {
          return "declaration re-encodes longer"
        }
      }
    default: break
    }
    return nil
  }

  /// The kernel's management packets (a Device Found carries advertising data) and advertising
  /// data by itself: decoding never traps; advertising data reads the same with zero padding
  /// after it (the early termination of Core v5.4 Vol 3 Part C 11); services never repeat.
  public static func scan(_ bytes: [UInt8]) -> String? {
    let data = AdvertisingData(bytes)
    if Set(data.services).count != data.services.count { return "repeated services in \(data.services)" }
    if !data.truncated, AdvertisingData(bytes + [0, 0, 0]) != data { return "zero padding changed \(data)" }
    if case .deviceFound(let found)? = (try? Management.decode(bytes))?.event {
      if Set(found.advertising.services).count != found.advertising.services.count { return "repeated services" }
    }
    _ = Management.controllerIndexes(bytes)
    _ = Management.controllerInformation(bytes)
    return nil
  }
}
