/// A characteristic by what it is: its service's UUID and its own.
public struct GATTCharacteristicID: Sendable, Hashable, CustomStringConvertible {
  public var service: BluetoothUUID
  public var characteristic: BluetoothUUID

  public var description: String { "\(characteristic) in \(service)" }

  public static let heartRateMeasurement = GATTCharacteristicID(
    service: .heartRateService, characteristic: .heartRateMeasurement)
  public static let bodySensorLocation = GATTCharacteristicID(
    service: .heartRateService, characteristic: .bodySensorLocation)
  public static let cyclingPowerMeasurement = GATTCharacteristicID(
    service: .cyclingPowerService, characteristic: .cyclingPowerMeasurement)
  public static let cyclingPowerFeature = GATTCharacteristicID(
    service: .cyclingPowerService, characteristic: .cyclingPowerFeature)
  public static let cscMeasurement = GATTCharacteristicID(
    service: .cyclingSpeedAndCadenceService, characteristic: .cscMeasurement)
  public static let cscFeature = GATTCharacteristicID(
    service: .cyclingSpeedAndCadenceService, characteristic: .cscFeature)
  public static let batteryLevel = GATTCharacteristicID(service: .batteryService, characteristic: .batteryLevel)
}

/// What a client wants of a peer's GATT database: values to be told of (notifications, or
/// indications where a characteristic offers only those) and values to read once.
public struct GATTProfile: Sendable, Hashable {
  /// Characteristics to subscribe to where the peer has them. The connection is of use only
  /// if at least one `essential` one is subscribed (a strap that offers only its battery is not).
  public var subscriptions: [(id: GATTCharacteristicID, essential: Bool)]
  /// Characteristics read once after discovery, where the peer has them and allows it.
  public var reads: [GATTCharacteristicID]

  public init(subscriptions: [(id: GATTCharacteristicID, essential: Bool)], reads: [GATTCharacteristicID]) {
    self.subscriptions = subscriptions
    self.reads = reads
  }

  /// Heart-rate straps, power meters and speed/cadence pods: their measurements, the battery
  /// level (notified where offered) and the values that say how to read the measurements.
  public static let straps = GATTProfile(
    subscriptions: [
      (.heartRateMeasurement, true), (.cyclingPowerMeasurement, true), (.cscMeasurement, true),
      (.batteryLevel, false),
    ],
    reads: [.cyclingPowerFeature, .cscFeature, .bodySensorLocation, .batteryLevel])

  var services: Set<BluetoothUUID> {
    Set(subscriptions.map(\.id.service) + reads.map(\.service))
  }

  public static func == (a: GATTProfile, b: GATTProfile) -> Bool {
    a.reads == b.reads && a.subscriptions.map(\.id) == b.subscriptions.map(\.id)
      && a.subscriptions.map(\.essential) == b.subscriptions.map(\.essential)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(reads)
    hasher.combine(subscriptions.map(\.id))
  }
}

/// Why a GATT connection cannot go on. After any of these the bearer is dead to ATT (Core
/// Specification v5.4, Vol 3, Part F, 3.3.3: no further requests after a transaction timeout):
/// the caller closes the link and connects again later.
public enum GATTClientError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The peer did not answer a request within 30 s.
  case transactionTimeout(ATTOpcode)
  /// A response that cannot be decoded, or that breaks the procedure (handles going backwards).
  case malformedResponse(ATTOpcode, String)
  /// A response to a request never made, or of the wrong kind.
  case unexpectedResponse(ATTOpcode)
  /// Discovery failed with an ATT error other than "Attribute Not Found".
  case discoveryFailed(ATTOpcode, ATTErrorCode)
  /// The peer wants a bond (pairing) before it sends its measurements.
  case needsPairing(GATTCharacteristicID, ATTErrorCode)
  /// The peer has none of the measurements the profile wants, or refused every subscription.
  case noMeasurement(found: [BluetoothUUID])

  public var description: String {
    switch self {
    case .transactionTimeout(let op): return "no answer to \(op) in 30 s"
    case .malformedResponse(let op, let why): return "malformed \(op): \(why)"
    case .unexpectedResponse(let op): return "unexpected \(op)"
    case .discoveryFailed(let op, let error): return "discovery failed: \(op) answered \(error)"
    case .needsPairing(let id, let error):
      return "the sensor requires pairing to send \(id) (\(error)): pair it once with bluetoothctl"
    case .noMeasurement(let found):
      let list = found.isEmpty ? "no services of interest" : found.map(\.description).joined(separator: ", ")
      return "the sensor offers no heart-rate, power or speed/cadence measurement (found \(list))"
    }
  }
}

/// What the connection found and subscribed to, once discovery is done.
public struct GATTConnectionSummary: Sendable, Hashable {
  /// The ATT_MTU both sides agreed on.
  public var mtu: Int
  /// Subscribed characteristics, each with the kind of update it sends.
  public var subscribed: [GATTCharacteristicID: GATTValueOrigin]
  /// Services of interest the peer offers.
  public var services: [BluetoothUUID]
}

/// How a value reached us.
public enum GATTValueOrigin: Sendable, Hashable {
  case read
  case notification
  case indication
}

/// A GATT client for one connection, as a state machine: it is fed the ATT PDUs that arrive and
/// the time, and returns what to send and what it learnt. No I/O and no clock: the caller owns
/// the socket (an L2CAP LE socket on the ATT fixed channel) and the timers.
///
/// The procedures, in order (Core v5.4, Vol 3, Part G, 4.3–4.12): Exchange MTU; Discover All
/// Primary Services (Read By Group Type 0x2800); for each service the profile names, Discover
/// All Characteristics (Read By Type 0x2803); for each characteristic to subscribe to, Discover
/// All Characteristic Descriptors (Find Information) to find its CCCD; Read Characteristic
/// Value for the profile's reads; then a Write Characteristic Descriptor to each CCCD. One
/// request is outstanding at a time (Part F, 3.3.2); notifications and indications are taken at
/// any point, and every indication is confirmed.
public struct GATTClient: Sendable {
  public enum Output: Sendable, Hashable {
    /// An ATT PDU to send.
    case send([UInt8])
    /// Discovery and subscriptions are done: measurements flow from now on.
    case ready(GATTConnectionSummary)
    /// A characteristic's value: read, notified or indicated.
    case value(GATTCharacteristicID, [UInt8], GATTValueOrigin)
    /// A read or an optional subscription the peer refused; the connection goes on.
    case refused(GATTCharacteristicID, ATTOpcode, ATTErrorCode)
    /// A PDU from the peer that was dropped (malformed, or for a handle we never learnt).
    case ignored(String)
    /// The connection cannot go on (see `GATTClientError`); nothing more will be sent.
    case failed(GATTClientError)
  }

  /// Core v5.4, Vol 3, Part F, 3.3.3: a transaction not completed within 30 s has failed.
  public static let transactionTimeout: Double = 30
  /// The ATT_MTU we offer: the largest PDU that fits one LE packet with the Data Length
  /// Extension (251 bytes of L2CAP payload, less its 4-byte header); straps send ~20-byte values.
  public static let offeredMTU: UInt16 = 247

  private struct Characteristic: Sendable {
    var id: GATTCharacteristicID
    /// Index of its service in `services`.
    var service: Int
    var declaration: GATTCharacteristicDeclaration
    /// The last handle that belongs to it (before the next declaration or the service's end).
    var end: UInt16
    var cccd: UInt16?
  }

  private enum Step: Sendable {
    case notStarted
    case exchangingMTU
    case discoveringServices(from: UInt16)
    case discoveringCharacteristics(service: Int, from: UInt16)
    case discoveringDescriptors(characteristic: Int, from: UInt16)
    case reading(Int)
    case subscribing(Int)
    case ready
    case failed
  }

  public let profile: GATTProfile
  public private(set) var mtu = ATTMTU.minimum
  private var step = Step.notStarted
  private var pending: (opcode: ATTOpcode, sentAt: Double)?
  private var services: [GATTService] = []
  private var characteristics: [Characteristic] = []
  /// Indices into `characteristics`, in the order they are worked through.
  private var toSubscribe: [Int] = []
  private var toRead: [Int] = []
  private var subscribed: [GATTCharacteristicID: GATTValueOrigin] = [:]
  private var valueHandles: [UInt16: Int] = [:]

  public init(profile: GATTProfile = .straps) {
    self.profile = profile
  }

  public var isReady: Bool {
    if case .ready = step { return true }
    return false
  }

  public var hasFailed: Bool {
    if case .failed = step { return true }
    return false
  }

  /// When the outstanding request times out, on the caller's monotonic clock (seconds).
  public var deadline: Double? {
    pending.map { $0.sentAt + Self.transactionTimeout }
  }

  /// Begins the procedures on a freshly connected bearer.
  public mutating func start(now: Double) -> [Output] {
    guard case .notStarted = step else { return [] }
    step = .exchangingMTU
    return request(.exchangeMTURequest(clientRxMTU: Self.offeredMTU), now: now)
  }

  /// The time has come: fails the connection if the outstanding request is overdue.
  public mutating func timeElapsed(now: Double) -> [Output] {
    guard let pending, now >= pending.sentAt + Self.transactionTimeout else { return [] }
    return fail(.transactionTimeout(pending.opcode))
  }

  /// An ATT PDU from the peer.
  public mutating func received(_ bytes: [UInt8], now: Double) -> [Output] {
    if case .failed = step { return [] }
    guard let raw = bytes.first else { return [.ignored("an empty ATT PDU")] }
    let pdu: ATTPDU
    do {
      // The peer may send up to the MTU it knows of; we accept up to what we offered.
      pdu = try ATTPDU.decode(bytes, mtu: max(mtu, Int(Self.offeredMTU)))
    } catch {
      return undecodable(raw, bytes, error)
    }
    switch pdu {
    case .handleValueNotification(let handle, let value):
      return update(handle, value, .notification)
    case .handleValueIndication(let handle, let value):
      // Confirm every indication, even one we cannot place (Part F, 3.4.7.2).
      return [.send(ATTPDU.handleValueConfirmation.encode())] + update(handle, value, .indication)
    case .exchangeMTURequest(let clientRxMTU):
      // The peer as a client: answer, and both directions use the smaller MTU (Part F, 3.4.2).
      mtu = ATTMTU.negotiated(client: clientRxMTU, server: Self.offeredMTU)
      return [.send(ATTPDU.exchangeMTUResponse(serverRxMTU: Self.offeredMTU).encode())]
    case .findInformationRequest, .readByTypeRequest, .readRequest, .readByGroupTypeRequest, .writeRequest:
      // We hold no attributes a peer may want; say so rather than let its request time out.
      return [.send(ATTPDU.errorResponse(request: raw, handle: 0, error: .requestNotSupported).encode())]
    case .writeCommand, .handleValueConfirmation:
      return [.ignored("\(pdu.opcode) from the peer")]
    case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .readByTypeResponse, .readResponse,
      .readByGroupTypeResponse, .writeResponse:
      return response(pdu, now: now)
    }
  }

  // MARK: - Responses

  private mutating func response(_ pdu: ATTPDU, now: Double) -> [Output] {
    guard let pending else { return fail(.unexpectedResponse(pdu.opcode)) }
    var error: ATTErrorCode?
    if case .errorResponse(let request, _, let code) = pdu {
      guard request == pending.opcode.rawValue else { return fail(.unexpectedResponse(pdu.opcode)) }
      error = code
    } else if pdu.opcode.rawValue != pending.opcode.rawValue + 1 {
      // Every response's opcode is its request's plus one (Part F, 3.4).
      return fail(.unexpectedResponse(pdu.opcode))
    }
    self.pending = nil

    switch step {
    case .exchangingMTU:
      if case .exchangeMTUResponse(let serverRxMTU) = pdu {
        mtu = ATTMTU.negotiated(client: Self.offeredMTU, server: serverRxMTU)
      }
      // An error ("Request Not Supported") leaves the default ATT_MTU of 23.
      return discoverServices(from: 0x0001, now: now)

    case .discoveringServices:
      if let error {
        return error == .attributeNotFound
          ? afterServices(now: now) : fail(.discoveryFailed(.readByGroupTypeRequest, error))
      }
      guard case .readByGroupTypeResponse(let groups) = pdu else { return fail(.unexpectedResponse(pdu.opcode)) }
      var last: UInt16 = 0
      for group in groups {
        let service: GATTService
        do { service = try GATTService(group) } catch {
          return fail(.malformedResponse(.readByGroupTypeResponse, error.description))
        }
        if profile.services.contains(service.uuid) { services.append(service) }
        last = service.handles.end
      }
      guard last < 0xFFFF else { return afterServices(now: now) }
      return discoverServices(from: last + 1, now: now)

    case .discoveringCharacteristics(let index, let from):
      let service = services[index]
      if let error {
        return error == .attributeNotFound
          ? afterCharacteristics(of: index, now: now) : fail(.discoveryFailed(.readByTypeRequest, error))
      }
      guard case .readByTypeResponse(let entries) = pdu else { return fail(.unexpectedResponse(pdu.opcode)) }
      var last: UInt16 = 0
      for entry in entries {
        let declaration: GATTCharacteristicDeclaration
        do { declaration = try GATTCharacteristicDeclaration(entry) } catch {
          return fail(.malformedResponse(.readByTypeResponse, error.description))
        }
        guard declaration.handle >= from, declaration.handle <= service.handles.end,
          declaration.valueHandle <= service.handles.end
        else {
          return fail(.malformedResponse(.readByTypeResponse, "a characteristic outside its service's handles"))
        }
        // The previous characteristic of this service ends just before this declaration.
        if let previous = characteristics.indices.last, characteristics[previous].service == index,
          characteristics[previous].end >= declaration.handle
        {
          characteristics[previous].end = declaration.handle - 1
        }
        characteristics.append(
          Characteristic(
            id: GATTCharacteristicID(service: service.uuid, characteristic: declaration.uuid), service: index,
            declaration: declaration, end: service.handles.end))
        last = declaration.valueHandle
      }
      guard last < service.handles.end else { return afterCharacteristics(of: index, now: now) }
      step = .discoveringCharacteristics(service: index, from: last + 1)
      return discoverCharacteristics(of: index, from: last + 1, now: now)

    case .discoveringDescriptors(let queueIndex, _):
      let c = toSubscribe[queueIndex]
      if let error {
        return error == .attributeNotFound
          ? nextDescriptors(after: queueIndex, now: now) : fail(.discoveryFailed(.findInformationRequest, error))
      }
      guard case .findInformationResponse(let entries) = pdu, let lastEntry = entries.last else {
        return fail(.unexpectedResponse(pdu.opcode))
      }
      if let cccd = entries.first(where: { $0.uuid == .clientCharacteristicConfiguration }) {
        characteristics[c].cccd = cccd.handle
        return nextDescriptors(after: queueIndex, now: now)
      }
      guard lastEntry.handle < characteristics[c].end else { return nextDescriptors(after: queueIndex, now: now) }
      return discoverDescriptors(queueIndex, from: lastEntry.handle + 1, now: now)

    case .reading(let queueIndex):
      let c = characteristics[toRead[queueIndex]]
      var out: [Output] = []
      if let error {
        out.append(.refused(c.id, .readRequest, error))
      } else if case .readResponse(let value) = pdu {
        out.append(.value(c.id, value, .read))
      } else {
        return fail(.unexpectedResponse(pdu.opcode))
      }
      return out + read(queueIndex + 1, now: now)

    case .subscribing(let queueIndex):
      let c = characteristics[toSubscribe[queueIndex]]
      let origin: GATTValueOrigin = c.declaration.properties.contains(.notify) ? .notification : .indication
      var out: [Output] = []
      if let error {
        if error == .insufficientAuthentication || error == .insufficientEncryption
          || error == .insufficientAuthorization || error == .encryptionKeySizeTooShort,
          isEssential(c.id)
        {
          return fail(.needsPairing(c.id, error))
        }
        out.append(.refused(c.id, .writeRequest, error))
      } else if case .writeResponse = pdu {
        subscribed[c.id] = origin
      } else {
        return fail(.unexpectedResponse(pdu.opcode))
      }
      return out + subscribe(queueIndex + 1, now: now)

    case .notStarted, .ready, .failed:
      return fail(.unexpectedResponse(pdu.opcode))
    }
  }

  // MARK: - Procedures

  private mutating func discoverServices(from start: UInt16, now: Double) -> [Output] {
    step = .discoveringServices(from: start)
    return request(
      .readByGroupTypeRequest(ATTHandleRange(start: start, end: 0xFFFF)!, groupType: .primaryService), now: now)
  }

  private mutating func afterServices(now: Double) -> [Output] {
    guard !services.isEmpty else { return fail(.noMeasurement(found: [])) }
    return discoverCharacteristics(of: 0, from: services[0].handles.start, now: now)
  }

  private mutating func discoverCharacteristics(of index: Int, from start: UInt16, now: Double) -> [Output] {
    step = .discoveringCharacteristics(service: index, from: start)
    let range = ATTHandleRange(start: start, end: services[index].handles.end)!
    return request(.readByTypeRequest(range, type: .characteristic), now: now)
  }

  private mutating func afterCharacteristics(of index: Int, now: Double) -> [Output] {
    if index + 1 < services.count {
      return discoverCharacteristics(of: index + 1, from: services[index + 1].handles.start, now: now)
    }
    for (i, c) in characteristics.enumerated() {
      valueHandles[c.declaration.valueHandle] = i
    }
    // Subscriptions in the profile's order; only characteristics that can notify or indicate.
    for wanted in profile.subscriptions {
      if let i = characteristics.firstIndex(where: {
        $0.id == wanted.id && !$0.declaration.properties.isDisjoint(with: [.notify, .indicate])
      }) {
        toSubscribe.append(i)
      }
    }
    for wanted in profile.reads {
      if let i = characteristics.firstIndex(where: { $0.id == wanted && $0.declaration.properties.contains(.read) }) {
        toRead.append(i)
      }
    }
    guard toSubscribe.contains(where: { isEssential(characteristics[$0].id) }) else {
      return fail(.noMeasurement(found: services.map(\.uuid)))
    }
    return nextDescriptors(after: -1, now: now)
  }

  /// Finds the CCCD of the subscription after `queueIndex`, or goes on to the reads.
  private mutating func nextDescriptors(after queueIndex: Int, now: Double) -> [Output] {
    var next = queueIndex + 1
    while next < toSubscribe.count {
      let c = characteristics[toSubscribe[next]]
      if c.declaration.valueHandle < c.end {
        return discoverDescriptors(next, from: c.declaration.valueHandle + 1, now: now)
      }
      next += 1
    }
    return read(0, now: now)
  }

  private mutating func discoverDescriptors(_ queueIndex: Int, from start: UInt16, now: Double) -> [Output] {
    step = .discoveringDescriptors(characteristic: queueIndex, from: start)
    let end = characteristics[toSubscribe[queueIndex]].end
    return request(.findInformationRequest(ATTHandleRange(start: start, end: end)!), now: now)
  }

  private mutating func read(_ queueIndex: Int, now: Double) -> [Output] {
    guard queueIndex < toRead.count else { return subscribe(0, now: now) }
    step = .reading(queueIndex)
    return request(.readRequest(handle: characteristics[toRead[queueIndex]].declaration.valueHandle), now: now)
  }

  private mutating func subscribe(_ queueIndex: Int, now: Double) -> [Output] {
    var next = queueIndex
    var out: [Output] = []
    while next < toSubscribe.count {
      let c = characteristics[toSubscribe[next]]
      if let cccd = c.cccd {
        step = .subscribing(next)
        // Notifications where offered (no confirmation round trip per value), else indications.
        let value: ClientCharacteristicConfiguration =
          c.declaration.properties.contains(.notify) ? .notifications : .indications
        return out + request(.writeRequest(handle: cccd, value: value.value), now: now)
      }
      out.append(.ignored("\(c.id) can notify but has no Client Characteristic Configuration descriptor"))
      next += 1
    }
    guard subscribed.keys.contains(where: isEssential) else {
      return out + fail(.noMeasurement(found: services.map(\.uuid)))
    }
    step = .ready
    return out + [.ready(GATTConnectionSummary(mtu: mtu, subscribed: subscribed, services: services.map(\.uuid)))]
  }

  // MARK: - Helpers

  private mutating func request(_ pdu: ATTPDU, now: Double) -> [Output] {
    pending = (pdu.opcode, now)
    return [.send(pdu.encode())]
  }

  private mutating func fail(_ error: GATTClientError) -> [Output] {
    step = .failed
    pending = nil
    return [.failed(error)]
  }

  private func isEssential(_ id: GATTCharacteristicID) -> Bool {
    profile.subscriptions.contains { $0.id == id && $0.essential }
  }

  private func update(_ handle: UInt16, _ value: [UInt8], _ origin: GATTValueOrigin) -> [Output] {
    guard let index = valueHandles[handle] else {
      return [
        .ignored("\(origin == .notification ? "a notification" : "an indication") for unknown handle \(hex16(handle))")
      ]
    }
    return [.value(characteristics[index].id, value, origin)]
  }

  private mutating func undecodable(_ raw: UInt8, _ bytes: [UInt8], _ error: ATTCodecError) -> [Output] {
    let op = ATTOpcode(rawValue: raw)
    if let op, let pending, raw == pending.opcode.rawValue + 1 || op == .errorResponse {
      return fail(.malformedResponse(op, error.description))
    }
    if let op, op == .handleValueIndication {
      // Still confirm it: the peer sends nothing more until it is (Part F, 3.4.7.2).
      return [.send(ATTPDU.handleValueConfirmation.encode()), .ignored(error.description)]
    }
    if ATTOpcode.needsAnswer(raw) {
      // A request we cannot parse is an Invalid PDU; one we do not know, not supported.
      let code: ATTErrorCode = op == nil || error == .unsupportedOpcode(raw) ? .requestNotSupported : .invalidPDU
      return [.send(ATTPDU.errorResponse(request: raw, handle: 0, error: code).encode())]
    }
    return [.ignored(error.description)]
  }
}
