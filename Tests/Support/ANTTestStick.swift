import SensorProtocols

/// A USB ANT stick as the host sees it: answers each command as a real one does (ANT Message
/// Protocol 9.5: Startup after a reset, the Capabilities or Channel ID asked for, a Channel
/// Response to every configuration command), and frames the data pages its channels receive.
/// Pure; `ANTStickLinkTests` drive it on a manual clock, `ANTScriptedStick` behind a socket (the
/// source's tests and `ant-bench`).
public struct ANTTestStick: Sendable {
  public var maxChannels: UInt8 = 8
  /// Advanced options 2 bit 1: the stick can add the sender's channel ID to data messages.
  public var extendedMessages = true
  public var answersReset = true
  /// A command (by message ID) this stick refuses, and the code it answers with.
  public var refused: (id: UInt8, code: UInt8)?
  /// The sensor each channel finds, for a Request Message 0x51.
  public var sensors: [UInt8: ANTChannelID] = [:]
  /// Every command the host sent, in order.
  public private(set) var commands: [ANTMessage] = []
  public private(set) var open: Set<UInt8> = []
  /// Lib Config's flags: 0x80 appends the channel ID to data messages.
  public private(set) var libConfig: UInt8 = 0

  public init() {}

  public mutating func answer(_ command: ANTMessage) -> [ANTMessage] {
    commands.append(command)
    let c = command.content
    switch command.id {
    case 0x4A:
      open = []
      libConfig = 0
      return answersReset ? [ANTMessage(id: 0x6F, content: [0x20])] : []
    case 0x4D where c.count >= 2 && c[1] == 0x54:
      // Advanced options 2 as an ANTUSB2 gives them (0x36), bit 1 the extended messages.
      return [ANTMessage(id: 0x54, content: [maxChannels, 3, 0x00, 0xBA, extendedMessages ? 0x36 : 0x34, 0])]
    case 0x4D where c.count >= 2 && c[1] == 0x51:
      let id = sensors[c[0]] ?? ANTChannelID(deviceNumber: 0, deviceType: 0, transmissionType: 0)
      return [ANTMessage(id: 0x51, content: [c[0]] + Self.bytes(id))]
    default:
      if let refused, refused.id == command.id {
        return [ANTMessage(id: 0x40, content: [c.first ?? 0, command.id, refused.code])]
      }
      // Open Channel, or Open Rx Scan Mode (channel 0).
      if command.id == 0x4B, let channel = c.first { open.insert(channel) }
      if command.id == 0x5B { open.insert(0) }
      if command.id == 0x6E, c.count >= 2 { libConfig = c[1] }
      return [ANTMessage(id: 0x40, content: [c.first ?? 0, command.id, 0x00])]
    }
  }

  /// A broadcast of `payload` on `channel` from the sensor `id`, its channel ID appended as
  /// Lib Config asked.
  public func broadcast(_ payload: [UInt8], on channel: UInt8, from id: ANTChannelID) -> ANTMessage {
    let extended = libConfig & 0x80 != 0 ? [0x80] + Self.bytes(id) : []
    return ANTMessage(id: 0x4E, content: [channel] + payload + extended)
  }

  /// A channel event (9.5.6.1): message ID 0x01 in a Channel Response.
  public static func event(_ code: ANTChannelCode, on channel: UInt8) -> ANTMessage {
    ANTMessage(id: 0x40, content: [channel, 0x01, code.rawValue])
  }

  public static func bytes(_ id: ANTChannelID) -> [UInt8] {
    [UInt8(id.deviceNumber & 0xFF), UInt8(id.deviceNumber >> 8), id.deviceType, id.transmissionType]
  }

  /// The message IDs of the commands sent, in order.
  public var commandIDs: [UInt8] { commands.map(\.id) }
}

/// ANT+ pages the tests and `ant-bench` send.
public enum ANTPages {
  /// Heart-rate page 0 (or a legacy page): beat `count` at `time` (1/1024 s), `bpm`.
  public static func heartRate(bpm: UInt8, count: UInt8, time: UInt16, toggle: Bool = false) -> [UInt8] {
    [toggle ? 0x80 : 0x00, 0xFF, 0xFF, 0xFF, UInt8(time & 0xFF), UInt8(time >> 8), count, bpm]
  }

  /// Heart-rate page 4: beat `count` at `time` and the beat before it at `previous` (1/1024 s),
  /// `bpm`; byte 1 is manufacturer-specific (Heart Rate profile 5.3.4).
  public static func heartRatePrevious(
    bpm: UInt8, count: UInt8, time: UInt16, previous: UInt16, toggle: Bool
  )
    -> [UInt8]
  {
    [
      (toggle ? 0x80 : 0x00) | 0x04, 0xFF, UInt8(previous & 0xFF), UInt8(previous >> 8), UInt8(time & 0xFF),
      UInt8(time >> 8), count, bpm,
    ]
  }

  /// Heart-rate page 7: battery `percent`.
  public static func heartRateBattery(percent: UInt8, count: UInt8, time: UInt16, bpm: UInt8, toggle: Bool) -> [UInt8] {
    [(toggle ? 0x80 : 0x00) | 0x07, percent, 0x00, 0x33, UInt8(time & 0xFF), UInt8(time >> 8), count, bpm]
  }

  /// Power page 0x10: event `count`, accumulated and instantaneous power, cadence.
  public static func powerOnly(count: UInt8, accumulated: UInt16, watts: UInt16, rpm: UInt8) -> [UInt8] {
    [
      0x10, count, 0xFF, rpm, UInt8(accumulated & 0xFF), UInt8(accumulated >> 8), UInt8(watts & 0xFF),
      UInt8(watts >> 8),
    ]
  }

  /// A combined speed and cadence message (device type 121).
  public static func speedCadence(crankTime: UInt16, crank: UInt16, wheelTime: UInt16, wheel: UInt16) -> [UInt8] {
    [crankTime, crank, wheelTime, wheel].flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
  }
}
