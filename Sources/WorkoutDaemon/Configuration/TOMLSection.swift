import TOMLKit
import WorkoutExport

/// One `[section]` of the file: typed reads that remember which keys were used, so that any
/// key left over is reported as unknown.
final class TOMLSection {
  let name: String
  let table: TOMLTable?
  let file: String
  private var used: Set<String> = []
  private var problems: [String] = []

  init(_ name: String, in root: TOMLTable, file: String) {
    self.name = name
    self.file = file
    if let value = root[name] {
      table = value.table
      if table == nil { problems.append("\(file): \(name) must be a [\(name)] table") }
    } else {
      table = nil
    }
  }

  /// Export formats by name, each once, in the order given; nil when the key is absent.
  func formats(_ key: String, ifEmpty advice: String) -> [ExportFormat]? {
    guard let names = strings(key) else { return nil }
    var formats: [ExportFormat] = []
    for name in names {
      if let format = ExportFormat(rawValue: name) {
        if !formats.contains(format) { formats.append(format) }
      } else {
        let known = ExportFormat.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        problem(key, "names no format \"\(name)\" (known: \(known))")
      }
    }
    if names.isEmpty { problem(key, "is empty (\(advice))") }
    return formats
  }

  func problem(_ key: String, _ text: String) {
    problems.append("\(file): [\(name)] \(key) \(text)")
  }

  private func value(_ key: String) -> TOMLValueConvertible? {
    used.insert(key)
    return table?[key]
  }

  func string(_ key: String) -> String? {
    guard let value = value(key) else { return nil }
    guard let string = value.string else {
      problem(key, "must be a string")
      return nil
    }
    return string
  }

  func path(_ key: String) -> String? {
    guard let path = string(key) else { return nil }
    guard path.hasPrefix("/") || path.hasPrefix(".") else {
      problem(key, "must be an absolute path or start with ./ (got \"\(path)\")")
      return nil
    }
    return path
  }

  /// An array of strings.
  func strings(_ key: String) -> [String]? {
    guard let value = value(key) else { return nil }
    guard let array = value.array, array.allSatisfy({ $0.type == .string }) else {
      problem(key, "must be an array of strings, like [\"fit\", \"gpx\"]")
      return nil
    }
    return array.compactMap(\.string)
  }

  /// The key's string value if it is a string (without complaining if it is not).
  func peekString(_ key: String) -> String? {
    guard let value = table?[key], value.type == .string else { return nil }
    used.insert(key)
    return value.string
  }

  func bool(_ key: String) -> Bool? {
    guard let value = value(key) else { return nil }
    guard value.type == .bool, let bool = value.bool else {
      problem(key, "must be true or false")
      return nil
    }
    return bool
  }

  func number(_ key: String, _ range: ClosedRange<Double>) -> Double? {
    number(key, range, shown: Self.decimal)
  }

  /// A whole number (a port, a count, an I²C address) in `range`; `hexadecimal`: its bounds
  /// are shown as such an address is written (0x76), not as 118.
  func wholeNumber(_ key: String, _ range: ClosedRange<Int>, hexadecimal: Bool = false) -> Int? {
    let shown = hexadecimal ? Self.hexadecimal : Self.decimal
    guard let number = number(key, Double(range.lowerBound)...Double(range.upperBound), shown: shown) else {
      return nil
    }
    guard number == number.rounded() else {
      problem(key, "must be a whole number (got \(shown(number)))")
      return nil
    }
    return Int(number)
  }

  private func number(_ key: String, _ range: ClosedRange<Double>, shown: (Double) -> String) -> Double? {
    guard let value = value(key) else { return nil }
    let number: Double? =
      switch value.type {
      case .int: value.int.map(Double.init)
      case .double: value.double
      default: nil
      }
    guard let number, number.isFinite else {
      problem(key, "must be a number")
      return nil
    }
    guard range.contains(number) else {
      problem(key, "must be between \(shown(range.lowerBound)) and \(shown(range.upperBound)) (got \(shown(number)))")
      return nil
    }
    return number
  }

  /// As the file would say it: 4000, not Swift's 4000.0; 2.1 as it is.
  static func decimal(_ number: Double) -> String {
    number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : "\(number)"
  }

  private static func hexadecimal(_ number: Double) -> String {
    number == number.rounded() && number >= 0 && number < 1e15
      ? "0x" + String(Int64(number), radix: 16) : "\(number)"
  }

  func choice<T: RawRepresentable & CaseIterable>(_ key: String, _ type: T.Type) -> T? where T.RawValue == String {
    guard let string = string(key) else { return nil }
    guard let value = T(rawValue: string) else {
      problem(
        key, "must be one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")) (got \"\(string)\")")
      return nil
    }
    return value
  }

  /// The problems found, with every key that no read asked for, and what to write instead:
  /// the section that has such a key (`ftp` under [metrics] belongs in [rider]), and the keys
  /// this one has (every key of a section is asked for whether the file sets it or not).
  func finish(among sections: [TOMLSection]) -> [String] {
    if let table {
      for key in table.keys.sorted() where !used.contains(key) {
        let elsewhere = sections.filter { $0 !== self && $0.used.contains(key) }.map { "[\($0.name)]" }
        let belongs = elsewhere.isEmpty ? "" : "it belongs in \(elsewhere.joined(separator: " or ")); "
        problems.append(
          "\(file): [\(name)] unknown key \"\(key)\" (\(belongs)known here: \(used.sorted().joined(separator: ", ")))")
      }
    }
    return problems
  }
}
