/// An ANT network key: 8 bytes a user supplies. The ANT+ key is licensed by its owner, so
/// none is built in; its description never shows the bytes.
public struct ANTNetworkKey: Sendable, Hashable, CustomStringConvertible {
  public let bytes: [UInt8]

  /// nil unless `bytes` holds exactly 8 bytes (ANT Message Protocol 9.5.2.7, "Set Network Key").
  public init?(_ bytes: [UInt8]) {
    guard bytes.count == 8 else { return nil }
    self.bytes = bytes
  }

  public var description: String { "ANTNetworkKey(8 bytes)" }
}

/// An ANT channel's identity (ANT Message Protocol 5.2.3, "Channel ID"): device number, device
/// type (bit 7 the pairing bit) and transmission type.
public struct ANTChannelID: Sendable, Hashable {
  public var deviceNumber: UInt16
  /// Bits 0–6 the device type (120 heart rate, 11 power, 121/122/123 speed and cadence);
  /// bit 7 the pairing request.
  public var deviceType: UInt8
  public var transmissionType: UInt8

  public init(deviceNumber: UInt16, deviceType: UInt8, transmissionType: UInt8) {
    self.deviceNumber = deviceNumber
    self.deviceType = deviceType
    self.transmissionType = transmissionType
  }

  /// A wildcard for a search: any device of `deviceType` (0 matches any number and type).
  public static func wildcard(deviceType: UInt8) -> ANTChannelID {
    ANTChannelID(deviceNumber: 0, deviceType: deviceType, transmissionType: 0)
  }

  public var pairing: Bool { deviceType & 0x80 != 0 }

  /// The device type without the pairing bit.
  public var deviceTypeNumber: UInt8 { deviceType & 0x7F }

  /// ANT+ extends the device number to 20 bits with the transmission type's upper nibble
  /// (ANT+ Common Pages, "Transmission Type").
  public var extendedDeviceNumber: UInt32 { UInt32(transmissionType >> 4) << 16 | UInt32(deviceNumber) }

  var bytes: [UInt8] {
    var out: [UInt8] = []
    out.appendLE(deviceNumber)
    out += [deviceType, transmissionType]
    return out
  }
}

/// A message the host sends the stick (ANT Message Protocol, section 9.5 "Configuration
/// Messages" and "Control Messages"), made into bytes by `message.bytes`.
public enum ANTCommand: Sendable, Hashable {
  /// Channel types of Assign Channel (9.5.2.2): a receiver, as every sensor channel here is.
  public enum ChannelType: UInt8, Sendable, Hashable {
    case bidirectionalReceive = 0x00
    case bidirectionalTransmit = 0x10
    case sharedBidirectionalReceive = 0x20
    case receiveOnly = 0x40
  }

  /// 0x4A: the stick restarts and answers with a Startup message.
  case resetSystem
  /// 0x46.
  case setNetworkKey(network: UInt8, key: ANTNetworkKey)
  /// 0x42.
  case assignChannel(channel: UInt8, type: ChannelType, network: UInt8)
  /// 0x51: the device to search for (zeros as wildcards).
  case setChannelID(channel: UInt8, ANTChannelID)
  /// 0x43: the message period in 1/32768 s (heart rate 8070, power 8182, speed and cadence 8086).
  case setChannelPeriod(channel: UInt8, period: UInt16)
  /// 0x45: 2400 MHz + `offset` MHz; ANT+ uses 57 (2457 MHz).
  case setRFFrequency(channel: UInt8, offset: UInt8)
  /// 0x44: in units of 2.5 s; 255 searches forever.
  case setSearchTimeout(channel: UInt8, timeout: UInt8)
  /// 0x6E Lib Config: which extended fields received data messages carry (0x80 the channel
  /// ID, 0x40 RSSI, 0x20 the timestamp).
  case libConfig(flags: UInt8)
  case openChannel(channel: UInt8)
  case closeChannel(channel: UInt8)
  /// 0x4D: asks the stick to send message `id` (0x54 capabilities, 0x51 a channel's ID).
  case requestMessage(channel: UInt8, id: UInt8)
  /// 0x5B (9.5.4.5): channel 0, set up as a receiver, hears every device on its RF frequency
  /// at once; the stick's other channels stay closed meanwhile.
  case openRxScanMode

  /// ANT+'s RF channel offset: 2457 MHz.
  public static let antPlusFrequency: UInt8 = 57

  public var message: ANTMessage {
    switch self {
    case .resetSystem: ANTMessage(id: 0x4A, content: [0x00])
    case .setNetworkKey(let network, let key): ANTMessage(id: 0x46, content: [network] + key.bytes)
    case .assignChannel(let channel, let type, let network):
      ANTMessage(id: 0x42, content: [channel, type.rawValue, network])
    case .setChannelID(let channel, let id): ANTMessage(id: 0x51, content: [channel] + id.bytes)
    case .setChannelPeriod(let channel, let period):
      ANTMessage(id: 0x43, content: [channel, UInt8(truncatingIfNeeded: period), UInt8(period >> 8)])
    case .setRFFrequency(let channel, let offset): ANTMessage(id: 0x45, content: [channel, offset])
    case .setSearchTimeout(let channel, let timeout): ANTMessage(id: 0x44, content: [channel, timeout])
    case .libConfig(let flags): ANTMessage(id: 0x6E, content: [0x00, flags])
    case .openChannel(let channel): ANTMessage(id: 0x4B, content: [channel])
    case .closeChannel(let channel): ANTMessage(id: 0x4C, content: [channel])
    case .requestMessage(let channel, let id): ANTMessage(id: 0x4D, content: [channel, id])
    case .openRxScanMode: ANTMessage(id: 0x5B, content: [0x00])
    }
  }

  /// The bytes to write to the stick.
  public var bytes: [UInt8] { message.bytes }

  /// The channel (or network) byte a Channel Response to it carries: its content's first.
  public var responseChannel: UInt8 { message.content.first ?? 0 }

  /// Its name in the ANT Message Protocol (section 9.5), for a problem that names it.
  public var name: String {
    switch self {
    case .resetSystem: "Reset System"
    case .setNetworkKey: "Set Network Key"
    case .assignChannel: "Assign Channel"
    case .setChannelID: "Channel ID"
    case .setChannelPeriod: "Channel Period"
    case .setRFFrequency: "Channel RF Frequency"
    case .setSearchTimeout: "Search Timeout"
    case .libConfig: "Lib Config"
    case .openChannel: "Open Channel"
    case .closeChannel: "Close Channel"
    case .requestMessage: "Request Message"
    case .openRxScanMode: "Open Rx Scan Mode"
    }
  }
}
