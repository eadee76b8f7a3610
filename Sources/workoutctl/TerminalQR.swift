import CQRencode

/// A QR code (ISO/IEC 18004) drawn in a terminal: two modules a character cell, upper and lower
/// half blocks, dark on a light quiet zone of 4 modules (§6.3.8), as phone cameras expect.
enum TerminalQR {
  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  /// The modules of `text` (byte mode, level M): rows of true for dark.
  static func modules(_ text: String) throws -> [[Bool]] {
    guard let code = QRcode_encodeString8bit(text, 0, cqr_level_m()) else {
      throw Failure(description: "libqrencode could not encode \(text.utf8.count) bytes")
    }
    defer { QRcode_free(code) }
    let width = Int(code.pointee.width)
    let data = code.pointee.data!
    // Bit 0 of each byte is the module's colour (qrencode.h: "1=black/0=white").
    return (0..<width).map { row in (0..<width).map { column in data[row * width + column] & 1 == 1 } }
  }

  static func render(_ text: String) throws -> String {
    let inner = try modules(text)
    let quiet = 4
    let size = inner.count + 2 * quiet
    func dark(_ row: Int, _ column: Int) -> Bool {
      let r = row - quiet
      let c = column - quiet
      guard r >= 0, c >= 0, r < inner.count, c < inner.count else { return false }
      return inner[r][c]
    }
    // Light is a full block (the terminal's foreground), dark is a space: readable on the
    // dark terminals most people use. Each cell: the upper module and the lower one.
    var lines: [String] = []
    for row in stride(from: 0, to: size, by: 2) {
      var line = ""
      for column in 0..<size {
        switch (dark(row, column), row + 1 < size ? dark(row + 1, column) : false) {
        case (false, false): line += "\u{2588}"
        case (true, false): line += "\u{2584}"
        case (false, true): line += "\u{2580}"
        case (true, true): line += " "
        }
      }
      lines.append(line)
    }
    return lines.joined(separator: "\n")
  }
}
