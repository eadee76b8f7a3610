/// What a rider notes from the phone, as HealthKit keeps it with a workout:
/// during the ride a drink (with its amount) or a note; after it, the rating of perceived
/// exertion (Borg's CR10 scale, 1-10, as HealthKit's workoutEffortScore) and a state of mind
/// (HKStateOfMind's seven valence labels, valence -1...1). Checked here, from the page's JSON
/// fields, before anything is written.
public struct Annotation: Sendable, Hashable {
  public enum Kind: String, Sendable, CaseIterable {
    case drink
    case note
    case rpe
    case mood
  }

  public var kind: Kind
  /// What the event's detail says: "drink 500 ml", the note's text, "RPE 7 (very hard)",
  /// "slightly pleasant".
  public var detail: String
  /// Millilitres, the RPE, or the valence.
  public var value: Double?

  /// HKStateOfMind's valence classifications, from very unpleasant to very pleasant.
  public static let moods = [
    "very unpleasant", "unpleasant", "slightly unpleasant", "neutral", "slightly pleasant", "pleasant",
    "very pleasant",
  ]
  /// Borg CR10 words for the RPE values (1 very light ... 10 maximal).
  static let effort = [
    1: "very light", 2: "light", 3: "moderate", 4: "somewhat hard", 5: "hard", 6: "hard", 7: "very hard",
    8: "very hard", 9: "extremely hard", 10: "maximal",
  ]
  public static let noteLimit = 280
  /// Notes a session keeps: a drink every ten minutes of a 24-hour ride and as many notes
  /// again fit; a flood does not grow the ride's files and JSON without end.
  public static let perSessionLimit = 500
  /// Notes one phone may send a minute: more than a rider's thumb, fewer than a script's.
  public static let perMinuteLimit = 12

  public enum Problem: Error, Sendable, Hashable, CustomStringConvertible {
    case unknownKind(String)
    case missing(String)
    case outOfRange(String)

    public var description: String {
      switch self {
      case .unknownKind(let kind):
        "no annotation \"\(kind.prefix(20))\" (known: \(Kind.allCases.map(\.rawValue).joined(separator: ", ")))"
      case .missing(let what): "missing \(what)"
      case .outOfRange(let what): what
      }
    }
  }

  /// From the page's fields: `kind`; `amount` (ml, drink: 1-3000, 250 when absent); `text`
  /// (note: 1-280 characters); `value` (rpe: a whole number 1-10); `mood` (one of `moods`).
  public init(kind: String, amount: Double?, text: String?, value: Double?, mood: String?) throws(Problem) {
    guard let parsed = Kind(rawValue: kind) else { throw .unknownKind(kind) }
    self.kind = parsed
    switch parsed {
    case .drink:
      let millilitres = amount ?? 250
      guard millilitres >= 1, millilitres <= 3000, millilitres.isFinite else {
        throw .outOfRange("a drink is 1 to 3000 ml")
      }
      detail = "drink \(Int(millilitres.rounded())) ml"
      self.value = millilitres.rounded()
    case .note:
      let trimmed = String(
        trimmingSpacesAndTabs(Substring((text ?? "").split(whereSeparator: \.isNewline).joined(separator: " "))))
      guard !trimmed.isEmpty else { throw .missing("the note's text") }
      guard trimmed.count <= Self.noteLimit else { throw .outOfRange("a note is at most \(Self.noteLimit) characters") }
      detail = trimmed
      self.value = nil
    case .rpe:
      guard let rating = value, rating == rating.rounded(), rating >= 1, rating <= 10 else {
        throw .outOfRange("the rating of perceived exertion is a whole number from 1 to 10")
      }
      detail = "RPE \(Int(rating)) (\(Self.effort[Int(rating)] ?? ""))"
      self.value = rating
    case .mood:
      guard let mood, let index = Self.moods.firstIndex(of: mood) else {
        throw .outOfRange("a mood is one of: \(Self.moods.joined(separator: ", "))")
      }
      detail = mood
      self.value = Double(index - 3) / 3
    }
  }
}
