import GRDB
import WorkoutCore

extension Row {
  /// The column's value as `T`, or nil when it is NULL or of a type that does not convert (a
  /// damaged record's text in a REAL column): GRDB's subscript stops the process on the latter,
  /// and the resume path must never, whatever the record holds.
  func readable<T: DatabaseValueConvertible>(_ type: T.Type, _ column: String) -> T? {
    T.fromDatabaseValue(self[column] as DatabaseValue)
  }

  /// A measurement column: its number, or nil for NULL and for anything else (text, a blob).
  func measurement(_ column: String) -> Double? { readable(Double.self, column) }

  /// A whole-number column within `range`; nil for NULL and for anything else (text, a
  /// fraction, a number beyond what it counts), where `Int` arithmetic on it could trap.
  func count(_ column: String, in range: ClosedRange<Int>) -> Int? {
    guard let value = readable(Double.self, column), value.rounded() == value,
      value >= Double(range.lowerBound), value <= Double(range.upperBound)
    else { return nil }
    return Int(value)
  }

  /// The `monotonic` and `wall` columns as a moment, when both read as numbers.
  var moment: Moment? {
    guard let monotonic = readable(Double.self, "monotonic"), let wall = readable(Double.self, "wall") else {
      return nil
    }
    return Moment(monotonic: monotonic, wall: wall)
  }
}
