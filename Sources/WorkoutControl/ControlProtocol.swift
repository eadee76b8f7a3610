import Foundation
import LinuxSupport
import WorkoutCore

/// The control socket's protocol: one JSON request line, one JSON reply line, then the
/// service closes the connection. `start`…`stop` act exactly as the buttons do.
public enum ControlCommand: String, Codable, Sendable, CaseIterable {
  case status
  case start
  case pause
  case resume
  case lap
  case stop

  /// The session request a control command stands for (nil for `status`).
  public var request: SessionRequest? {
    switch self {
    case .status: nil
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

  public init(command: ControlCommand) {
    self.command = command
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

  public init(
    ok: Bool, state: SessionState? = nil, refusal: String? = nil, message: String? = nil, lap: Int? = nil,
    status: StatusReport? = nil
  ) {
    self.ok = ok
    self.state = state
    self.refusal = refusal
    self.message = message
    self.lap = lap
    self.status = status
  }
}

/// What `workoutctl status` shows: the live session and the service's health.
public struct StatusReport: Codable, Sendable {
  public var state: SessionState
  public var sessionId: Int64?
  public var activity: ActivityType?
  public var pausedBySystem: Bool
  public var countdownRemaining: Double?
  /// Seconds.
  public var elapsed: Double
  public var timer: Double
  /// Metres.
  public var distance: Double
  /// m/s.
  public var speed: Double?
  public var averageSpeed: Double?
  public var maxSpeed: Double?
  /// Seconds per km (running, walking, hiking).
  public var pace: Double?
  public var heartRate: Int?
  public var averageHeartRate: Double?
  public var maxHeartRate: Double?
  public var lap: Int?
  /// Metres climbed and descended; altitude (barometric when there is a barometer).
  public var ascent: Double
  public var descent: Double
  public var altitude: Double?
  /// The barometer (while it reports): pressure, Pa, and the sea-level pressure the altitude is
  /// computed with, with where it came from ("standard", "gps", "configured").
  public var pressure: Double?
  public var seaLevelPressure: Double?
  public var seaLevelSource: String?
  /// Relative humidity, %RH, while a BME280 reports it.
  public var humidity: Double?
  /// "none" (no GPS reports), "noGPSD", "noReceiver", "searching", "rejecting" or "fix".
  public var gps: GPSCondition
  /// The same in words, with the reason ("fixes arrive and are refused for 40 s: horizontal
  /// error 180 m > limit 100 m ..."); absent from an older service.
  public var gpsDetail: String?
  /// What the status LED shows.
  public var indicator: IndicatorPattern
  /// Points recorded in the live session (handed to the store; see `storage`).
  public var points: Int
  public var lastPointSequence: Int?
  /// Wall time (UTC seconds) of the last point.
  public var lastPointTime: Double?
  public var board: String
  public var boardTime: Double
  public var devices: [String: String]
  public var storage: StorageReport

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
    engine status: EngineStatus, board: String, boardTime: Double, devices: [String: String],
    storage: StorageReport
  ) {
    state = status.state
    sessionId = status.sessionID
    activity = status.activity
    pausedBySystem = status.pausedBySystem
    countdownRemaining = status.countdownRemaining
    elapsed = status.elapsed
    timer = status.timer
    distance = status.distance
    speed = status.speed
    averageSpeed = status.averageSpeed
    maxSpeed = status.maxSpeed
    pace = status.pace
    heartRate = status.heartRate
    averageHeartRate = status.averageHeartRate
    maxHeartRate = status.maxHeartRate
    lap = status.lap
    ascent = status.ascent
    descent = status.descent
    altitude = status.altitude
    gps = status.gps
    gpsDetail = status.gpsDetail
    indicator = status.indicator
    pressure = status.pressure
    seaLevelPressure = status.seaLevelPressure
    seaLevelSource = status.seaLevelSource
    humidity = status.humidity
    points = status.points
    lastPointSequence = status.lastPoint?.sequence
    lastPointTime = status.lastPoint?.moment.wall
    self.board = board
    self.boardTime = boardTime
    self.devices = devices
    self.storage = storage
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

  public var description: String {
    switch self {
    case .unreachable(let path, let error):
      "cannot reach workoutd at \(path): \(error) (is the service running, and are you in its group?)"
    case .noReply(let path): "workoutd at \(path) closed the connection without a reply"
    case .badReply(let text): "workoutd sent a reply that is not understood: \(text.prefix(200))"
    }
  }
}

/// Sends one request to the service's control socket and returns its reply.
public func sendControl(_ request: ControlRequest, socketPath: String, timeout: Double = 10) throws -> ControlReply {
  let socket: UnixSocket
  do {
    socket = try UnixSocket.connect(path: socketPath)
    try socket.setTimeouts(seconds: timeout)
    try socket.writeAll(try ControlJSON.encode(request) + "\n")
  } catch let error as SystemError {
    throw ControlClientError.unreachable(path: socketPath, error)
  }
  guard let line = try socket.readLine(limit: 1 << 20) else { throw ControlClientError.noReply(path: socketPath) }
  do {
    return try ControlJSON.decode(ControlReply.self, from: line)
  } catch {
    throw ControlClientError.badReply(line)
  }
}
