/// ATT opcodes (Core Spec Vol 3 Part F §3.4.8). Bit 6 is the command flag, bit 7
/// the authentication signature flag (§3.3.1).
public enum ATTOpcode: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  case errorResponse = 0x01
  case exchangeMTURequest = 0x02
  case exchangeMTUResponse = 0x03
  case findInformationRequest = 0x04
  case findInformationResponse = 0x05
  case findByTypeValueRequest = 0x06
  case findByTypeValueResponse = 0x07
  case readByTypeRequest = 0x08
  case readByTypeResponse = 0x09
  case readRequest = 0x0A
  case readResponse = 0x0B
  case readBlobRequest = 0x0C
  case readBlobResponse = 0x0D
  case readMultipleRequest = 0x0E
  case readMultipleResponse = 0x0F
  case readByGroupTypeRequest = 0x10
  case readByGroupTypeResponse = 0x11
  case writeRequest = 0x12
  case writeResponse = 0x13
  case prepareWriteRequest = 0x16
  case prepareWriteResponse = 0x17
  case executeWriteRequest = 0x18
  case executeWriteResponse = 0x19
  case readMultipleVariableRequest = 0x20
  case readMultipleVariableResponse = 0x21
  case multipleHandleValueNotification = 0x23
  case handleValueNotification = 0x1B
  case handleValueIndication = 0x1D
  case handleValueConfirmation = 0x1E
  case writeCommand = 0x52
  case signedWriteCommand = 0xD2

  /// A request, which the receiver must answer: with an Error Response "Request Not
  /// Supported" when it has no use for it (§3.3: an unsupported command, with bit
  /// 6 set, is ignored instead). True also for an opcode this codec does not know that is no
  /// command, as the peer then waits for an answer.
  public static func needsAnswer(_ raw: UInt8) -> Bool {
    if raw & 0x40 != 0 { return false }
    guard let opcode = ATTOpcode(rawValue: raw) else { return true }
    switch opcode {
    case .exchangeMTURequest, .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest,
      .readRequest, .readBlobRequest, .readMultipleRequest, .readByGroupTypeRequest, .writeRequest,
      .prepareWriteRequest, .executeWriteRequest, .readMultipleVariableRequest:
      return true
    default:
      return false
    }
  }

  public var description: String {
    let name =
      switch self {
      case .errorResponse: "Error Response"
      case .exchangeMTURequest: "Exchange MTU Request"
      case .exchangeMTUResponse: "Exchange MTU Response"
      case .findInformationRequest: "Find Information Request"
      case .findInformationResponse: "Find Information Response"
      case .findByTypeValueRequest: "Find By Type Value Request"
      case .findByTypeValueResponse: "Find By Type Value Response"
      case .readByTypeRequest: "Read By Type Request"
      case .readByTypeResponse: "Read By Type Response"
      case .readRequest: "Read Request"
      case .readResponse: "Read Response"
      case .readBlobRequest: "Read Blob Request"
      case .readBlobResponse: "Read Blob Response"
      case .readMultipleRequest: "Read Multiple Request"
      case .readMultipleResponse: "Read Multiple Response"
      case .readByGroupTypeRequest: "Read By Group Type Request"
      case .readByGroupTypeResponse: "Read By Group Type Response"
      case .writeRequest: "Write Request"
      case .writeResponse: "Write Response"
      case .prepareWriteRequest: "Prepare Write Request"
      case .prepareWriteResponse: "Prepare Write Response"
      case .executeWriteRequest: "Execute Write Request"
      case .executeWriteResponse: "Execute Write Response"
      case .readMultipleVariableRequest: "Read Multiple Variable Request"
      case .readMultipleVariableResponse: "Read Multiple Variable Response"
      case .multipleHandleValueNotification: "Multiple Handle Value Notification"
      case .handleValueNotification: "Handle Value Notification"
      case .handleValueIndication: "Handle Value Indication"
      case .handleValueConfirmation: "Handle Value Confirmation"
      case .writeCommand: "Write Command"
      case .signedWriteCommand: "Signed Write Command"
      }
    return name + " (" + hex8(rawValue) + ")"
  }
}

func hex8(_ value: UInt8) -> String {
  let digits = String(value, radix: 16, uppercase: true)
  return "0x" + (digits.count < 2 ? "0" : "") + digits
}

/// The default and smallest ATT_MTU on LE (Vol 3 Part F §3.2.8, Part G §5.2.1).
public enum ATTMTU {
  public static let minimum = 23

  /// The ATT_MTU both sides use after an exchange: the smaller of the two Rx MTUs, and never
  /// below 23 (a value below it is taken as 23, §3.4.2.2).
  public static func negotiated(client: UInt16, server: UInt16) -> Int {
    max(minimum, Int(min(client, server)))
  }
}

/// A range of attribute handles, `start...end` with 0x0001 ≤ start ≤ end (§3.4.3.1: handle
/// 0x0000 is reserved, and a start above the end is an Invalid Handle).
public struct ATTHandleRange: Sendable, Hashable {
  public let start: UInt16
  public let end: UInt16

  public init?(start: UInt16, end: UInt16) {
    guard start != 0, start <= end else { return nil }
    self.start = start
    self.end = end
  }

  /// Every handle: where discovery starts.
  public static let all = ATTHandleRange(start: 0x0001, end: 0xFFFF)!
}

/// One entry of a Find Information Response: a handle and its attribute type.
public struct ATTHandleUUID: Sendable, Hashable {
  public var handle: UInt16
  public var uuid: BluetoothUUID

  public init(handle: UInt16, uuid: BluetoothUUID) {
    self.handle = handle
    self.uuid = uuid
  }
}

/// One entry of a Read By Type Response: a handle and its value.
public struct ATTHandleValue: Sendable, Hashable {
  public var handle: UInt16
  public var value: [UInt8]

  public init(handle: UInt16, value: [UInt8]) {
    self.handle = handle
    self.value = value
  }
}

/// One entry of a Read By Group Type Response: a group (a service) and its value (its UUID).
public struct ATTGroupValue: Sendable, Hashable {
  public var handle: UInt16
  public var endGroupHandle: UInt16
  public var value: [UInt8]

  public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
    self.handle = handle
    self.endGroupHandle = endGroupHandle
    self.value = value
  }
}

/// Why bytes are not a PDU this codec accepts.
public enum ATTCodecError: Error, Sendable, Hashable, CustomStringConvertible {
  /// No bytes at all.
  case empty
  /// Longer than the connection's ATT_MTU.
  case exceedsMTU(length: Int, mtu: Int)
  /// An opcode the specification does not define, or one this codec does not decode (Read
  /// Blob, Prepare Write, …): see `ATTOpcode.needsAnswer` for whether the peer awaits a reply.
  case unsupportedOpcode(UInt8)
  /// A PDU of the wrong length for its opcode (`length` counts the opcode).
  case invalidLength(ATTOpcode, length: Int)
  /// A handle of 0x0000, which is reserved, where an attribute's handle belongs.
  case invalidHandle(ATTOpcode)
  /// A range whose start is above its end (or a group that ends before it starts).
  case invalidHandleRange(ATTOpcode, start: UInt16, end: UInt16)
  /// Handles in a response that are not in ascending order (§3.4.3.2, §3.4.4.2, §3.4.4.10):
  /// a client that followed them could loop forever.
  case handlesNotAscending(ATTOpcode)
  /// A Find Information Response format other than 0x01 (16-bit UUIDs) or 0x02 (128-bit).
  case invalidFormat(UInt8)
  /// A list response's per-entry length too small for its fixed fields (`length` as sent).
  case invalidEntryLength(ATTOpcode, length: Int)
  /// A list response whose data is not a whole number of entries, or has none.
  case entriesDoNotDivide(ATTOpcode, entryLength: Int, dataLength: Int)
  /// An attribute value that is not what it should be (a characteristic declaration or service
  /// UUID of the wrong size).
  case invalidAttributeValue(String)

  public var description: String {
    switch self {
    case .empty: return "empty ATT PDU"
    case .exceedsMTU(let length, let mtu): return "ATT PDU of \(length) bytes exceeds the ATT_MTU of \(mtu)"
    case .unsupportedOpcode(let op): return "unknown or unsupported ATT opcode \(hex8(op))"
    case .invalidLength(let op, let length): return "\(op) of invalid length \(length)"
    case .invalidHandle(let op): return "\(op) names handle 0x0000"
    case .invalidHandleRange(let op, let start, let end):
      return "\(op) has handle range \(hex16(start))…\(hex16(end))"
    case .handlesNotAscending(let op): return "\(op) lists handles out of ascending order"
    case .invalidFormat(let format): return "Find Information Response with format \(hex8(format))"
    case .invalidEntryLength(let op, let length): return "\(op) with entry length \(length)"
    case .entriesDoNotDivide(let op, let entry, let data):
      return "\(op): \(data) bytes of data are not a whole number of \(entry)-byte entries"
    case .invalidAttributeValue(let what): return "invalid attribute value: \(what)"
    }
  }
}

/// The ATT PDUs a GATT client sends and receives (Core Spec Vol 3 Part F §3.4), as values.
/// `encode()` gives the bytes of one PDU; `decode(_:mtu:)` reads one, checking every length,
/// every handle, and that list responses hold whole entries. Pure: no I/O.
public enum ATTPDU: Sendable, Hashable {
  /// §3.4.1.1: the request that failed, the handle it was about (0x0000 when none), why.
  case errorResponse(request: UInt8, handle: UInt16, error: ATTErrorCode)
  /// §3.4.2.1–2.
  case exchangeMTURequest(clientRxMTU: UInt16)
  case exchangeMTUResponse(serverRxMTU: UInt16)
  /// §3.4.3.1–2: the descriptors in a range (a CCCD is type 0x2902).
  case findInformationRequest(ATTHandleRange)
  case findInformationResponse([ATTHandleUUID])
  /// §3.4.4.1–2: attributes of a type in a range (characteristic declarations are 0x2803).
  case readByTypeRequest(ATTHandleRange, type: BluetoothUUID)
  case readByTypeResponse([ATTHandleValue])
  /// §3.4.4.3–4.
  case readRequest(handle: UInt16)
  case readResponse(value: [UInt8])
  /// §3.4.4.9–10: groups of a type in a range (primary services are 0x2800).
  case readByGroupTypeRequest(ATTHandleRange, groupType: BluetoothUUID)
  case readByGroupTypeResponse([ATTGroupValue])
  /// §3.4.5.1–3.
  case writeRequest(handle: UInt16, value: [UInt8])
  case writeResponse
  case writeCommand(handle: UInt16, value: [UInt8])
  /// §3.4.7.1–3.
  case handleValueNotification(handle: UInt16, value: [UInt8])
  case handleValueIndication(handle: UInt16, value: [UInt8])
  case handleValueConfirmation

  public var opcode: ATTOpcode {
    switch self {
    case .errorResponse: .errorResponse
    case .exchangeMTURequest: .exchangeMTURequest
    case .exchangeMTUResponse: .exchangeMTUResponse
    case .findInformationRequest: .findInformationRequest
    case .findInformationResponse: .findInformationResponse
    case .readByTypeRequest: .readByTypeRequest
    case .readByTypeResponse: .readByTypeResponse
    case .readRequest: .readRequest
    case .readResponse: .readResponse
    case .readByGroupTypeRequest: .readByGroupTypeRequest
    case .readByGroupTypeResponse: .readByGroupTypeResponse
    case .writeRequest: .writeRequest
    case .writeResponse: .writeResponse
    case .writeCommand: .writeCommand
    case .handleValueNotification: .handleValueNotification
    case .handleValueIndication: .handleValueIndication
    case .handleValueConfirmation: .handleValueConfirmation
    }
  }

  /// The PDU's bytes. Read By Type and Read By Group Type responses hold the leading entries
  /// that share the first entry's value length, as a server sends them (§3.4.4.2, §3.4.4.10);
  /// values too long for the one-byte entry length are cut at 253 (or 251) bytes.
  public func encode() -> [UInt8] {
    var out: [UInt8] = [opcode.rawValue]
    func handle(_ h: UInt16) { out.appendLE(h) }
    func range(_ r: ATTHandleRange) {
      handle(r.start)
      handle(r.end)
    }
    // The entries' handles, then their values of the first one's length: 255 bytes an entry
    // at the most.
    func dataList(_ entries: [(handles: [UInt16], value: [UInt8])], handles: Int) {
      let most = 255 - 2 * handles
      let length = min(entries.first?.value.count ?? 0, most)
      out.append(UInt8(2 * handles + length))
      for entry in entries {
        guard entry.value.count == length || (length == most && entry.value.count > most) else { break }
        entry.handles.forEach(handle)
        out += entry.value.prefix(length)
      }
    }
    switch self {
    case .errorResponse(let request, let h, let error):
      out.append(request)
      handle(h)
      out.append(error.rawValue)
    case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
      handle(mtu)
    case .findInformationRequest(let r):
      range(r)
    case .findInformationResponse(let entries):
      // Format 0x01 when every UUID has a 16-bit form, else 0x02 with all of them in full.
      let short = entries.allSatisfy { $0.uuid.uuid16 != nil }
      out.append(short ? 0x01 : 0x02)
      for entry in entries {
        handle(entry.handle)
        out += short ? entry.uuid.attBytes : entry.uuid.attBytes128
      }
    case .readByTypeRequest(let r, let uuid), .readByGroupTypeRequest(let r, let uuid):
      range(r)
      out += uuid.attBytes
    case .readByTypeResponse(let entries):
      dataList(entries.map { ([$0.handle], $0.value) }, handles: 1)
    case .readByGroupTypeResponse(let entries):
      dataList(entries.map { ([$0.handle, $0.endGroupHandle], $0.value) }, handles: 2)
    case .readRequest(let h):
      handle(h)
    case .readResponse(let value):
      out += value
    case .writeRequest(let h, let value), .writeCommand(let h, let value),
      .handleValueNotification(let h, let value), .handleValueIndication(let h, let value):
      handle(h)
      out += value
    case .writeResponse, .handleValueConfirmation:
      break
    }
    return out
  }

  /// The PDU's bytes, refused when longer than `mtu`.
  public func encode(mtu: Int) throws(ATTCodecError) -> [UInt8] {
    let bytes = encode()
    guard bytes.count <= mtu else { throw .exceedsMTU(length: bytes.count, mtu: mtu) }
    return bytes
  }

  /// Reads one PDU of a connection whose ATT_MTU is `mtu`.
  public static func decode(_ pdu: some Collection<UInt8>, mtu: Int) throws(ATTCodecError) -> ATTPDU {
    let b = Array(pdu)
    guard let raw = b.first else { throw .empty }
    guard b.count <= mtu else { throw .exceedsMTU(length: b.count, mtu: mtu) }
    guard let op = ATTOpcode(rawValue: raw) else { throw .unsupportedOpcode(raw) }
    func u16(_ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    func length(_ valid: Bool) throws(ATTCodecError) {
      if !valid { throw .invalidLength(op, length: b.count) }
    }
    func attributeHandle(_ i: Int) throws(ATTCodecError) -> UInt16 {
      let h = u16(i)
      if h == 0 { throw .invalidHandle(op) }
      return h
    }
    func handleRange() throws(ATTCodecError) -> ATTHandleRange {
      guard let r = ATTHandleRange(start: u16(1), end: u16(3)) else {
        if u16(1) == 0 { throw .invalidHandle(op) }
        throw .invalidHandleRange(op, start: u16(1), end: u16(3))
      }
      return r
    }
    /// Splits a list response's data into entries of `entryLength`, checking that handles ascend.
    func entries(from start: Int, entryLength: Int) throws(ATTCodecError) -> [ArraySlice<UInt8>] {
      let data = b.count - start
      guard data > 0, data % entryLength == 0 else {
        throw .entriesDoNotDivide(op, entryLength: entryLength, dataLength: data)
      }
      var out: [ArraySlice<UInt8>] = []
      var previous: UInt16 = 0
      for offset in stride(from: start, to: b.count, by: entryLength) {
        let h = try attributeHandle(offset)
        if h <= previous { throw .handlesNotAscending(op) }
        previous = h
        out.append(b[offset..<offset + entryLength])
      }
      return out
    }

    switch op {
    case .errorResponse:
      try length(b.count == 5)
      return .errorResponse(request: b[1], handle: u16(2), error: ATTErrorCode(rawValue: b[4]))
    case .exchangeMTURequest:
      try length(b.count == 3)
      return .exchangeMTURequest(clientRxMTU: u16(1))
    case .exchangeMTUResponse:
      try length(b.count == 3)
      return .exchangeMTUResponse(serverRxMTU: u16(1))
    case .findInformationRequest:
      try length(b.count == 5)
      return .findInformationRequest(try handleRange())
    case .findInformationResponse:
      try length(b.count >= 2)
      let uuidLength: Int
      switch b[1] {
      case 0x01: uuidLength = 2
      case 0x02: uuidLength = 16
      default: throw .invalidFormat(b[1])
      }
      return .findInformationResponse(
        try entries(from: 2, entryLength: 2 + uuidLength).map { e in
          ATTHandleUUID(handle: u16(e.startIndex), uuid: BluetoothUUID(attBytes: e.dropFirst(2))!)
        })
    case .readByTypeRequest, .readByGroupTypeRequest:
      try length(b.count == 7 || b.count == 21)
      let r = try handleRange()
      let uuid = BluetoothUUID(attBytes: b[5...])!
      return op == .readByTypeRequest ? .readByTypeRequest(r, type: uuid) : .readByGroupTypeRequest(r, groupType: uuid)
    case .readByTypeResponse:
      try length(b.count >= 2)
      let entryLength = Int(b[1])
      guard entryLength >= 2 else { throw .invalidEntryLength(op, length: entryLength) }
      return .readByTypeResponse(
        try entries(from: 2, entryLength: entryLength).map { e in
          ATTHandleValue(handle: u16(e.startIndex), value: Array(e.dropFirst(2)))
        })
    case .readByGroupTypeResponse:
      try length(b.count >= 2)
      let entryLength = Int(b[1])
      guard entryLength >= 4 else { throw .invalidEntryLength(op, length: entryLength) }
      let groups = try entries(from: 2, entryLength: entryLength).map { e in
        ATTGroupValue(handle: u16(e.startIndex), endGroupHandle: u16(e.startIndex + 2), value: Array(e.dropFirst(4)))
      }
      var previousEnd: UInt16 = 0
      for group in groups {
        if group.endGroupHandle < group.handle {
          throw .invalidHandleRange(op, start: group.handle, end: group.endGroupHandle)
        }
        // Groups do not overlap: each starts after the previous one ended.
        if group.handle <= previousEnd { throw .handlesNotAscending(op) }
        previousEnd = group.endGroupHandle
      }
      return .readByGroupTypeResponse(groups)
    case .readRequest:
      try length(b.count == 3)
      return .readRequest(handle: try attributeHandle(1))
    case .readResponse:
      return .readResponse(value: Array(b[1...]))
    case .writeRequest, .writeCommand, .handleValueNotification, .handleValueIndication:
      try length(b.count >= 3)
      let h = try attributeHandle(1)
      let value = Array(b[3...])
      switch op {
      case .writeRequest: return .writeRequest(handle: h, value: value)
      case .writeCommand: return .writeCommand(handle: h, value: value)
      case .handleValueNotification: return .handleValueNotification(handle: h, value: value)
      default: return .handleValueIndication(handle: h, value: value)
      }
    case .writeResponse:
      try length(b.count == 1)
      return .writeResponse
    case .handleValueConfirmation:
      try length(b.count == 1)
      return .handleValueConfirmation
    case .findByTypeValueRequest, .findByTypeValueResponse, .readBlobRequest, .readBlobResponse,
      .readMultipleRequest, .readMultipleResponse, .prepareWriteRequest, .prepareWriteResponse,
      .executeWriteRequest, .executeWriteResponse, .readMultipleVariableRequest, .readMultipleVariableResponse,
      .multipleHandleValueNotification, .signedWriteCommand:
      throw .unsupportedOpcode(raw)
    }
  }
}
