import Testing

@testable import SensorProtocols

private func frame(_ bytes: [UInt8]) -> [ANTFrameReader.Output] {
  var reader = ANTFrameReader()
  reader.append(bytes)
  var out: [ANTFrameReader.Output] = []
  while let o = reader.next() { out.append(o) }
  return out
}

private func messages(_ outputs: [ANTFrameReader.Output]) -> [ANTMessage] {
  outputs.compactMap { if case .message(let m) = $0 { m } else { nil } }
}

@Suite("ANT message framing, commands and the stick's messages")
struct ANTMessageTests {
  // Open channel 0: A4 01 4B 00, checksum A4^01^4B^00 = EE.
  @Test func encodesWithXORChecksum() {
    #expect(ANTCommand.openChannel(channel: 0).bytes == [0xA4, 0x01, 0x4B, 0x00, 0xEE])
    // Reset: A4 01 4A 00, A4^01^4A = EF.
    #expect(ANTCommand.resetSystem.bytes == [0xA4, 0x01, 0x4A, 0x00, 0xEF])
  }

  @Test func encodesEveryCommand() throws {
    let key = try #require(ANTNetworkKey([1, 2, 3, 4, 5, 6, 7, 8]))
    #expect(
      ANTCommand.setNetworkKey(network: 0, key: key).message
        == ANTMessage(id: 0x46, content: [0, 1, 2, 3, 4, 5, 6, 7, 8]))
    #expect(ANTNetworkKey([1, 2, 3]) == nil)
    #expect(!"\(key)".contains("1"))
    #expect(
      ANTCommand.assignChannel(channel: 1, type: .bidirectionalReceive, network: 0).message
        == ANTMessage(id: 0x42, content: [1, 0, 0]))
    #expect(
      ANTCommand.setChannelID(channel: 1, ANTChannelID(deviceNumber: 0x1234, deviceType: 120, transmissionType: 0))
        .message == ANTMessage(id: 0x51, content: [1, 0x34, 0x12, 120, 0]))
    // 8070 = 0x1F86, little-endian.
    #expect(
      ANTCommand.setChannelPeriod(channel: 1, period: 8070).message == ANTMessage(id: 0x43, content: [1, 0x86, 0x1F]))
    #expect(
      ANTCommand.setRFFrequency(channel: 1, offset: ANTCommand.antPlusFrequency).message
        == ANTMessage(id: 0x45, content: [1, 57]))
    #expect(ANTCommand.setSearchTimeout(channel: 1, timeout: 12).message == ANTMessage(id: 0x44, content: [1, 12]))
    #expect(ANTCommand.libConfig(flags: 0x80).message == ANTMessage(id: 0x6E, content: [0, 0x80]))
    #expect(ANTCommand.closeChannel(channel: 2).message == ANTMessage(id: 0x4C, content: [2]))
    #expect(ANTCommand.requestMessage(channel: 0, id: 0x54).message == ANTMessage(id: 0x4D, content: [0, 0x54]))
    // Request capabilities: A4 02 4D 00 54, A4^02^4D^00^54 = BF.
    #expect(ANTCommand.requestMessage(channel: 0, id: 0x54).bytes == [0xA4, 0x02, 0x4D, 0x00, 0x54, 0xBF])
  }

  @Test func readsMessagesSplitAcrossChunks() {
    let a = ANTCommand.openChannel(channel: 3).bytes
    let b = ANTMessage(id: 0x4E, content: [0, 1, 2, 3, 4, 5, 6, 7, 8]).bytes
    let all = a + b
    // Every split point, fed as two USB reads, gives the same two messages and nothing skipped.
    for cut in 0...all.count {
      var reader = ANTFrameReader()
      var out: [ANTFrameReader.Output] = []
      reader.append(all[..<cut])
      while let o = reader.next() { out.append(o) }
      reader.append(all[cut...])
      while let o = reader.next() { out.append(o) }
      #expect(
        out == [.message(ANTMessage(id: 0x4B, content: [3])), .message(ANTMessage(id: 0x4E, content: Array(0...8)))])
      #expect(reader.pendingCount == 0)
    }
    // One byte at a time.
    var reader = ANTFrameReader()
    var got: [ANTMessage] = []
    for byte in all {
      reader.append([byte])
      while let o = reader.next() { if case .message(let m) = o { got.append(m) } }
    }
    #expect(got.count == 2)
  }

  @Test func skipsNoiseBeforeSync() {
    let out = frame([0x00, 0x11] + ANTCommand.openChannel(channel: 0).bytes)
    #expect(out == [.skipped(.noSync(count: 2)), .message(ANTMessage(id: 0x4B, content: [0]))])
  }

  @Test func badChecksumResyncsWithoutLosingTheNextMessage() {
    let good = ANTMessage(id: 0x40, content: [0, 0x01, 0x07]).bytes
    var bad = ANTMessage(id: 0x4E, content: Array(0...8)).bytes
    bad[bad.count - 1] ^= 0xFF
    #expect(messages(frame(bad + good)) == [ANTMessage(id: 0x40, content: [0, 0x01, 0x07])])
    // A message cut short: its declared length swallows the next message's first bytes, so its
    // checksum fails; the next message is still found from the byte after the broken sync.
    let cut = Array(ANTMessage(id: 0x4E, content: Array(0...8)).bytes.prefix(6))
    let out = frame(cut + good + good)
    #expect(
      messages(out) == [
        ANTMessage(id: 0x40, content: [0, 0x01, 0x07]), ANTMessage(id: 0x40, content: [0, 0x01, 0x07]),
      ])
    #expect(out.contains { if case .skipped(.badChecksum) = $0 { true } else { false } })
  }

  @Test func impossibleLengthResyncs() {
    let good = ANTCommand.openChannel(channel: 0).bytes
    #expect(
      frame([0xA4, 0x00] + good) == [
        .skipped(.impossibleLength(0)), .skipped(.noSync(count: 1)), .message(ANTMessage(id: 0x4B, content: [0])),
      ])
    #expect(frame([0xA4, 42] + good).first == .skipped(.impossibleLength(42)))
    #expect(messages(frame([0xA4, 0xFF] + good)) == [ANTMessage(id: 0x4B, content: [0])])
  }

  @Test func waitsForTheRestOfAMessage() {
    var reader = ANTFrameReader()
    reader.append([0xA4, 0x09, 0x4E, 0, 1])
    #expect(reader.next() == nil)
    #expect(reader.pendingCount == 5)
  }

  @Test func decodesStartupCapabilitiesAndChannelMessages() throws {
    #expect(try ANTStickMessage(ANTMessage(id: 0x6F, content: [0x20])) == .startup(reason: 0x20))
    // An ANTUSB2's answer (mvillalba/python-ant#21: A4 06 54 08 03 00 BA 36 00 71): advanced
    // options 2 0x36, extended messages (0x02) among them.
    let caps = try ANTStickMessage(ANTMessage(id: 0x54, content: [8, 3, 0x00, 0xBA, 0x36, 0x00]))
    guard case .capabilities(let c) = caps else { Issue.record("\(caps)"); return }
    #expect(c.maxChannels == 8 && c.maxNetworks == 3 && c.advancedOptions == 0xBA && c.extendedMessagesEnabled)
    let old = try ANTStickMessage(ANTMessage(id: 0x54, content: [8, 3, 0x00, 0xBA, 0x80]))
    guard case .capabilities(let o) = old else { Issue.record("\(old)"); return }
    #expect(!o.extendedMessagesEnabled, "0x80 is FIT1, not extended messages")
    #expect(
      try ANTStickMessage(ANTMessage(id: 0x40, content: [1, 0x01, 0x07]))
        == .channelEvent(channel: 1, code: .channelClosed))
    #expect(
      try ANTStickMessage(ANTMessage(id: 0x40, content: [1, 0x42, 0x00]))
        == .channelResponse(channel: 1, to: 0x42, code: .responseNoError))
    #expect(ANTChannelCode.rxSearchTimeout.description == "EVENT_RX_SEARCH_TIMEOUT")
    #expect(
      try ANTStickMessage(ANTMessage(id: 0x51, content: [1, 0x34, 0x12, 0x78, 0x51]))
        == .channelID(channel: 1, ANTChannelID(deviceNumber: 0x1234, deviceType: 120, transmissionType: 0x51)))
    #expect(try ANTStickMessage(ANTMessage(id: 0xAE, content: [0])) == .other(ANTMessage(id: 0xAE, content: [0])))
  }

  @Test func decodesDataWithExtendedFields() throws {
    let page: [UInt8] = [0x84, 0xFF, 0x00, 0x10, 0x00, 0x04, 0x22, 0x48]
    #expect(
      try ANTStickMessage(ANTMessage(id: 0x4E, content: [2] + page))
        == .data(ANTChannelData(kind: .broadcast, channel: 2, payload: page, extended: ANTExtendedData())))
    // Flag 0x80: device 0x3039 (12345), type 120, transmission type 0x11; then RSSI and timestamp.
    let m = try ANTStickMessage(
      ANTMessage(id: 0x4F, content: [2] + page + [0xE0, 0x39, 0x30, 120, 0x11, 0x20, 0xC4, 0xA0, 0x00, 0x40]))
    guard case .data(let d) = m else { Issue.record("\(m)"); return }
    #expect(d.kind == .acknowledged && d.payload == page)
    #expect(d.extended.channelID == ANTChannelID(deviceNumber: 12345, deviceType: 120, transmissionType: 0x11))
    #expect(d.extended.channelID?.extendedDeviceNumber == 0x1_3039)
    #expect(d.extended.rssi == -60)
    #expect(d.extended.rxTimestamp == 0x4000)
    // A burst: channel in bits 0–4, sequence in bits 5–7.
    let burst = try ANTStickMessage(ANTMessage(id: 0x50, content: [0xA3] + page))
    #expect(
      burst == .data(ANTChannelData(kind: .burst(sequence: 5), channel: 3, payload: page, extended: ANTExtendedData())))
  }

  /// What a stick answered to a reset and a channel's set-up, as posted on the ANT forum
  /// (thisisant.com/forum/viewthread/3280): a startup after a command reset, then one
  /// RESPONSE_NO_ERROR per command, each naming the command's ID.
  @Test func readsARealStickSetUp() throws {
    let stream: [UInt8] = [
      0xA4, 0x01, 0x6F, 0x20, 0xEA, 0xA4, 0x03, 0x40, 0x00, 0x46, 0x00, 0xA1, 0xA4, 0x03, 0x40, 0x01, 0x42, 0x00, 0xA4,
      0xA4, 0x03, 0x40, 0x01, 0x51, 0x00, 0xB7, 0xA4, 0x03, 0x40, 0x01, 0x45, 0x00, 0xA3, 0xA4, 0x03, 0x40, 0x01, 0x43,
      0x00, 0xA5, 0xA4, 0x03, 0x40, 0x01, 0x4B, 0x00, 0xAD,
    ]
    var reader = ANTFrameReader()
    var decoded: [ANTStickMessage] = []
    // In USB-sized pieces of 5 bytes, which never line up with the messages.
    for start in stride(from: 0, to: stream.count, by: 5) {
      reader.append(stream[start..<min(start + 5, stream.count)])
      while let output = reader.next() {
        guard case .message(let message) = output else { Issue.record("\(output)"); continue }
        decoded.append(try ANTStickMessage(message))
      }
    }
    #expect(
      decoded == [
        .startup(reason: 0x20), .channelResponse(channel: 0, to: 0x46, code: .responseNoError),
        .channelResponse(channel: 1, to: 0x42, code: .responseNoError),
        .channelResponse(channel: 1, to: 0x51, code: .responseNoError),
        .channelResponse(channel: 1, to: 0x45, code: .responseNoError),
        .channelResponse(channel: 1, to: 0x43, code: .responseNoError),
        .channelResponse(channel: 1, to: 0x4B, code: .responseNoError),
      ])
  }

  @Test func refusesShortMessages() {
    let cases: [(UInt8, [UInt8], Int)] = [
      (0x6F, [], 1), (0x54, [8, 3, 0], 4), (0x40, [1, 0x01], 3), (0x4E, [0, 1, 2, 3, 4, 5, 6, 7], 9),
      (0x4F, [0], 9), (0x50, [], 9), (0x51, [1, 2, 3, 4], 5),
      // The flag byte announces a channel ID that is not there.
      (0x4E, [0, 1, 2, 3, 4, 5, 6, 7, 8, 0x80, 1, 2], 14),
      (0x4E, [0, 1, 2, 3, 4, 5, 6, 7, 8, 0x40, 1], 13),
      (0x4E, [0, 1, 2, 3, 4, 5, 6, 7, 8, 0x20, 1], 12),
    ]
    for (id, content, needed) in cases {
      #expect(throws: ANTDecodeError.truncated(id: id, needed: needed, available: content.count)) {
        try ANTStickMessage(ANTMessage(id: id, content: content))
      }
    }
  }
}
