/// Text from outside the board (a phone's name, a rider's note, a BLE device's advertised name)
/// made safe to print on a terminal or to write to the journal: control characters would
/// otherwise move the cursor, clear the screen, retitle the window (ECMA-48's C0 and C1 sets,
/// ESC and CSI among them) or start a forged log line, and the bidirectional overrides would
/// show the text in another order than it is (Unicode TR #9). Each is written as a visible
/// escape, `\n`, `\t`, `\r` or `\u{1B}`; everything else is kept as it is.
public enum TerminalText {
  public static func escaped(_ text: some StringProtocol) -> String {
    guard text.unicodeScalars.contains(where: needsEscape) else { return String(text) }
    var out = ""
    out.reserveCapacity(text.utf8.count + 8)
    for scalar in text.unicodeScalars {
      guard needsEscape(scalar) else {
        out.unicodeScalars.append(scalar)
        continue
      }
      switch scalar {
      case "\n": out += "\\n"
      case "\t": out += "\\t"
      case "\r": out += "\\r"
      default: out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      }
    }
    return out
  }

  static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F: true
    // Left-to-right and right-to-left marks, embeddings, overrides and isolates.
    case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
  }
}
