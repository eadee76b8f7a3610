import Testing

@testable import SensorProtocols

/// A heart-rate strap's attribute database as the PDUs below describe it (handles as a Polar or
/// Garmin strap lays them out): 0x0001–0x0007 GAP, 0x0008–0x000B GATT, 0x000C–0x0013 Heart Rate
/// (0x000D declares 0x2A37 with its value at 0x000E and CCCD at 0x000F; 0x0010 declares 0x2A38
/// at 0x0011; 0x0012 declares 0x2A39 at 0x0013), 0x0014–0x0017 Battery, 0x0018–0xFFFF Cycling Power.
@Suite("ATT PDUs: a GATT client's conversation with a strap, byte by byte")
struct ATTPDUTests {
  func decode(_ hex: String, mtu: Int = 23) throws -> ATTPDU {
    try ATTPDU.decode(hexBytes(hex), mtu: mtu)
  }

  @Test func exchangeMTU() throws {
    let request = ATTPDU.exchangeMTURequest(clientRxMTU: 247)
    #expect(request.encode() == hexBytes("02 f7 00"))
    #expect(try decode("03 b9 00") == .exchangeMTUResponse(serverRxMTU: 185))
    #expect(ATTMTU.negotiated(client: 247, server: 185) == 185)
    #expect(ATTMTU.negotiated(client: 247, server: 23) == 23)
    // A server answering below the minimum leaves the default (Vol 3 Part F §3.4.2.2).
    #expect(ATTMTU.negotiated(client: 247, server: 10) == 23)
  }

  @Test func primaryServiceDiscovery() throws {
    let first = ATTPDU.readByGroupTypeRequest(.all, groupType: .primaryService)
    #expect(first.encode() == hexBytes("10 01 00 ff ff 00 28"))
    // At ATT_MTU 23, three 6-byte entries fit: GAP, GATT, Heart Rate.
    let page1 = try decode("11 06 01 00 07 00 00 18 08 00 0b 00 01 18 0c 00 13 00 0d 18")
    guard case .readByGroupTypeResponse(let groups1) = page1 else {
      Issue.record("\(page1)")
      return
    }
    let services1 = try groups1.map { group throws(ATTCodecError) in try GATTService(group) }
    #expect(services1.map(\.uuid) == [.genericAccess, .genericAttribute, .heartRateService])
    #expect(services1[2].handles == ATTHandleRange(start: 0x000C, end: 0x0013))
    // The next request starts after the last group's end.
    let second = ATTPDU.readByGroupTypeRequest(ATTHandleRange(start: 0x0014, end: 0xFFFF)!, groupType: .primaryService)
    #expect(second.encode() == hexBytes("10 14 00 ff ff 00 28"))
    let page2 = try decode("11 06 14 00 17 00 0f 18 18 00 ff ff 18 18")
    guard case .readByGroupTypeResponse(let groups2) = page2 else {
      Issue.record("\(page2)")
      return
    }
    let services2 = try groups2.map { group throws(ATTCodecError) in try GATTService(group) }
    #expect(services2.map(\.uuid) == [.batteryService, .cyclingPowerService])
    #expect(services2.map(\.uuid.uuid16) == [0x180F, 0x1818])
    // The last group ended at 0xFFFF: discovery is over. A server says so with an error too.
    #expect(
      try decode("01 10 19 00 0a")
        == .errorResponse(request: 0x10, handle: 0x0019, error: .attributeNotFound))
  }

  @Test func a128BitService() throws {
    // Polar's measurement data service, FB005C80-02E7-F387-1CAD-8ACD2D8DF0C8, little-endian.
    let pdu = try decode("11 14 20 00 2a 00 c8 f0 8d 2d cd 8a ad 1c 87 f3 e7 02 80 5c 00 fb")
    guard case .readByGroupTypeResponse(let groups) = pdu, let group = groups.first else {
      Issue.record("\(pdu)")
      return
    }
    let service = try GATTService(group)
    #expect(service.uuid == BluetoothUUID("FB005C80-02E7-F387-1CAD-8ACD2D8DF0C8"))
    #expect(service.uuid.uuid16 == nil)
    #expect(service.uuid.description == "FB005C80-02E7-F387-1CAD-8ACD2D8DF0C8")
    #expect(pdu.encode() == hexBytes("11 14 20 00 2a 00 c8 f0 8d 2d cd 8a ad 1c 87 f3 e7 02 80 5c 00 fb"))
  }

  @Test func characteristicDiscovery() throws {
    let request = ATTPDU.readByTypeRequest(ATTHandleRange(start: 0x000C, end: 0x0013)!, type: .characteristic)
    #expect(request.encode() == hexBytes("08 0c 00 13 00 03 28"))
    // Three 7-byte declarations: 2 + 21 = 23 bytes, exactly the default ATT_MTU.
    let pdu = try decode("09 07 0d 00 10 0e 00 37 2a 10 00 02 11 00 38 2a 12 00 08 13 00 39 2a")
    guard case .readByTypeResponse(let entries) = pdu else {
      Issue.record("\(pdu)")
      return
    }
    let declarations = try entries.map { entry throws(ATTCodecError) in try GATTCharacteristicDeclaration(entry) }
    #expect(
      declarations == [
        .init(handle: 0x000D, properties: .notify, valueHandle: 0x000E, uuid: .heartRateMeasurement),
        .init(handle: 0x0010, properties: .read, valueHandle: 0x0011, uuid: .bodySensorLocation),
        .init(handle: 0x0012, properties: .write, valueHandle: 0x0013, uuid: BluetoothUUID(0x2A39)),
      ])
    #expect(declarations.map(\.value) == entries.map(\.value))
    // A value handle that is not after the declaration, or a declaration of the wrong size.
    #expect(throws: ATTCodecError.self) {
      try GATTCharacteristicDeclaration(ATTHandleValue(handle: 0x000D, value: hexBytes("10 0d 00 37 2a")))
    }
    #expect(throws: ATTCodecError.self) {
      try GATTCharacteristicDeclaration(ATTHandleValue(handle: 0x000D, value: hexBytes("10 0e 00 37")))
    }
  }

  @Test func findTheCCCDAndEnableNotifications() throws {
    let find = ATTPDU.findInformationRequest(ATTHandleRange(start: 0x000F, end: 0x000F)!)
    #expect(find.encode() == hexBytes("04 0f 00 0f 00"))
    #expect(
      try decode("05 01 0f 00 02 29")
        == .findInformationResponse([ATTHandleUUID(handle: 0x000F, uuid: .clientCharacteristicConfiguration)]))
    let enable = ATTPDU.writeRequest(handle: 0x000F, value: ClientCharacteristicConfiguration.notifications.value)
    #expect(enable.encode() == hexBytes("12 0f 00 01 00"))
    #expect(ClientCharacteristicConfiguration.indications.value == [0x02, 0x00])
    #expect(try decode("13") == .writeResponse)
  }

  @Test func notificationsIndicationsAndReads() throws {
    let notification = try decode("1b 0e 00 16 42 18 04 70 01")
    guard case .handleValueNotification(0x000E, let value) = notification else {
      Issue.record("\(notification)")
      return
    }
    #expect(try HeartRateMeasurement(payload: value).rrIntervals == [1048, 368])
    #expect(
      try decode("1d 20 00 00 00 64 00") == .handleValueIndication(handle: 0x0020, value: hexBytes("00 00 64 00")))
    #expect(ATTPDU.handleValueConfirmation.encode() == [0x1E])
    #expect(ATTPDU.readRequest(handle: 0x0016).encode() == hexBytes("0a 16 00"))
    #expect(try decode("0b 5a") == .readResponse(value: [0x5A]))
    #expect(try BatteryLevel(payload: [0x5A]).percent == 90)
    // An empty value is a value.
    #expect(try decode("0b") == .readResponse(value: []))
    #expect(try decode("1b 0e 00") == .handleValueNotification(handle: 0x000E, value: []))
  }

  @Test func errorResponsesNameTheirCodes() throws {
    #expect(
      try decode("01 12 0f 00 05") == .errorResponse(request: 0x12, handle: 0x000F, error: .insufficientAuthentication))
    #expect(try decode("01 02 00 00 06") == .errorResponse(request: 0x02, handle: 0, error: .requestNotSupported))
    #expect(ATTErrorCode(rawValue: 0x0A).description == "Attribute Not Found (0x0A)")
    #expect(ATTErrorCode(rawValue: 0x13) == .valueNotAllowed)
    #expect(ATTErrorCode(rawValue: 0x81) == .application(0x81))
    #expect(ATTErrorCode(rawValue: 0xFD).description.contains("Improperly Configured"))
    #expect(ATTErrorCode(rawValue: 0x00) == .reserved(0))
    #expect(ATTErrorCode(rawValue: 0x14) == .reserved(0x14))
    for raw in UInt8.min...UInt8.max { #expect(ATTErrorCode(rawValue: raw).rawValue == raw) }
  }

  @Test func malformedPDUsAreRejected() {
    let cases: [(String, Int, ATTCodecError)] = [
      ("", 23, .empty),
      ("1b 0e 00 " + Array(repeating: "00", count: 21).joined(separator: " "), 23, .exceedsMTU(length: 24, mtu: 23)),
      ("ff", 23, .unsupportedOpcode(0xFF)),
      ("0c 0e 00 00 00", 23, .unsupportedOpcode(0x0C)),  // Read Blob: not decoded here
      ("02 17", 23, .invalidLength(.exchangeMTURequest, length: 2)),
      ("03 17 00 00", 23, .invalidLength(.exchangeMTUResponse, length: 4)),
      ("01 10 19 00", 23, .invalidLength(.errorResponse, length: 4)),
      ("13 00", 23, .invalidLength(.writeResponse, length: 2)),
      ("1e 00", 23, .invalidLength(.handleValueConfirmation, length: 2)),
      ("0a 19", 23, .invalidLength(.readRequest, length: 2)),
      ("1b 0e", 23, .invalidLength(.handleValueNotification, length: 2)),
      ("08 01 00 ff ff 00 28 00", 23, .invalidLength(.readByTypeRequest, length: 8)),
      ("1b 00 00 01", 23, .invalidHandle(.handleValueNotification)),
      ("0a 00 00", 23, .invalidHandle(.readRequest)),
      ("12 00 00 01 00", 23, .invalidHandle(.writeRequest)),
      ("04 00 00 ff ff", 23, .invalidHandle(.findInformationRequest)),
      ("04 05 00 04 00", 23, .invalidHandleRange(.findInformationRequest, start: 5, end: 4)),
      ("05 03 0f 00 02 29", 23, .invalidFormat(3)),
      ("05 01", 23, .entriesDoNotDivide(.findInformationResponse, entryLength: 4, dataLength: 0)),
      ("05 01 0f 00 02", 23, .entriesDoNotDivide(.findInformationResponse, entryLength: 4, dataLength: 3)),
      ("05 02 0f 00 02 29", 23, .entriesDoNotDivide(.findInformationResponse, entryLength: 18, dataLength: 4)),
      ("05 01 00 00 02 29", 23, .invalidHandle(.findInformationResponse)),
      ("05 01 0f 00 02 29 0e 00 03 29", 23, .handlesNotAscending(.findInformationResponse)),
      ("09 07 0d 00 10 0e 00 37 2a 0f 00", 23, .entriesDoNotDivide(.readByTypeResponse, entryLength: 7, dataLength: 9)),
      ("09 00 0d 00", 23, .invalidEntryLength(.readByTypeResponse, length: 0)),
      ("09 01 0d 00", 23, .invalidEntryLength(.readByTypeResponse, length: 1)),
      ("09", 23, .invalidLength(.readByTypeResponse, length: 1)),
      ("11 06", 23, .entriesDoNotDivide(.readByGroupTypeResponse, entryLength: 6, dataLength: 0)),
      ("11 03 01 00 07", 23, .invalidEntryLength(.readByGroupTypeResponse, length: 3)),
      ("11 06 08 00 07 00 00 18", 23, .invalidHandleRange(.readByGroupTypeResponse, start: 8, end: 7)),
      ("11 06 01 00 07 00 00 18 05 00 0b 00 01 18", 23, .handlesNotAscending(.readByGroupTypeResponse)),
      ("11 06 00 00 07 00 00 18", 23, .invalidHandle(.readByGroupTypeResponse)),
    ]
    for (hex, mtu, error) in cases {
      #expect(throws: error, "\(hex)") { try ATTPDU.decode(hexBytes(hex), mtu: mtu) }
    }
    // The same notification fits a larger MTU.
    #expect(throws: Never.self) {
      try ATTPDU.decode(hexBytes("1b 0e 00 " + Array(repeating: "00", count: 21).joined(separator: " ")), mtu: 24)
    }
  }

  @Test func everyPDURoundTrips() throws {
    let pmd = try #require(BluetoothUUID("FB005C80-02E7-F387-1CAD-8ACD2D8DF0C8"))
    let pdus: [ATTPDU] = [
      .errorResponse(request: 0x08, handle: 0x0014, error: .attributeNotFound),
      .errorResponse(request: 0x12, handle: 0x000F, error: .commonProfile(0xFD)),
      .exchangeMTURequest(clientRxMTU: 517), .exchangeMTUResponse(serverRxMTU: 23),
      .findInformationRequest(.all),
      .findInformationResponse([.init(handle: 0x000F, uuid: .clientCharacteristicConfiguration)]),
      .findInformationResponse([.init(handle: 0x0030, uuid: pmd)]),
      .readByTypeRequest(.all, type: .characteristic), .readByTypeRequest(.all, type: pmd),
      .readByTypeResponse([.init(handle: 0x000D, value: hexBytes("10 0e 00 37 2a"))]),
      .readRequest(handle: 0x0016), .readResponse(value: [0x5A]), .readResponse(value: []),
      .readByGroupTypeRequest(.all, groupType: .primaryService),
      .readByGroupTypeResponse([.init(handle: 1, endGroupHandle: 7, value: hexBytes("00 18"))]),
      .writeRequest(handle: 0x000F, value: [1, 0]), .writeResponse, .writeCommand(handle: 0x0013, value: [1]),
      .handleValueNotification(handle: 0x000E, value: hexBytes("06 3c")),
      .handleValueIndication(handle: 0x0020, value: []), .handleValueConfirmation,
    ]
    for pdu in pdus {
      #expect(try ATTPDU.decode(pdu.encode(), mtu: 517) == pdu, "\(pdu)")
      #expect(pdu.encode().first == pdu.opcode.rawValue)
    }
    #expect(throws: ATTCodecError.exceedsMTU(length: 26, mtu: 23)) {
      try ATTPDU.writeRequest(handle: 1, value: Array(repeating: 0, count: 23)).encode(mtu: 23)
    }
  }

  @Test func listResponsesEncodeOnlyEntriesOfTheFirstLength() throws {
    // As a server does: a 128-bit service after 16-bit ones waits for the next request.
    let pdu = ATTPDU.readByGroupTypeResponse([
      .init(handle: 1, endGroupHandle: 7, value: hexBytes("00 18")),
      .init(handle: 0x20, endGroupHandle: 0x2A, value: BluetoothUUID.heartRateService.attBytes128),
    ])
    #expect(pdu.encode() == hexBytes("11 06 01 00 07 00 00 18"))
  }

  @Test func findInformationResponsesWithA128BitUUIDSendAllInFull() throws {
    let pmd = try #require(BluetoothUUID("FB005C80-02E7-F387-1CAD-8ACD2D8DF0C8"))
    let pdu = ATTPDU.findInformationResponse([
      .init(handle: 0x0030, uuid: .clientCharacteristicConfiguration), .init(handle: 0x0031, uuid: pmd),
    ])
    let bytes = pdu.encode()
    #expect(bytes.count == 2 + 2 * 18)
    #expect(bytes[1] == 0x02)
    #expect(try ATTPDU.decode(bytes, mtu: 64) == pdu)
  }

  @Test func whatToAnswerAPDUThisCodecDoesNotDecode() {
    #expect(ATTOpcode.needsAnswer(0x0C))  // Read Blob Request: Error Response "Request Not Supported"
    #expect(ATTOpcode.needsAnswer(0x3F))  // an unknown opcode without the command flag
    #expect(!ATTOpcode.needsAnswer(0x52))  // Write Command
    #expect(!ATTOpcode.needsAnswer(0xD2))  // Signed Write Command
    #expect(!ATTOpcode.needsAnswer(0x7F))  // an unknown command: ignored
    #expect(!ATTOpcode.needsAnswer(0x23))  // Multiple Handle Value Notification
    #expect(!ATTOpcode.needsAnswer(0x0D))  // a response
  }
}

@Suite("Bluetooth UUIDs: 16-bit and 128-bit, the Base UUID")
struct BluetoothUUIDTests {
  @Test func shortAndLongForms() throws {
    let hr = BluetoothUUID(0x180D)
    #expect(hr.uuid16 == 0x180D)
    #expect(hr.description == "0x180D")
    #expect(hr.attBytes == [0x0D, 0x18])
    #expect(BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB") == hr)
    #expect(BluetoothUUID("0000180d-0000-1000-8000-00805f9b34fb") == hr)
    #expect(BluetoothUUID("180D") == hr)
    #expect(BluetoothUUID("0x2a37") == .heartRateMeasurement)
    #expect(
      hr.attBytes128 == hexBytes("fb 34 9b 5f 80 00 00 80 00 10 00 00 0d 18 00 00"))
    #expect(BluetoothUUID(attBytes: hr.attBytes128) == hr)
    // A 32-bit alias is not a 16-bit one.
    let alias = try #require(BluetoothUUID("1234180D-0000-1000-8000-00805F9B34FB"))
    #expect(alias.uuid16 == nil)
    #expect(alias.attBytes.count == 16)
  }

  @Test func rejectsWhatIsNoUUID() {
    for text in [
      "", "18D", "1800D", "G00D", "0000180D-0000-1000-8000-00805F9B34F", "0000180D00001000800000805F9B34FB",
      "0000180D-0000-1000-8000-00805F9B34FG", "+000180D-0000-1000-8000-00805F9B34FB",
    ] {
      #expect(BluetoothUUID(text) == nil, "\(text)")
    }
    #expect(BluetoothUUID(attBytes: [1, 2, 3]) == nil)
  }
}

@Suite("ATT codec errors describe themselves")
struct ATTDescriptionTests {
  @Test func opcodesAndErrorsHaveNames() {
    #expect(ATTOpcode.exchangeMTURequest.description == "Exchange MTU Request (0x02)")
    #expect(ATTOpcode.handleValueNotification.description == "Handle Value Notification (0x1B)")
    for opcode in ATTOpcode.allCases { #expect(opcode.description.hasSuffix(hex8(opcode.rawValue) + ")")) }
    #expect(
      ATTCodecError.entriesDoNotDivide(.readByTypeResponse, entryLength: 7, dataLength: 9).description
        == "Read By Type Response (0x09): 9 bytes of data are not a whole number of 7-byte entries")
    #expect(ATTCodecError.invalidHandle(.readRequest).description == "Read Request (0x0A) names handle 0x0000")
  }
}
