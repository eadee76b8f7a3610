/// A multipart/form-data body (RFC 7578) of text fields and one file, as Strava's POST /uploads
/// takes it.
struct StravaMultipart {
  var fields: [(name: String, value: String)]
  var fileField: String
  var fileName: String
  var file: [UInt8]

  /// The boundary: a fixed stem, lengthened by a counter until it occurs nowhere in the file
  /// (RFC 2046 §5.1.1: it must not appear in the parts; at most 70 characters). The same
  /// file gives the same body on every attempt.
  var boundary: String {
    var counter = 0
    while true {
      let candidate = "workoutd-strava-\(counter)-7f3c1a9e"
      if !Self.contains(file, Array(candidate.utf8)) { return candidate }
      counter += 1
    }
  }

  var contentType: String { "multipart/form-data; boundary=\(boundary)" }

  var body: [UInt8] {
    let boundary = boundary
    var out: [UInt8] = []
    func line(_ text: String) { out += Array((text + "\r\n").utf8) }
    for field in fields {
      line("--\(boundary)")
      line("Content-Disposition: form-data; name=\"\(Self.quoted(field.name))\"")
      line("")
      line(field.value)
    }
    line("--\(boundary)")
    line(
      "Content-Disposition: form-data; name=\"\(Self.quoted(fileField))\"; filename=\"\(Self.quoted(fileName))\"")
    line("Content-Type: application/octet-stream")
    line("")
    out += file
    line("")
    line("--\(boundary)--")
    return out
  }

  /// A name or file name inside a quoted-string: RFC 7578 §4.2 has `"` and line breaks
  /// percent-encoded, as browsers do.
  static func quoted(_ text: String) -> String {
    text.replacingAll("\"", with: "%22").replacingAll("\r", with: "%0D").replacingAll("\n", with: "%0A")
  }

  static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    let first = needle[0]
    var index = 0
    while index <= haystack.count - needle.count {
      if haystack[index] == first && haystack[index..<index + needle.count].elementsEqual(needle) { return true }
      index += 1
    }
    return false
  }
}

extension String {
  fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
    var out = ""
    for character in self {
      if character == target { out += replacement } else { out.append(character) }
    }
    return out
  }
}
