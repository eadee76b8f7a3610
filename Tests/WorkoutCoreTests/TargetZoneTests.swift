import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutCore

/// A workout's target zone range: the buzzer, the LED and an event when the announced zone
/// leaves it and when it comes back.
struct TargetZoneTests {
  /// Heart-rate zones 0-120, 120-140, 140-160, 160-175, 175-.
  func harness(target: String? = "2-3") throws -> EngineHarness {
    var settings = EngineSettings(countdown: 0, autoPause: .some(nil))
    settings.zones = [try ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175])]
    if let target { settings.targetZones = [try TargetZone(parsing: target, quantity: .heartRate)] }
    var h = EngineHarness(settings: settings)
    _ = h.press(.start)
    h.finishCountdown()
    return h
  }

  mutating func beat(_ h: inout EngineHarness, _ bpm: Int, seconds: Int) {
    for _ in 0..<seconds {
      h.advance(by: 1)
      h.send(.reading(.heartRate(bpm: bpm)))
      h.send(.tick)
    }
  }

  func targetEvents(_ h: EngineHarness) -> [SessionEvent] {
    h.commands.compactMap {
      if case .recordEvent(_, let event) = $0, [.targetZoneLeft, .targetZoneReached].contains(event.kind) {
        return event
      }
      return nil
    }
  }

  func chirps(_ h: EngineHarness) -> [ChirpPattern] {
    h.commands.compactMap {
      if case .chirp(let pattern) = $0 { return pattern }
      return nil
    }
  }

  @Test mutating func leavingAndComingBackAreSaidOnceEachAndTheLEDShowsItMeanwhile() throws {
    var h = try harness()
    beat(&h, 130, seconds: 60)
    #expect(targetEvents(h).isEmpty, "inside from the start: nothing to say")
    #expect(h.engine.indicator == .running)
    let before = chirps(h).count
    // A blip above for 2 s is not a zone change (it must hold 3 s), so no alert.
    beat(&h, 165, seconds: 2)
    beat(&h, 130, seconds: 10)
    #expect(targetEvents(h).isEmpty)
    beat(&h, 165, seconds: 30)
    let left = targetEvents(h)
    #expect(left.map(\.kind) == [.targetZoneLeft])
    #expect(left.first?.detail == "heart rate zone 4, above the target 2-3")
    #expect(left.first?.value == 4)
    #expect(h.engine.indicator == .offTarget)
    #expect(h.engine.status(at: h.now).targetZones?.first?.outside == true)
    #expect(Array(chirps(h).dropFirst(before)) == [.offTarget])
    beat(&h, 150, seconds: 10)
    let events = targetEvents(h)
    #expect(events.map(\.kind) == [.targetZoneLeft, .targetZoneReached])
    #expect(events.last?.detail == "heart rate back in the target 2-3 (zone 3)")
    #expect(h.engine.indicator == .running)
    #expect(Array(chirps(h).dropFirst(before)) == [.offTarget, .single])
    // Below is outside too.
    beat(&h, 100, seconds: 10)
    #expect(targetEvents(h).last?.detail == "heart rate zone 1, below the target 2-3")
  }

  @Test mutating func aFirstZoneOutsideTheTargetAlerts() throws {
    var h = try harness(target: "2")
    beat(&h, 150, seconds: 10)
    #expect(targetEvents(h).map(\.kind) == [.targetZoneLeft])
  }

  @Test mutating func setDuringTheRideItIsCheckedAtOnceAndCanBeCleared() throws {
    var h = try harness(target: nil)
    beat(&h, 165, seconds: 20)
    let target = try TargetZone(parsing: "2-3", quantity: .heartRate)
    #expect(h.send(.targetZone(.heartRate, target)).outcome == .accepted(.running))
    #expect(targetEvents(h).map(\.kind) == [.targetZoneLeft], "already above it")
    #expect(h.engine.indicator == .offTarget)
    #expect(h.send(.targetZone(.heartRate, nil)).outcome == .accepted(.running))
    #expect(h.engine.session?.targetZones == nil)
    #expect(h.engine.indicator == .running)
    beat(&h, 100, seconds: 10)
    #expect(targetEvents(h).count == 1, "no target, no alert")
  }

  @Test func refusedWithoutZonesOfItsQuantityOrBeyondThem() throws {
    var h = try harness(target: nil)
    #expect(
      h.send(.targetZone(.heartRate, try TargetZone(parsing: "4-6", quantity: .heartRate))).outcome
        == .refused(.targetBeyondZones, state: .running))
    #expect(
      h.send(.targetZone(.cyclingPower, try TargetZone(parsing: "3", quantity: .cyclingPower))).outcome
        == .refused(.noZonesForTarget, state: .running))
  }

  @Test mutating func setAfterAWorkoutHasStoppedItIsTheNextOnes() throws {
    var h = try harness(target: nil)
    _ = h.press(.stop)
    let stoppedState = h.engine.state
    #expect(stoppedState == .stopped || stoppedState == .ended)
    let target = try TargetZone(parsing: "2", quantity: .heartRate)
    #expect(h.send(.targetZone(.heartRate, target)).outcome == .accepted(stoppedState))
    #expect(h.engine.workoutPlan.nextTargets?.map(\.text) == ["2"])
    #expect(h.engine.session?.targetZones == nil, "the stopped workout keeps what it had")
    _ = h.press(.start)
    h.finishCountdown()
    #expect(h.engine.session?.targetZones?.map(\.text) == ["2"])
    #expect(h.engine.workoutPlan.nextTargets == nil)
  }

  @Test mutating func setBeforeAWorkoutItIsTheNextOnesOnly() throws {
    var settings = EngineSettings(countdown: 0, autoPause: .some(nil))
    settings.zones = [try ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175])]
    var h = EngineHarness(settings: settings)
    let target = try TargetZone(parsing: "3", quantity: .heartRate)
    #expect(h.send(.targetZone(.heartRate, target)).outcome == .accepted(.notStarted))
    _ = h.press(.start)
    h.finishCountdown()
    #expect(h.engine.session?.targetZones?.map(\.text) == ["3"])
    _ = h.press(.stop)
    _ = h.press(.start)
    #expect(h.engine.session?.targetZones == nil, "the next workout has the configured ones (none)")
  }

  @Test mutating func theTargetsAreRecordedAtTheStartAndWhenChanged() throws {
    var h = try harness()
    func sets() -> [String?] {
      h.commands.compactMap {
        if case .recordEvent(_, let event) = $0, event.kind == .targetZoneSet { return event.detail }
        return nil
      }
    }
    #expect(sets() == ["heartRate 2-3"])
    _ = h.send(.targetZone(.heartRate, try TargetZone(parsing: "4", quantity: .heartRate)))
    _ = h.send(.targetZone(.heartRate, nil))
    #expect(sets() == ["heartRate 2-3", "heartRate 4", "heartRate off"])
    #expect(TargetZone.fromEvents(sets().compactMap { $0 }) == nil)
    #expect(
      TargetZone.fromEvents(["heartRate 2-3", "cyclingPower 5", "speed 3", "heartRate x"])?.map(\.text) == ["2-3", "5"])
  }

  @Test func theRangeIsReadAndCheckedItself() throws {
    #expect(try TargetZone(parsing: "2-3", quantity: .heartRate).text == "2-3")
    #expect(try TargetZone(parsing: " 4 ", quantity: .heartRate).text == "4")
    for text in ["0", "3-2", "a", "1-10", "", "2-3-4"] {
      #expect(throws: ZoneConfigurationError.self, "\(text)") {
        try TargetZone(parsing: text, quantity: .heartRate)
      }
    }
  }

  @Test func aCheckpointFromBeforeTargetsDecodes() throws {
    let h = try harness()
    let session = try #require(h.engine.session)
    var json = try String(decoding: JSONEncoder().encode(session), as: UTF8.self)
    json = json.replacingOccurrences(of: "\"targetZones\":", with: "\"unknownKey\":")
    let decoded = try JSONDecoder().decode(ActiveSession.self, from: Data(json.utf8))
    #expect(decoded.targetZones == nil)
  }
}
