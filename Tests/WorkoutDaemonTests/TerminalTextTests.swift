import Testing
import WorkoutControl

@Suite struct TerminalTextTests {
  @Test func plainTextAndOtherScriptsAreKeptAsTheyAre() {
    for text in ["Pixel 8", "iPhone de Zoë", "Ríos — 峠 ✓", "a\\b \"quoted\"", ""] {
      #expect(TerminalText.escaped(text) == text)
    }
  }

  @Test func controlCharactersBecomeVisibleEscapes() {
    // Clear the screen, then a forged second line, a bell and a C1 CSI.
    let hostile = "phone\u{1B}[2J\nREVOKED 1\u{07}\r\t\u{9B}31m\u{7F}\u{0}"
    let shown = TerminalText.escaped(hostile)
    #expect(shown == "phone\\u{1B}[2J\\nREVOKED 1\\u{7}\\r\\t\\u{9B}31m\\u{7F}\\u{0}")
    #expect(!shown.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
  }

  @Test func bidirectionalOverridesAreShownNotObeyed() {
    // "Trojan Source": an override that would print "evil" reversed.
    #expect(TerminalText.escaped("note \u{202E}live\u{202C}") == "note \\u{202E}live\\u{202C}")
    #expect(TerminalText.escaped("\u{2066}x\u{2069}\u{200F}") == "\\u{2066}x\\u{2069}\\u{200F}")
  }
}
