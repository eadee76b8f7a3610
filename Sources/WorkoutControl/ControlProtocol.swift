import Foundation
import LinuxSupport
import WorkoutCore
import WorkoutUpload

/// The control socket's protocol: one JSON request line, one JSON reply line, then the
/// service closes the connection. `start`…`stop` act exactly as the buttons do.
public enum ControlCommand: String, Codable, Sendable, CaseIterable {
  case status
  case start
  case pause
  case resume
  case lap
  case stop
  /// A Bluetooth LE scan for sensors, run by the service (it has CAP_NET_ADMIN; the board, not
  /// the engine, answers it).
  case scanSensors
  /// Chooses a BLE sensor for its role (`address`, optional `role` and `addressType`), kept in
  /// the state directory; connected at once.
  case addSensor
  /// Removes the sensor at `address`.
  case removeSensor
  /// The sensors the service runs, and where each was chosen.
  case listSensors
  /// The USB stick copier's report (`phase`, `target`, `detail`): the service shows it in
  /// status, on the LED and the buzzer (`workoutctl copy-exports --report`).
  case reportCopy
  /// The next (or the prepared) workout's own zones (`zones`, `power`): `workoutctl zones set`.
  case setZones
  /// The workout's (or the next one's) target zone range (`zones`: "2-3", empty for none;
  /// `power`): `workoutctl zones target`.
  case setTargetZone
  /// The workout goes on to its next activity (`activity`: its type, or none for the next of
  /// `[session] activities`): `workoutctl activity next`.
  case nextActivity
  /// A one-time code a phone pairs with (the web server's): `workoutctl pair`.
  case pair
  /// The phones paired, revoked ones too: `workoutctl pair --list`.
  case listPairings
  /// Revokes phone `id`: `workoutctl pair --revoke ID`.
  case revokePairing
  /// The upload queue's jobs, of session `session` or of all: `workoutctl uploads`.
  case listUploads
  /// Sends session `session` to `target` (a configured `UploadTarget`'s name); a done or
  /// failed job only when `again`: `workoutctl upload SESSION --to TARGET`.
  case queueUpload
  /// The address at which the rider lets workoutd upload to Strava (the service knows
  /// `[strava] client_id`): `workoutctl upload login strava`, first step.
  case stravaLoginAddress
  /// The address the rider's browser ended on after approving (`pasted`), whose code the
  /// service trades for Strava's tokens: `workoutctl upload login strava`, second step.
  case stravaLogin
  /// The rider is fine: the incident alarm (a fall while riding) stops, as any button stops
  /// it: `workoutctl fine`, the phone page's "I'm fine".
  case fine

  /// The session request a control command stands for (nil for `status` and the sensor ones).
  public var request: SessionRequest? {
    switch self {
    case .status, .scanSensors, .addSensor, .removeSensor, .listSensors, .reportCopy, .setZones, .setTargetZone,
      .nextActivity, .pair, .listPairings, .revokePairing, .listUploads, .queueUpload,
      .stravaLoginAddress, .stravaLogin, .fine:
      nil
    case .start: .start
    case .pause: .pause
    case .resume: .resume
    case .lap: .lap
    case .stop: .stop
    }
  }
}

public struct ControlRequest: Codable, Sendable, Hashable {
  public var command: ControlCommand
  /// `scanSensors`: how long to scan (1–60 s; 10 by default).
  public var seconds: Double?
  /// `scanSensors`: list every LE device heard, not only heart-rate, power and speed/cadence
  /// sensors.
  public var allDevices: Bool?
  /// `addSensor`, `removeSensor`: "A0:9E:1A:12:34:56".
  public var address: String?
  /// `addSensor`: "public" or "random" (default: as the last scan heard it, else guessed).
  public var addressType: String?
  /// `addSensor`: "heart_rate", "power" or "speed_cadence" (default: what the last scan heard it
  /// advertise).
  public var role: String?
  /// `reportCopy`: the copy's step, on which stick, and what happened.
  public var copy: StickCopyReport?
  /// `setZones`: the zones as `ZoneConfiguration(parsing:)` reads them, of power when `power`.
  public var zones: String?
  public var power: Bool?
  /// `nextActivity`: "cycling", "running", ...
  public var activity: String?
  /// `revokePairing`: the phone's number, as `pair --list` shows it.
  public var id: Int64?
  /// `listUploads`, `queueUpload`: a session's id, as `workoutctl sessions` shows it.
  public var session: Int64?
  /// `queueUpload`: "intervals.icu", "strava", "webdav".
  public var target: String?
  /// `queueUpload`: queue a done or failed job afresh.
  public var again: Bool?
  /// `stravaLogin`: the line the rider pasted (the address with `code=`, or the code).
  public var pasted: String?

  public init(
    command: ControlCommand, seconds: Double? = nil, allDevices: Bool? = nil, address: String? = nil,
    addressType: String? = nil, role: String? = nil, copy: StickCopyReport? = nil, zones: String? = nil,
    power: Bool? = nil, activity: String? = nil, id: Int64? = nil, session: Int64? = nil, target: String? = nil,
    again: Bool? = nil, pasted: String? = nil
  ) {
    self.pasted = pasted
    self.session = session
    self.target = target
    self.again = again
    self.id = id
    self.activity = activity
    self.zones = zones
    self.power = power
    self.command = command
    self.seconds = seconds
    self.allDevices = allDevices
    self.address = address
    self.addressType = addressType
    self.role = role
    self.copy = copy
  }

  /// The scan's length as the service runs it.
  public var scanSeconds: Double { min(60, max(1, seconds ?? 10)) }
}

/// One sensor the service runs: `workoutctl sensors list`.
public struct SensorEntryReport: Codable, Sendable, Hashable {
  /// "heart_rate", "power", "speed_cadence".
  public var role: String
  public var address: String
  public var addressType: String
  /// "configuration" (the configuration file) or "workoutctl" (`sensors add`).
  public var origin: String
  /// Its key in `status`'s devices ("heartRateStrap", "powerMeter", "speedCadenceSensor").
  public var device: String

  public init(role: String, address: String, addressType: String, origin: String, device: String) {
    self.role = role
    self.address = address
    self.addressType = addressType
    self.origin = origin
    self.device = device
  }
}

/// What a sensor scan heard: `workoutctl sensors scan`.
public struct SensorScanReport: Codable, Sendable, Hashable {
  public struct Device: Codable, Sendable, Hashable {
    /// "AA:BB:CC:DD:EE:FF".
    public var address: String
    /// "public" or "random": what `[sensors]` and `sensors add` need with the address.
    public var addressType: String
    public var name: String?
    /// The strongest signal heard, dBm.
    public var rssi: Int?
    /// "heart rate", "cycling power", "speed/cadence": the sensor services it advertises.
    public var sensors: [String]
    /// Every service UUID advertised ("180D", or the 128-bit form).
    public var services: [String]

    public init(
      address: String, addressType: String, name: String?, rssi: Int?, sensors: [String], services: [String]
    ) {
      self.address = address
      self.addressType = addressType
      self.name = name
      self.rssi = rssi
      self.sensors = sensors
      self.services = services
    }
  }

  /// The controller that scanned: "hci0 (AA:BB:...)".
  public var controller: String
  public var seconds: Double
  /// Discovery was already running for another client; the scan listened to it.
  public var sharedDiscovery: Bool
  public var devices: [Device]
  /// What the ANT stick's scan came to, where the board has `[ant]`: how many it heard, or why
  /// it could not scan (no stick plugged in).
  public var antStick: String?

  public init(controller: String, seconds: Double, sharedDiscovery: Bool, devices: [Device]) {
    self.controller = controller
    self.seconds = seconds
    self.sharedDiscovery = sharedDiscovery
    self.devices = devices
  }
}

/// A pairing code from the web server: `workoutctl pair`.
public struct PairingReport: Codable, Sendable, Hashable {
  /// "K7QF-3MZD".
  public var code: String
  /// Seconds it stays valid.
  public var expiresIn: Double
  /// Where a phone on the same network opens the page, the code in the fragment (never sent
  /// to the server in a request line): one per address the server listens on.
  public var urls: [String]
  /// The SHA-256 fingerprint of the page's certificate ("AB:CD:…") when it is HTTPS: what the
  /// phone's browser shows for the certificate, checked once by the rider.
  public var fingerprint: String?

  public init(code: String, expiresIn: Double, urls: [String], fingerprint: String? = nil) {
    self.code = code
    self.expiresIn = expiresIn
    self.urls = urls
    self.fingerprint = fingerprint
  }
}

/// A paired phone: `workoutctl pair --list`.
public struct WebClientReport: Codable, Sendable, Hashable {
  public var id: Int64
  public var name: String
  /// Unix times.
  public var paired: Double
  public var lastSeen: Double?
  public var revoked: Double?

  public init(id: Int64, name: String, paired: Double, lastSeen: Double?, revoked: Double?) {
    self.id = id
    self.name = name
    self.paired = paired
    self.lastSeen = lastSeen
    self.revoked = revoked
  }
}

public struct ControlReply: Codable, Sendable {
  public var ok: Bool
  /// The state after a request, or the state that refused it.
  public var state: SessionState?
  /// A refused request's reason (a `Refusal` raw value) and its text.
  public var refusal: String?
  public var message: String?
  public var lap: Int?
  public var status: StatusReport?
  public var scan: SensorScanReport?
  public var sensors: [SensorEntryReport]?
  public var pairing: PairingReport?
  public var webClients: [WebClientReport]?
  /// `listUploads`: the jobs, newest session first; `queueUpload`: the session's job.
  public var uploads: [UploadJob]?
  /// `stravaLoginAddress`: Strava's authorization address, for the rider's browser.
  public var loginAddress: String?

  /// The `refusal` of a client the control socket had no place for (too many connected).
  public static let busy = "busy"

  public init(
    ok: Bool, state: SessionState? = nil, refusal: String? = nil, message: String? = nil, lap: Int? = nil,
    status: StatusReport? = nil, scan: SensorScanReport? = nil, sensors: [SensorEntryReport]? = nil,
    pairing: PairingReport? = nil, webClients: [WebClientReport]? = nil, uploads: [UploadJob]? = nil,
    loginAddress: String? = nil
  ) {
    self.loginAddress = loginAddress
    self.uploads = uploads
    self.pairing = pairing
    self.webClients = webClients
    self.sensors = sensors
    self.ok = ok
    self.state = state
    self.refusal = refusal
    self.message = message
    self.lap = lap
    self.status = status
    self.scan = scan
  }
}

/// What `workoutctl status` shows: the live session as the engine sees it (`EngineStatus`,
/// whose fields read through this report: `status.timer`) and the service's health. In JSON
/// the engine's fields and the service's are one flat object.
@dynamicMemberLookup
public struct StatusReport: Codable, Sendable {
  public var engine: EngineStatus
  public var board: String
  public var boardTime: Double
  public var devices: [String: String]
  public var storage: StorageReport
  /// The upload queue's pending and failed jobs; nil when it has none.
  public var uploads: UploadCounts?

  public struct StorageReport: Codable, Sendable {
    public var database: String
    /// Engine steps waiting in memory because the disk refused them.
    public var pendingWrites: Int
    public var failing: Bool
    public var lastError: String?

    public init(database: String, pendingWrites: Int, failing: Bool, lastError: String?) {
      self.database = database
      self.pendingWrites = pendingWrites
      self.failing = failing
      self.lastError = lastError
    }
  }

  public init(
    engine: EngineStatus, board: String, boardTime: Double, devices: [String: String], storage: StorageReport,
    uploads: UploadCounts? = nil
  ) {
    self.uploads = uploads
    self.engine = engine
    self.board = board
    self.boardTime = boardTime
    self.devices = devices
    self.storage = storage
  }

  public subscript<Value>(dynamicMember keyPath: KeyPath<EngineStatus, Value>) -> Value {
    engine[keyPath: keyPath]
  }

  /// The last point's sequence number and wall time (UTC seconds), which scripts read.
  public var lastPointSequence: Int? { engine.lastPoint?.sequence }
  public var lastPointTime: Double? { engine.lastPoint?.moment.wall }

  private enum ServiceKeys: String, CodingKey {
    case board, boardTime, devices, storage, lastPointSequence, lastPointTime, uploads
  }

  public init(from decoder: any Decoder) throws {
    engine = try EngineStatus(from: decoder)
    let container = try decoder.container(keyedBy: ServiceKeys.self)
    board = try container.decode(String.self, forKey: .board)
    boardTime = try container.decode(Double.self, forKey: .boardTime)
    devices = try container.decode([String: String].self, forKey: .devices)
    storage = try container.decode(StorageReport.self, forKey: .storage)
    uploads = try container.decodeIfPresent(UploadCounts.self, forKey: .uploads)
  }

  public func encode(to encoder: any Encoder) throws {
    try engine.encode(to: encoder)
    var container = encoder.container(keyedBy: ServiceKeys.self)
    try container.encode(board, forKey: .board)
    try container.encode(boardTime, forKey: .boardTime)
    try container.encode(devices, forKey: .devices)
    try container.encode(storage, forKey: .storage)
    try container.encodeIfPresent(lastPointSequence, forKey: .lastPointSequence)
    try container.encodeIfPresent(lastPointTime, forKey: .lastPointTime)
    try container.encodeIfPresent(uploads, forKey: .uploads)
  }
}

/// JSON as both ends write it: sorted keys, so replies are stable to read and to diff.
public enum ControlJSON {
  public static func encode<T: Encodable>(_ value: T, pretty: Bool = false) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted] : [.sortedKeys]
    encoder.nonConformingFloatEncodingStrategy = .convertToString(
      positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    return String(decoding: try encoder.encode(value), as: UTF8.self)
  }

  public static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
    let decoder = JSONDecoder()
    decoder.nonConformingFloatDecodingStrategy = .convertFromString(
      positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    return try decoder.decode(type, from: Data(text.utf8))
  }
}

/// Why talking to the service failed.
public enum ControlClientError: Error, CustomStringConvertible {
  case unreachable(path: String, SystemError)
  case noReply(path: String)
  case badReply(String)
  /// The socket had no place for this client: the service runs, too many clients are connected.
  case busy(path: String, String)

  public var description: String {
    switch self {
    case .unreachable(let path, let error):
      "cannot reach workoutd at \(path): \(error) (is the service running, and are you in its group?)"
    case .noReply(let path): "workoutd at \(path) closed the connection without a reply"
    case .badReply(let text): "workoutd sent a reply that is not understood: \(text.prefix(200))"
    case .busy(let path, let message):
      "the control socket \(path) is busy, too many clients are connected (workoutd says: \(message.prefix(200)))"
    }
  }
}

/// Sends one request to the service's control socket and returns its reply; a socket too busy
/// to take the request is `ControlClientError.busy`, never a reply.
public func sendControl(_ request: ControlRequest, socketPath: String, timeout: Double = 10) throws -> ControlReply {
  let text = try ControlJSON.encode(request) + "\n"
  let socket: UnixSocket
  do {
    socket = try UnixSocket.connect(path: socketPath)
    try socket.setTimeouts(seconds: timeout)
  } catch {
    throw ControlClientError.unreachable(path: socketPath, error)
  }
  // A socket too busy to take the request answers at once and closes, maybe before the request
  // is written (EPIPE): the answer is read all the same, and tells why.
  var writeError: SystemError?
  do throws(SystemError) {
    try socket.writeAll(text)
  } catch {
    writeError = error
  }
  let line: String?
  do {
    line = try socket.readLine(limit: 1 << 20)
  } catch {
    if let writeError { throw ControlClientError.unreachable(path: socketPath, writeError) }
    throw error
  }
  if line == nil, let writeError { throw ControlClientError.unreachable(path: socketPath, writeError) }
  guard let line else { throw ControlClientError.noReply(path: socketPath) }
  let reply: ControlReply
  do {
    reply = try ControlJSON.decode(ControlReply.self, from: line)
  } catch {
    throw ControlClientError.badReply(line)
  }
  if reply.refusal == ControlReply.busy { throw ControlClientError.busy(path: socketPath, reply.message ?? "busy") }
  return reply
}
