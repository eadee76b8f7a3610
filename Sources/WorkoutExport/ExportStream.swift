import WorkoutStore

extension ExportFile {
  /// Gives a session's file in `format` to `emit` as it is made, a page of points at a time
  /// (memory stays flat however long the ride, and nothing is staged in a file): the same
  /// bytes as `write`'s, by the same encoder. `cancelled` is asked at every page.
  ///
  /// A format whose start is known only at its end (FIT's header holds the data's size, and
  /// the file's CRC covers it) is made twice: first counted and thrown away, to learn that
  /// header, then given with it in place. Reading the points twice costs time, not memory
  /// and not the SD card (a file staged on the state directory's disk would wear it and take
  /// the room kept for recording). The second making must end with the first's header, else
  /// the session changed meanwhile and the file would lie: that throws before its last bytes.
  /// Returns the bytes given.
  @discardableResult
  public static func stream(
    _ source: Source, from store: WorkoutStore, format: ExportFormat, cancelled: () -> Bool = { false },
    to emit: ([UInt8]) throws(ExportError) -> Void
  ) throws(ExportError) -> Int {
    func check() throws(ExportError) {
      if cancelled() { throw ExportError("session \(source.exported.session.id): stopped") }
    }
    var head: [UInt8] = []
    var through: Int?
    if format.headAtEnd {
      let counted = try encode(source, from: store, format: format) { _ throws(ExportError) in try check() }
      head = counted.end.head
      // The second making reads no point the first did not: one recorded meanwhile would
      // change the size.
      through = counted.lastSeq ?? -1
    }
    var given = 0
    var pending = head[...]
    let (end, _) = try encode(source, from: store, format: format, through: through) { bytes throws(ExportError) in
      try check()
      var bytes = bytes
      // The header's place, given as zeros by the encoder's `begin()`.
      let patched = min(pending.count, bytes.count)
      bytes.replaceSubrange(0..<patched, with: pending.prefix(patched))
      pending = pending.dropFirst(patched)
      given += bytes.count
      try emit(bytes)
    }
    guard end.head == head else {
      throw ExportError("session \(source.exported.session.id) changed while its \(format.rawValue) was made")
    }
    given += end.tail.count
    try emit(end.tail)
    return given
  }
}

extension ExportFormat {
  /// The file's first bytes are known only once it is all made (`ActivityEncoderEnd.head`).
  public var headAtEnd: Bool { self == .fit }
}
