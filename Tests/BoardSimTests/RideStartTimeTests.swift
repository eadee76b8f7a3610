import Foundation
import Testing

@testable import BoardSim

/// The ride file's start time is parsed without Foundation's ISO 8601 formatter (it loads ICU);
/// these check the parser against that formatter, which stays the reference here.
struct RideStartTimeTests {
  private static func reference(_ text: String) -> Double? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.date(from: text)?.timeIntervalSince1970
  }

  @Test func agreesWithFoundationOverFourHundredYears() {
    // A day every 37 days and a second every 7,919 s, from 1900 to 2300: leap years, the
    // centuries that are not leap years, 2000 that is, month ends, the first of March.
    var seconds = -2_208_988_800.0  // 1900-01-01T00:00:00Z
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    var checked = 0
    while seconds < 10_413_792_000 {  // 2300-01-01
      let text = formatter.string(from: Date(timeIntervalSince1970: seconds))
      #expect(ReplayRideReader.parseUTC(text) == seconds, "\(text)")
      seconds += 37 * 86_400 + 7_919
      checked += 1
    }
    #expect(checked > 3900)
  }

  @Test(arguments: [
    "2011-09-25T07:39:33Z", "2000-02-29T23:59:59Z", "1970-01-01T00:00:00Z", "2026-11-24T01:30:00+02:00",
    "2026-11-24T01:30:00-05:30", "2024-12-31T23:59:59Z", "1999-03-01T00:00:00Z",
  ])
  func agreesWithFoundation(_ text: String) {
    #expect(ReplayRideReader.parseUTC(text) == Self.reference(text))
    #expect(ReplayRideReader.parseUTC(text) != nil)
  }

  /// RFC 3339 (section 5.6) allows "t" and "z" in lower case.
  @Test func lowerCaseSeparators() {
    #expect(ReplayRideReader.parseUTC("1999-03-01t00:00:00z") == ReplayRideReader.parseUTC("1999-03-01T00:00:00Z"))
  }

  @Test(arguments: [
    "", "2011-09-25", "2011-09-25T07:39:33", "2011-09-25 07:39:33Z", "2011-13-01T00:00:00Z",
    "2011-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2011-04-31T00:00:00Z", "2011-09-25T24:00:00Z",
    "2011-09-25T07:60:00Z", "2011-09-25T07:39:60Z", "2011-09-25T07:39:33.5Z", "2011-09-25T07:39:33+0200",
    "2011-09-25T07:39:33+24:00", "2011-0a-25T07:39:33Z", "２０11-09-25T07:39:33Z",
  ])
  func refusesWhatIsNotAnRFC3339DateTime(_ text: String) {
    #expect(ReplayRideReader.parseUTC(text) == nil)
  }
}
