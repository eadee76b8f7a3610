/// Why a message from the stick, or a device profile's page, could not be decoded. Decoders
/// never trap.
public enum ANTDecodeError: Error, Sendable, Hashable, CustomStringConvertible {
  /// Message `id` (or a data page, id 0) needs `needed` bytes; only `available` came.
  case truncated(id: UInt8, needed: Int, available: Int)
  /// A field holds a value its layout allows but no rider's sensor measures (a power meter's
  /// 60,000 W): a faulty sensor, not a reading of the ride.
  case implausible(field: String, value: Int, maximum: Int, unit: String)
  /// A page decoder for page `expected` was given page `received`.
  case notPage(UInt8, received: UInt8)

  public var description: String {
    switch self {
    case .truncated(let id, let needed, let available):
      "ANT message \(hex8(id)): \(available) byte(s), its layout needs \(needed)"
    case .notPage(let expected, let received): "ANT+ page \(received) where page \(expected) was due"
    case .implausible(let field, let value, let maximum, let unit):
      "ANT+ \(field) \(value) \(unit) is beyond what a rider's sensor measures (at most \(maximum) \(unit))"
    }
  }
}

/// The code of a Channel Response / Event message (ANT Message Protocol 9.5.6.1, and the
/// codes' table in section 9.5.6): a response to a command, or an event on the channel.
public struct ANTChannelCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
  public var rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let responseNoError = Self(rawValue: 0x00)
  public static let rxSearchTimeout = Self(rawValue: 0x01)
  public static let rxFail = Self(rawValue: 0x02)
  public static let tx = Self(rawValue: 0x03)
  public static let transferRxFailed = Self(rawValue: 0x04)
  public static let transferTxCompleted = Self(rawValue: 0x05)
  public static let transferTxFailed = Self(rawValue: 0x06)
  public static let channelClosed = Self(rawValue: 0x07)
  public static let rxFailGoToSearch = Self(rawValue: 0x08)
  public static let channelCollision = Self(rawValue: 0x09)
  public static let transferTxStart = Self(rawValue: 0x0A)
  public static let channelInWrongState = Self(rawValue: 0x15)
  public static let channelNotOpened = Self(rawValue: 0x16)
  public static let channelIDNotSet = Self(rawValue: 0x18)
  public static let closeAllChannels = Self(rawValue: 0x19)
  public static let transferInProgress = Self(rawValue: 0x1F)
  public static let transferSequenceNumberError = Self(rawValue: 0x20)
  public static let transferInError = Self(rawValue: 0x21)
  public static let messageSizeExceedsLimit = Self(rawValue: 0x27)
  public static let invalidMessage = Self(rawValue: 0x28)
  public static let invalidNetworkNumber = Self(rawValue: 0x29)
  public static let invalidParameterProvided = Self(rawValue: 0x33)
  public static let serialQueueOverflow = Self(rawValue: 0x34)
  public static let queueOverflow = Self(rawValue: 0x35)

  private static let names: [UInt8: String] = [
    0x00: "RESPONSE_NO_ERROR", 0x01: "EVENT_RX_SEARCH_TIMEOUT", 0x02: "EVENT_RX_FAIL", 0x03: "EVENT_TX",
    0x04: "EVENT_TRANSFER_RX_FAILED", 0x05: "EVENT_TRANSFER_TX_COMPLETED", 0x06: "EVENT_TRANSFER_TX_FAILED",
    0x07: "EVENT_CHANNEL_CLOSED", 0x08: "EVENT_RX_FAIL_GO_TO_SEARCH", 0x09: "EVENT_CHANNEL_COLLISION",
    0x0A: "EVENT_TRANSFER_TX_START", 0x15: "CHANNEL_IN_WRONG_STATE", 0x16: "CHANNEL_NOT_OPENED",
    0x18: "CHANNEL_ID_NOT_SET", 0x19: "CLOSE_ALL_CHANNELS", 0x1F: "TRANSFER_IN_PROGRESS",
    0x20: "TRANSFER_SEQUENCE_NUMBER_ERROR", 0x21: "TRANSFER_IN_ERROR", 0x27: "MESSAGE_SIZE_EXCEEDS_LIMIT",
    0x28: "INVALID_MESSAGE", 0x29: "INVALID_NETWORK_NUMBER", 0x33: "INVALID_PARAMETER_PROVIDED",
    0x34: "EVENT_SERIAL_QUE_OVERFLOW", 0x35: "EVENT_QUE_OVERFLOW",
  ]

  public var description: String { Self.names[rawValue] ?? "code \(hex8(rawValue))" }
}

/// The stick's capabilities (ANT Message Protocol 9.5.7.4, "Capabilities"): the first four
/// bytes always, the later ones from newer sticks.
public struct ANTCapabilities: Sendable, Hashable {
  public var maxChannels: UInt8
  public var maxNetworks: UInt8
  public var standardOptions: UInt8
  public var advancedOptions: UInt8
  /// Advanced options 2, SensRcore channels, advanced options 3 and 4, as far as sent.
  public var moreOptions: [UInt8]

  /// Advanced options 2 bit 1, CAPABILITIES_EXT_MESSAGE_ENABLED (ANT Message Protocol 9.5.7.4;
  /// 0x02 in the ANT library's antdefines.h): the stick can add extended fields (the sender's
  /// channel ID) to received data messages.
  public var extendedMessagesEnabled: Bool { (moreOptions.first ?? 0) & 0x02 != 0 }
}

/// The extended fields after a data message's 8 bytes (ANT Message Protocol 7.1.1, "Flagged
/// Extended Data Message Format"), present as the flag byte says, in this order.
public struct ANTExtendedData: Sendable, Hashable {
  /// Flag 0x80: the transmitting device's channel ID, which a wildcard search needs.
  public var channelID: ANTChannelID?
  /// Flag 0x40: RSSI measurement type, value (dBm, signed) and threshold.
  public var rssi: Int8?
  /// Flag 0x20: the stick's receive time in 1/32768 s, rolling over every 2 s.
  public var rxTimestamp: UInt16?
}

/// A data message received on a channel: broadcast (0x4E), acknowledged (0x4F) or burst (0x50).
public struct ANTChannelData: Sendable, Hashable {
  public enum Kind: Sendable, Hashable {
    case broadcast
    case acknowledged
    /// Bits 5–7 of a burst's first byte: the sequence number (bit 7 the last packet).
    case burst(sequence: UInt8)
  }

  public var kind: Kind
  public var channel: UInt8
  /// The 8 data bytes: a device profile's page.
  public var payload: [UInt8]
  public var extended: ANTExtendedData
}

/// A message from the stick, decoded (ANT Message Protocol, section 9.5).
public enum ANTStickMessage: Sendable, Hashable {
  /// 0x6F: why the stick (re)started; bit values in 9.5.3.1 (0 power-on, 0x20 a Reset System
  /// command, 0x01 the reset line, 0x02 the watchdog, 0x80 a suspend).
  case startup(reason: UInt8)
  /// 0x54.
  case capabilities(ANTCapabilities)
  /// 0x40 whose message ID is 0x01: an event on the channel (a search timeout, a closed channel).
  case channelEvent(channel: UInt8, code: ANTChannelCode)
  /// 0x40 answering command `to`.
  case channelResponse(channel: UInt8, to: UInt8, code: ANTChannelCode)
  /// 0x4E, 0x4F, 0x50.
  case data(ANTChannelData)
  /// 0x51, in answer to a Request Message: the device the channel found.
  case channelID(channel: UInt8, ANTChannelID)
  /// A message this decoder does not read; kept whole.
  case other(ANTMessage)

  /// Decodes `message`. Content shorter than its layout, or a flag byte announcing extended
  /// fields that are not there, throws `truncated`; bytes after the fields read are ignored, as
  /// a newer stick may append some.
  public init(_ message: ANTMessage) throws(ANTDecodeError) {
    let c = message.content
    func need(_ n: Int) throws(ANTDecodeError) {
      if c.count < n { throw .truncated(id: message.id, needed: n, available: c.count) }
    }
    switch message.id {
    case 0x6F:
      try need(1)
      self = .startup(reason: c[0])
    case 0x54:
      try need(4)
      self = .capabilities(
        ANTCapabilities(
          maxChannels: c[0], maxNetworks: c[1], standardOptions: c[2], advancedOptions: c[3],
          moreOptions: Array(c[4...])))
    case 0x40:
      try need(3)
      let code = ANTChannelCode(rawValue: c[2])
      self =
        c[1] == 0x01 ? .channelEvent(channel: c[0], code: code) : .channelResponse(channel: c[0], to: c[1], code: code)
    case 0x4E, 0x4F, 0x50:
      try need(9)
      let kind: ANTChannelData.Kind =
        switch message.id {
        case 0x4E: .broadcast
        case 0x4F: .acknowledged
        default: .burst(sequence: c[0] >> 5)
        }
      // A burst's first byte holds the channel in bits 0–4 (9.5.5.3).
      let channel = message.id == 0x50 ? c[0] & 0x1F : c[0]
      var extended = ANTExtendedData()
      if c.count > 9 {
        let flags = c[9]
        var at = 10
        if flags & 0x80 != 0 {
          try need(at + 4)
          extended.channelID = ANTChannelID(
            deviceNumber: UInt16(c[at]) | UInt16(c[at + 1]) << 8, deviceType: c[at + 2], transmissionType: c[at + 3])
          at += 4
        }
        if flags & 0x40 != 0 {
          try need(at + 3)
          extended.rssi = Int8(bitPattern: c[at + 1])
          at += 3
        }
        if flags & 0x20 != 0 {
          try need(at + 2)
          extended.rxTimestamp = UInt16(c[at]) | UInt16(c[at + 1]) << 8
        }
      }
      self = .data(ANTChannelData(kind: kind, channel: channel, payload: Array(c[1..<9]), extended: extended))
    case 0x51:
      try need(5)
      self = .channelID(
        channel: c[0],
        ANTChannelID(deviceNumber: UInt16(c[1]) | UInt16(c[2]) << 8, deviceType: c[3], transmissionType: c[4]))
    default:
      self = .other(message)
    }
  }
}
