import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// The compatibility rule (`ResumeCheckpoint`): a change to what a checkpoint stores (a stored
/// property of `ActiveSession` or of anything inside it, added, renamed or retyped) bumps
/// `ResumeCheckpoint.format`, so that another release's checkpoint is rebuilt from the record
/// rather than read wrongly. This pins the shape of format `ResumeCheckpoint.format`:
/// `Tests/Fixtures/checkpoint/format-N.shape`, every type reached from a live multisport
/// session with zones, targets, laps and every sensor, with its stored properties' names and
/// types (Swift's reflection: what the synthesized `Codable` stores).
///
/// When it fails: bump `ResumeCheckpoint.format`, then write the new format's file with
/// `WRITE_CHECKPOINT_SHAPE=1 swift test --filter CheckpointShapeTests` and commit it beside the
/// old ones (a shipped format's file is never edited).
@Suite("checkpoint shape: the compatibility rule's guard")
struct CheckpointShapeTests {
  static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/checkpoint")

  /// A session that reaches as much of the checkpoint's types as a ride can: two activities,
  /// heart-rate and power zones and targets, a lap, GPS, barometer, heart rate, power, cadence
  /// and wheel speed, auto-pause on.
  static func richSession() throws -> ActiveSession {
    var settings = EngineSettings(activity: .cycling, countdown: 0)
    settings.activityPlan = [.cycling, .running]
    settings.zones = [
      try ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175]),
      try ZoneConfiguration(quantity: .cyclingPower, source: .user, boundaries: [150, 200, 250, 300]),
    ]
    settings.targetZones = [try TargetZone(parsing: "2-3", quantity: .heartRate)]
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    var position = GeoPoint(latitude: 46.05, longitude: 14.5)
    func ride(_ seconds: Int) {
      for second in 0..<seconds {
        h.send(.reading(.barometer(pressure: 95_000 - Double(second), temperature: 20, humidity: 50)))
        h.send(.reading(.power(watts: 180 + second)))
        h.send(.reading(.cadence(rpm: 85)))
        h.send(.reading(.wheelSpeed(metersPerSecond: 6, distance: 6)))
        h.ride(seconds: 1, speed: 6, heartRate: 130 + second, from: &position)
      }
    }
    ride(20)
    _ = h.press(.lap)
    ride(10)
    h.send(.nextActivity(.running, .gpio))
    ride(10)
    return try #require(h.engine.session)
  }

  /// Every type reached from `value` (the first value of each type met), as
  /// "Type { name: Type, ... }" lines, sorted.
  static func shape(of value: Any) -> [String] {
    // A private type's name carries its context's address, which changes from build to build.
    func typeName(_ type: Any.Type) -> String {
      String(reflecting: type).replacingOccurrences(
        of: "\\(unknown context at \\$[0-9a-f]+\\)", with: "(private)", options: .regularExpression)
    }
    var described: [String: String] = [:]
    func visit(_ value: Any) {
      let mirror = Mirror(reflecting: value)
      let name = typeName(type(of: value))
      switch mirror.displayStyle {
      case .struct?, .class?:
        guard described[name] == nil else {
          for child in mirror.children { visit(child.value) }
          return
        }
        described[name] =
          "\(name) { "
          + mirror.children.map { "\($0.label ?? "_"): \(typeName(type(of: $0.value)))" }
          .joined(separator: ", ") + " }"
        for child in mirror.children { visit(child.value) }
      case .enum?:
        if described[name] == nil { described[name] = name }
        for child in mirror.children {
          described["\(name).\(child.label ?? "_")"] =
            "\(name).\(child.label ?? "_")(\(typeName(type(of: child.value))))"
          visit(child.value)
        }
      case .optional?, .collection?, .set?, .dictionary?, .tuple?:
        for child in mirror.children { visit(child.value) }
      default:
        break
      }
    }
    visit(value)
    return described.values.sorted()
  }

  @Test func theCheckpointsShapeIsFormatItSays() throws {
    let shape = Self.shape(of: try Self.richSession()).joined(separator: "\n") + "\n"
    let file = Self.fixtures.appendingPathComponent("format-\(ResumeCheckpoint.format).shape")
    if ProcessInfo.processInfo.environment["WRITE_CHECKPOINT_SHAPE"] != nil {
      try FileManager.default.createDirectory(at: Self.fixtures, withIntermediateDirectories: true)
      try shape.write(to: file, atomically: true, encoding: .utf8)
    }
    let pinned = try String(contentsOf: file, encoding: .utf8)
    let now = Set(shape.split(separator: "\n")), then = Set(pinned.split(separator: "\n"))
    #expect(
      now == then,
      """
      what a checkpoint stores is no longer format \(ResumeCheckpoint.format): bump ResumeCheckpoint.format and \
      write its shape (see CheckpointShapeTests). Now, not in format \(ResumeCheckpoint.format): \
      \(now.subtracting(then).sorted()); in it, not now: \(then.subtracting(now).sorted())
      """)
  }

  /// The guard guards: a stored property more, or one retyped, changes the shape.
  @Test func aChangedPropertyChangesTheShape() {
    struct Before { var distance: Double; var laps: [Int] }
    struct Added { var distance: Double; var laps: [Int]; var ascent: Double }
    struct Retyped { var distance: Float; var laps: [Int] }
    let before = Self.shape(of: Before(distance: 1, laps: [1]))
    #expect(
      before
        != Self.shape(of: Added(distance: 1, laps: [1], ascent: 2)).map {
          $0.replacingOccurrences(of: "Added", with: "Before")
        })
    #expect(
      before
        != Self.shape(of: Retyped(distance: 1, laps: [1])).map {
          $0.replacingOccurrences(of: "Retyped", with: "Before")
        })
    #expect(before == Self.shape(of: Before(distance: 7, laps: [])), "values are not the shape")
  }
}
