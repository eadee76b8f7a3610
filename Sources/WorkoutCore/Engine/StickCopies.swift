/// The copies onto USB sticks as the copier and its unit report them (`StickCopyReport`), one
/// entry per stick (`usb:<UUID>`), so two sticks plugged at once are two copies: what the
/// `usbStick` device's condition says. A stick whose copy failed stays a fault until that stick
/// is plugged in again (and fails again, or finishes the job); another stick's success does not
/// hide it. A stick that cannot take rides at all (`refused`) is a fault until it is pulled:
/// nothing of ours is waiting for it, the rider only has to be told.
public struct StickCopies: Sendable, Hashable {
  /// Sticks whose unit has not reported its end (the unmount) yet, by target.
  public private(set) var underWay: [String: StickCopyReport] = [:]
  /// Sticks whose last copy failed, oldest first (at most `failuresKept`).
  public private(set) var failed: [StickCopyReport] = []
  /// What was last said of a stick that did not fail.
  public private(set) var latest = ""

  static let failuresKept = 8

  public init() {}

  /// Whether a copy is under way (for the LED).
  public var isCopying: Bool { underWay.values.contains { $0.phase == .copying } }

  /// What one report changes.
  public struct Outcome: Sendable, Hashable {
    /// The `usbStick` device's condition now.
    public var status: DeviceStatus
    /// The line for the log when the condition itself does not change (the device watch logs
    /// a change).
    public var logLine: (level: LogLevel, text: String)?
    /// A whole copy is unmounted: safe to pull (a long chirp).
    public var safeToRemove = false

    public static func == (a: Outcome, b: Outcome) -> Bool {
      a.status == b.status && a.safeToRemove == b.safeToRemove && a.logLine?.level == b.logLine?.level
        && a.logLine?.text == b.logLine?.text
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(status) }
  }

  public mutating func take(_ report: StickCopyReport) -> Outcome {
    var report = report
    if underWay[report.target] == nil, report.namesOnlyTheDevice,
      let known = underWay.values.first(where: { report.isAbout($0) })
    {
      report.target = known.target  // the UUID, which the unit could not read from a pulled stick
    }
    let target = report.target
    let before = underWay[target]
    var line: (LogLevel, String)?
    var safe = false
    switch report.phase {
    case .copying:
      underWay[target] = report
      failed.removeAll { $0.target == target }  // a new attempt: it fails again or finishes
      latest = "copying to \(target): \(report.detail); do not remove it"
      line = (.info, "USB stick \(target): copying \(report.detail)")
    case .copied:
      underWay[target] = report
      latest = "\(target): \(report.detail); unmounting"
    case .failed, .refused:
      underWay[target] = report
      fail(target, report.detail)
      line = (.warning, "USB stick \(target): \(report.detail)")
    case .removed:
      // Only a refused stick's unit says this; a stick it never told of is no news.
      guard before?.phase == .refused else { return Outcome(status: status(adding: nil)) }
      underWay[target] = nil
      failed.removeAll { $0.target == target }
      line = (.info, "USB stick \(target) removed")
    case .unmounted:
      underWay[target] = nil
      switch before?.phase {
      case .copied?:
        failed.removeAll { $0.target == target }
        latest = "\(target): \(before?.detail ?? "copied"); safe to remove"
        line = (.notice, "USB stick \(latest)")
        safe = true
      case .failed?:
        line = (.info, "USB stick \(target) unmounted after the failed copy")
      case .refused?, .removed?:
        line = (.info, "USB stick \(target) was not mounted: \(report.detail)")
      case .copying?, .unmounted?, nil:
        let why =
          before?.phase == .copying
          ? "removed or stopped before the copy finished (\(report.detail))"
          : "would not mount, or the copier did not start: \(report.detail)"
        fail(target, why + "; plug it in again to finish")
        line = (.warning, "USB stick \(target): \(why)")
      }
    }
    return Outcome(status: status(adding: safe ? latest : nil), logLine: line, safeToRemove: safe)
  }

  private mutating func fail(_ target: String, _ detail: String) {
    failed.removeAll { $0.target == target }
    failed.append(StickCopyReport(phase: .failed, target: target, detail: detail))
    if failed.count > Self.failuresKept { failed.removeFirst(failed.count - Self.failuresKept) }
  }

  private func status(adding news: String?) -> DeviceStatus {
    guard let last = failed.last else {
      return DeviceStatus(device: .usbStick, condition: .available, detail: latest)
    }
    var detail = "\(last.target): \(last.detail)"
    if failed.count > 1 { detail += " (and \(failed.count - 1) more sticks not finished)" }
    if let news { detail += "; \(news)" }
    return DeviceStatus(device: .usbStick, condition: .failing, detail: detail)
  }
}
