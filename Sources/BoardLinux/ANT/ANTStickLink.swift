import SensorProtocols
import WorkoutCore

/// A USB ANT stick and its sensor channels as a value that takes the stick's messages and the
/// time and returns actions (ANT Message Protocol and Usage, D00000652): the start-up (reset,
/// capabilities, network key, channels), then each channel's data as readings and its events
/// as the sensor's condition. It does no I/O and reads no clock: `ANTStickSession` owns the
/// transport and the thread.
struct ANTStickLink {
  /// A condition for a `DeviceReporter`'s calls of the same names.
  enum Report: Sendable, Hashable {
    case available(String)
    case availableDetail(String)
    case failing(String)
    case recovered(String)
    case problem(DeviceProblem)
  }

  enum Action: Sendable, Hashable {
    /// Bytes for the stick (one framed message).
    case send([UInt8])
    /// What a sensor measured, for the engine.
    case post(EngineInput)
    /// The stick's own condition (available once configured, its detail as it changes).
    case stick(Report)
    /// The condition of the sensor on `channel` (its index in `settings.sensors`).
    case sensor(channel: Int, Report)
    /// A wildcard channel found this sensor: keep it, so the channel asks for it by number.
    case paired(channel: Int, ANTSensor)
    /// A scan heard this sensor (once each).
    case found(ANTSensor)
    /// The attempt is over: report it and start again after the backoff.
    case end(DeviceProblem)
  }

  /// How long the stick has to send Startup after Reset System (9.5.3.1 says it restarts
  /// within 500 ms; USB sticks take a little longer).
  static let startupTimeout = 3.0
  /// How long a command waits for its Channel Response, or a request for its answer.
  static let responseTimeout = 2.0
  /// Unusable pages in a row from one sensor before it is failing.
  static let malformedLimit = 5
  /// Wheel or crank pairs refused in a row before a sensor is failing (as `StrapLink`).
  static let refusedPairLimit = 5

  enum Mode: Sendable, Hashable {
    /// A channel for each of `settings.sensors`, as the service runs.
    case sensors
    /// Every ANT+ sensor in range, heard on channel 0 in Rx Scan Mode (`workoutctl sensors
    /// scan`); no sensor channel is opened.
    case scan
  }

  private enum Phase {
    case starting
    case configuring
    case running
  }

  /// What the stick owes an answer to.
  private enum Awaited {
    case startup
    /// A Channel Response (0x40) to the command, on its channel.
    case response(ANTCommand)
    /// Request Message: the message of id `answer` (or an error response to 0x4D).
    case answer(ANTCommand, id: UInt8)
  }

  let settings: ANTStickSettings
  let mode: Mode
  private var phase = Phase.starting
  private var awaited: (what: Awaited, deadline: Double)?
  private var queue: [ANTCommand] = []
  private var capabilities: ANTCapabilities?
  private var channels: [ANTSensorChannel]
  /// Runs of bytes the frame reader skipped, and messages it found that could not be decoded.
  private var unreadable = 0
  /// What a scan has heard.
  private var heard: Set<ANTSensor> = []

  init(settings: ANTStickSettings, mode: Mode = .sensors) {
    self.settings = settings
    self.mode = mode
    let sensors = mode == .sensors ? settings.sensors : []
    channels = sensors.map { ANTSensorChannel(sensor: $0, wheelCircumference: settings.wheelCircumference) }
  }

  /// Whether the stick adds the sender's channel ID to data messages (Lib Config 0x80).
  private var extendedMessages: Bool { capabilities?.extendedMessagesEnabled ?? false }

  /// The transport is open at `now`: the stick is reset (9.5.4.1), so no channel of an
  /// earlier run is left open.
  mutating func start(now: Double) -> [Action] {
    awaited = (.startup, now + Self.startupTimeout)
    return [.send(ANTCommand.resetSystem.bytes)]
  }

  /// When `timeElapsed` must be called if nothing comes: an answer's timeout, or the silence
  /// limit of a sensor that is sending.
  var deadline: Double? {
    let silences = channels.lazy.filter(\.available).map { $0.lastHeard + self.settings.silenceLimit }
    return ([awaited?.deadline].compactMap { $0 } + silences).min()
  }

  /// A message from the stick, received at `now`.
  mutating func received(_ message: ANTMessage, now: Double) -> [Action] {
    let decoded: ANTStickMessage
    do { decoded = try ANTStickMessage(message) } catch { return unreadableMessage() }
    switch decoded {
    case .startup(let reason):
      // Before the channels are up a Startup starts the configuration (again): a stick just
      // plugged in may still hold its power-on Startup when the reset's comes.
      guard phase == .running else {
        phase = .configuring
        queue = [.requestMessage(channel: 0, id: 0x54)]
        awaited = nil
        return sendNext(now: now)
      }
      // Its channels are gone with the restart: start over with a reset of our own.
      let hex = String(reason, radix: 16, uppercase: true)
      return [
        .end(DeviceProblem(condition: .failing, description: "the ANT stick restarted by itself (reason 0x\(hex))"))
      ]
    case .capabilities(let capabilities):
      guard case .answer(_, id: 0x54) = awaited?.what else { return [] }
      return configure(capabilities, now: now)
    case .channelResponse(let channel, let to, let code):
      return response(channel: channel, to: to, code: code, now: now)
    case .channelEvent(let channel, let code):
      // Before Startup, what comes is left from before the reset.
      return phase == .starting ? [] : event(code, on: Int(channel), now: now)
    case .data(let data):
      return phase == .starting ? [] : self.data(data, now: now)
    case .channelID(let channel, let id):
      var actions: [Action] = []
      if case .answer(.requestMessage(channel, _), id: 0x51) = awaited?.what {
        actions += sendNext(now: now)
      }
      return learned(id, on: Int(channel)) + actions
    case .other:
      return []
    }
  }

  /// The frame reader skipped bytes (noise, a broken message): counted in the stick's status.
  mutating func skipped(_ error: ANTFramingError) -> [Action] {
    unreadableMessage()
  }

  /// Time has passed: an answer that did not come, or a sensor gone silent.
  mutating func timeElapsed(now: Double) -> [Action] {
    if let awaited, now >= awaited.deadline {
      switch awaited.what {
      case .startup:
        return [.end(DeviceProblem(condition: .failing, description: "the ANT stick does not answer"))]
      case .response(let command), .answer(let command, _):
        let seconds = Int(Self.responseTimeout)
        return [
          .end(
            DeviceProblem(
              condition: .failing, description: "the ANT stick did not answer \(Self.describe(command)) in \(seconds) s"
            ))
        ]
      }
    }
    var actions: [Action] = []
    for index in channels.indices where channels[index].available {
      if now >= channels[index].lastHeard + settings.silenceLimit {
        let label = channels[index].label
        channels[index].lose()
        let problem = DeviceProblem(
          condition: .lost, description: "\(label) sent nothing for \(Int(settings.silenceLimit)) s")
        actions.append(.sensor(channel: index, .problem(problem)))
      }
    }
    return actions
  }

  // MARK: - Start-up

  /// Capabilities came: refuse what the stick cannot hold, else queue its configuration.
  private mutating func configure(_ capabilities: ANTCapabilities, now: Double) -> [Action] {
    self.capabilities = capabilities
    if mode == .scan { return configureScan(capabilities, now: now) }
    let wanted = channels.count
    guard wanted <= Int(capabilities.maxChannels) else {
      let problem = DeviceProblem(
        condition: .failing,
        description:
          "\(wanted) ANT+ sensors are set up but the ANT stick has \(capabilities.maxChannels) channels: remove \(wanted - Int(capabilities.maxChannels))"
      )
      return [.end(problem)]
    }
    queue = [.setNetworkKey(network: 0, key: settings.networkKey)]
    // 9.5.2.20: the sender's channel ID in every data message, so a wildcard channel's find
    // is known from its first message; without it, Request Message 0x51 asks for it.
    if capabilities.extendedMessagesEnabled { queue.append(.libConfig(flags: 0x80)) }
    for (index, sensor) in settings.sensors.enumerated() {
      let channel = UInt8(index)
      // 5.3: a slave (receive) channel on network 0 with the profile's ID, period and RF.
      queue += [
        .assignChannel(channel: channel, type: .bidirectionalReceive, network: 0),
        .setChannelID(channel: channel, sensor.channelID),
        .setChannelPeriod(channel: channel, period: sensor.profile.channelPeriod),
        .setRFFrequency(channel: channel, offset: ANTCommand.antPlusFrequency),
        .setSearchTimeout(channel: channel, timeout: searchTimeoutUnits),
        .openChannel(channel: channel),
      ]
    }
    return sendNext(now: now)
  }

  /// Rx Scan Mode needs the sender's channel ID in each message (Lib Config 0x80) to tell
  /// one sensor from another; channel 0 is a receiver with a wildcard ID on ANT+'s frequency.
  private mutating func configureScan(_ capabilities: ANTCapabilities, now: Double) -> [Action] {
    guard capabilities.extendedMessagesEnabled else {
      let problem = DeviceProblem(
        condition: .failing, description: "the ANT stick cannot scan: it does not send the sender's channel ID")
      return [.end(problem)]
    }
    queue = [
      .setNetworkKey(network: 0, key: settings.networkKey), .libConfig(flags: 0x80),
      .assignChannel(channel: 0, type: .bidirectionalReceive, network: 0),
      .setChannelID(channel: 0, .wildcard(deviceType: 0)),
      .setRFFrequency(channel: 0, offset: ANTCommand.antPlusFrequency), .openRxScanMode,
    ]
    return sendNext(now: now)
  }

  /// 9.5.2.12: in 2.5 s units; 255 would search for ever, so at most 254.
  private var searchTimeoutUnits: UInt8 {
    UInt8(min(254, max(1, (settings.searchTimeout / 2.5).rounded(.up))))
  }

  /// A Channel Response: the answer to the command awaited, or one this link did not ask for.
  private mutating func response(channel: UInt8, to id: UInt8, code: ANTChannelCode, now: Double) -> [Action] {
    let command: ANTCommand
    switch awaited?.what {
    case .response(let sent) where sent.message.id == id && sent.responseChannel == channel: command = sent
    case .answer(let sent, _) where id == 0x4D: command = sent
    default: return []
    }
    guard code == .responseNoError else {
      let problem = DeviceProblem(
        condition: .failing, description: "the ANT stick refused \(Self.describe(command)): \(code)")
      return [.end(problem)]
    }
    // A request is answered by the message it asks for, not by this.
    if case .answer = awaited?.what { return [] }
    return sendNext(now: now)
  }

  /// The previous command is answered: the next one, or the end of the configuration.
  private mutating func sendNext(now: Double) -> [Action] {
    awaited = nil
    guard !queue.isEmpty else {
      guard phase == .configuring else { return [] }
      phase = .running
      return [.stick(.available(stickDetail))]
    }
    let command = queue.removeFirst()
    if case .requestMessage(_, let id) = command {
      awaited = (.answer(command, id: id), now + Self.responseTimeout)
    } else {
      awaited = (.response(command), now + Self.responseTimeout)
    }
    return [.send(command.bytes)]
  }

  /// Queues `command` behind those not yet answered (one command at a time, 9.5.6.1).
  private mutating func enqueue(_ command: ANTCommand, now: Double) -> [Action] {
    queue.append(command)
    return awaited == nil ? sendNext(now: now) : []
  }

  private var stickDetail: String {
    var detail = "ANT stick, \(capabilities?.maxChannels ?? 0) channels; "
    detail += mode == .scan ? "scanning" : "\(channels.count) ANT+ sensor(s)"
    if unreadable > 0 { detail += "; \(unreadable) unreadable message(s) skipped" }
    return detail
  }

  private mutating func unreadableMessage() -> [Action] {
    unreadable += 1
    return phase == .running ? [.stick(.availableDetail(stickDetail))] : []
  }

  static func describe(_ command: ANTCommand) -> String {
    switch command {
    case .resetSystem, .libConfig: command.name
    case .setNetworkKey(let network, _): "\(command.name) on network \(network)"
    default: "\(command.name) on channel \(command.responseChannel)"
    }
  }

  // MARK: - Channels

  /// A channel event (9.5.6.1).
  private mutating func event(_ code: ANTChannelCode, on index: Int, now: Double) -> [Action] {
    guard channels.indices.contains(index) else { return [] }
    let label = channels[index].label
    switch code {
    case .rxSearchTimeout:
      // The search ended and the channel closed; EVENT_CHANNEL_CLOSED follows and reopens it.
      channels[index].lose()
      let problem = DeviceProblem(
        condition: .absent, description: "\(label) not found in \(Int(settings.searchTimeout)) s of search")
      return [.sensor(channel: index, .problem(problem))]
    case .rxFailGoToSearch:
      // 5.2.5.1: too many messages missed; the channel searches again by itself.
      guard channels[index].available else { return [] }
      channels[index].lose()
      let problem = DeviceProblem(condition: .lost, description: "\(label) out of range; searching again")
      return [.sensor(channel: index, .problem(problem))]
    case .channelClosed:
      var actions: [Action] = []
      if channels[index].available {
        channels[index].lose()
        let problem = DeviceProblem(condition: .lost, description: "\(label): the channel closed; reopening it")
        actions.append(.sensor(channel: index, .problem(problem)))
      }
      // A wildcard channel searches for any sensor again: its next find is learnt afresh.
      channels[index].forgetFind()
      return actions + enqueue(.openChannel(channel: UInt8(index)), now: now)
    default:
      return []
    }
  }

  /// A data message: the sensor is there; its page is a reading.
  private mutating func data(_ data: ANTChannelData, now: Double) -> [Action] {
    if mode == .scan { return scanned(data) }
    let index = Int(data.channel)
    guard channels.indices.contains(index) else { return [] }
    if case .burst = data.kind { return [] }
    var actions: [Action] = []
    channels[index].lastHeard = now
    if let id = data.extended.channelID {
      actions += learned(id, on: index)
    } else if channels[index].sensor.isWildcard, channels[index].found == nil, !channels[index].idRequested,
      !extendedMessages
    {
      // 9.5.7.2 (Channel ID): once found, a wildcard channel's ID is the sensor's.
      channels[index].idRequested = true
      actions += enqueue(.requestMessage(channel: UInt8(index), id: 0x51), now: now)
    }
    if !channels[index].available {
      channels[index].available = true
      actions.append(.sensor(channel: index, .available(channels[index].detail)))
    }
    return actions + channels[index].readings(of: data.payload, at: now, channel: index)
  }

  /// A message heard in Rx Scan Mode: its sender, if of a profile the service reads.
  private mutating func scanned(_ data: ANTChannelData) -> [Action] {
    guard let id = data.extended.channelID, id.deviceNumber != 0,
      let profile = ANTProfile(deviceType: id.deviceType)
    else { return [] }
    let sensor = ANTSensor(profile: profile, deviceNumber: id.deviceNumber, transmissionType: id.transmissionType)
    return heard.insert(sensor).inserted ? [.found(sensor)] : []
  }

  /// The channel on `index` knows its sensor's ID (extended data, or 0x51's answer).
  private mutating func learned(_ id: ANTChannelID, on index: Int) -> [Action] {
    guard channels.indices.contains(index), id.deviceNumber != 0 else { return [] }
    let sensor = ANTSensor(
      profile: channels[index].sensor.profile, deviceNumber: id.deviceNumber, transmissionType: id.transmissionType)
    guard channels[index].found != sensor else { return [] }
    channels[index].found = sensor
    var actions: [Action] = []
    if channels[index].sensor.isWildcard { actions.append(.paired(channel: index, sensor)) }
    if channels[index].available { actions.append(.sensor(channel: index, .availableDetail(channels[index].detail))) }
    return actions
  }
}
