/// One ANT serial message (ANT Message Protocol and Usage, section 7.1 "Message Structure"):
///
/// | sync | length | message ID | content | checksum |
/// |---|---|---|---|---|
/// | 0xA4 | uint8: bytes of content | uint8 | `length` bytes | XOR of every byte before it |
///
/// The same framing is used both ways over a USB stick's bulk endpoints.
public struct ANTMessage: Sendable, Hashable {
  /// The sync byte that begins every message (section 7.1).
  public static let sync: UInt8 = 0xA4
  /// The longest content a message has: a data message with every extended field the ANT
  /// libraries size their buffers for (channel + 8 data + flag byte + 31 bytes of extension).
  /// A length byte above it is corruption, not a message.
  public static let maximumContentLength = 41

  public var id: UInt8
  public var content: [UInt8]

  public init(id: UInt8, content: [UInt8]) {
    self.id = id
    self.content = content
  }

  /// The XOR of sync, length, ID and content (section 7.1, "Checksum").
  static func checksum(id: UInt8, content: some Sequence<UInt8>, length: UInt8) -> UInt8 {
    content.reduce(sync ^ length ^ id, ^)
  }

  /// The message as it goes on the wire: sync, length, ID, content, checksum.
  public var bytes: [UInt8] {
    let length = UInt8(truncatingIfNeeded: content.count)
    return [Self.sync, length, id] + content + [Self.checksum(id: id, content: content, length: length)]
  }
}

/// Why bytes from the stick were skipped while looking for messages.
public enum ANTFramingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// Bytes before a sync byte (noise, or the rest of a broken message).
  case noSync(count: Int)
  /// A length byte of 0 or above `ANTMessage.maximumContentLength`: no message is that long.
  case impossibleLength(UInt8)
  /// The checksum byte did not match the message.
  case badChecksum(expected: UInt8, received: UInt8)

  public var description: String {
    switch self {
    case .noSync(let count): "ANT: \(count) byte(s) before a sync byte skipped"
    case .impossibleLength(let length): "ANT: impossible message length \(length), resynchronising"
    case .badChecksum(let expected, let received):
      "ANT: checksum \(hex8(received)) where \(hex8(expected)) was due, resynchronising"
    }
  }
}

/// Finds ANT messages in the bytes a USB stick sends, however its bulk reads split them.
///
/// Pure: `append` the bytes of each read, then take `next()` until it returns nil. On a bad
/// length or checksum only the sync byte is dropped and the search starts again from the byte
/// after it, so a good message whose start the broken one swallowed is still found.
public struct ANTFrameReader: Sendable {
  /// What `next()` found.
  public enum Output: Sendable, Hashable {
    case message(ANTMessage)
    /// Bytes dropped while resynchronising, and why (for a log line and a fault count).
    case skipped(ANTFramingError)
  }

  private var buffer: [UInt8] = []
  private var start = 0

  public init() {}

  /// Bytes held that are not yet a whole message.
  public var pendingCount: Int { buffer.count - start }

  public mutating func append(_ bytes: some Sequence<UInt8>) {
    // Drop what has been consumed before growing: the buffer holds at most one message more.
    if start > 0 {
      buffer.removeFirst(start)
      start = 0
    }
    buffer.append(contentsOf: bytes)
  }

  /// The next message, or the next run of skipped bytes; nil when more bytes are needed.
  public mutating func next() -> Output? {
    if let sync = buffer[start...].firstIndex(of: ANTMessage.sync) {
      if sync > start {
        defer { start = sync }
        return .skipped(.noSync(count: sync - start))
      }
    } else {
      guard pendingCount > 0 else { return nil }
      defer { start = buffer.count }
      return .skipped(.noSync(count: pendingCount))
    }
    guard pendingCount >= 2 else { return nil }
    let length = buffer[start + 1]
    guard length > 0, Int(length) <= ANTMessage.maximumContentLength else {
      start += 1
      return .skipped(.impossibleLength(length))
    }
    let total = Int(length) + 4
    guard pendingCount >= total else { return nil }
    let id = buffer[start + 2]
    let content = Array(buffer[(start + 3)..<(start + 3 + Int(length))])
    let expected = ANTMessage.checksum(id: id, content: content, length: length)
    let received = buffer[start + total - 1]
    guard expected == received else {
      start += 1
      return .skipped(.badChecksum(expected: expected, received: received))
    }
    start += total
    return .message(ANTMessage(id: id, content: content))
  }
}
