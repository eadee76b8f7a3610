/// `--state-dir` and `--runtime-dir` given before the subcommand, as an administrator types
/// them (`workoutctl --state-dir /srv/ride status`): ArgumentParser takes a command's options
/// only after its name, and these belong to each subcommand, so they are moved to after the
/// subcommand's words (before a `--`, if one ends the options).
enum LeadingOptions {
  static let names: Set<String> = ["--state-dir", "--runtime-dir"]

  static func moved(_ arguments: [String]) -> [String] {
    var leading: [String] = []
    var rest = arguments[...]
    while let first = rest.first {
      if names.contains(first) {
        leading.append(contentsOf: rest.prefix(2))
        rest = rest.dropFirst(2)
      } else if let equals = first.firstIndex(of: "="), names.contains(String(first[..<equals])) {
        leading.append(first)
        rest = rest.dropFirst()
      } else {
        break
      }
    }
    guard !leading.isEmpty else { return arguments }
    var result = Array(rest)
    result.insert(contentsOf: leading, at: result.firstIndex(of: "--") ?? result.endIndex)
    return result
  }
}
