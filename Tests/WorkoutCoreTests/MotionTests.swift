import Foundation
import Testing

@testable import WorkoutCore

/// A board's motion at 100 Hz, made from the parts of a ride: the road's buzz on an upright
/// board, a jolt, a fall onto its side, lying still. Deterministic noise.
struct MotionTrace {
  static let g = MotionSample.gravity
  var samples: [MotionSample] = []
  var time = 0.0
  private var seed: UInt64 = 0x9E37_79B9_7F4A_7C15

  mutating func noise(_ amplitude: Double) -> Double {
    seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    return (Double(seed >> 11) / Double(1 << 53) * 2 - 1) * amplitude
  }

  /// `seconds` with gravity along `down` (a unit vector in the board's axes) and the road's
  /// buzz of `buzz` m/s² on each axis, `rotation` rad/s of noise on the gyroscope.
  mutating func hold(_ seconds: Double, down: Vector3 = Vector3(0, 0, 1), buzz: Double, rotation: Double = 0.05) {
    let end = time + seconds
    while time < end - 1e-9 {
      let acceleration = Vector3(
        down.x * Self.g + noise(buzz), down.y * Self.g + noise(buzz), down.z * Self.g + noise(buzz))
      samples.append(
        MotionSample(
          time: time, acceleration: acceleration, rotation: Vector3(noise(rotation), noise(rotation), noise(rotation))))
      time += 0.01
    }
  }

  /// A jolt: `peak` g for 30 ms along `axis`, the board spinning at 4 rad/s.
  mutating func jolt(_ peak: Double, axis: Vector3 = Vector3(0.6, 0, 0.8)) {
    for _ in 0..<3 {
      samples.append(MotionSample(time: time, acceleration: axis * (peak * Self.g), rotation: Vector3(4, 1, 0)))
      time += 0.01
    }
  }
}

/// The sensor's fall detector and the engine's alarm, together as the service runs them (the
/// engine told once a second whether the session rides).
struct Incident {
  var falls = FallDetector()
  var alarm = IncidentAlarm()
  /// The jolts the detector took as the hardest so far of an impact.
  var impacts: [Double] = []

  mutating func run(_ samples: [MotionSample], riding: (Double) -> Bool) -> [IncidentEvent] {
    var events: [IncidentEvent] = []
    var second = -1.0
    for sample in samples {
      if sample.time.rounded(.down) > second {
        second = sample.time.rounded(.down)
        if riding(sample.time) { alarm.riding(at: sample.time) }
        if let event = alarm.advance(to: sample.time).event { events.append(event) }
      }
      if let fall = falls.add(sample), let event = alarm.fall(fall, at: sample.time) { events.append(event) }
      if case .impacted(let impact) = falls.state, impacts.last != impact.at { impacts.append(impact.at) }
    }
    return events
  }
}

struct IncidentDetectorTests {
  func run(_ trace: MotionTrace, riding: (Double) -> Bool, incident: inout Incident) -> [IncidentEvent] {
    incident.run(trace.samples, riding: riding)
  }

  @Test func aFallOntoItsSideWhileRidingIsSuspectedThenConfirmed() throws {
    var trace = MotionTrace()
    trace.hold(20, buzz: 2)
    trace.jolt(6)
    trace.hold(2, down: Vector3(0.7, 0, 0.7), buzz: 3, rotation: 2)  // tumbling
    trace.hold(15, down: Vector3(1, 0, 0), buzz: 0.1)
    var incident = Incident()
    let events = run(trace, riding: { $0 < 20 }, incident: &incident)
    #expect(events.count == 1)
    guard case .suspected(let impactAt, let peak, let tilt, let at) = events.first else {
      Issue.record("no suspicion: \(events)")
      return
    }
    #expect(abs(impactAt - 20) < 0.02)
    #expect(peak > 5.9 * MotionTrace.g)
    #expect(tilt > 80 && tilt < 100, "on its side: \(tilt)")
    #expect(abs(at - (22.03 + 10)) < 0.1, "10 s of stillness after the tumbling")
    #expect(incident.alarm.confirmAt == at + 30)
    #expect(incident.alarm.advance(to: at + 29.9).event == nil)
    #expect(incident.alarm.advance(to: at + 30).event == .confirmed(at: at + 30))
    #expect(incident.alarm.cancel(at: at + 40) == .cancelled(at: at + 40), "a confirmed alarm is the rider's to stop")
    #expect(incident.alarm.phase == .quiet)
  }

  @Test func aButtonPressDuringTheCountdownCancels() {
    var trace = MotionTrace()
    trace.hold(10, buzz: 2)
    trace.jolt(5)
    trace.hold(12, down: Vector3(0, 1, 0), buzz: 0.1)
    var incident = Incident()
    let events = run(trace, riding: { $0 < 10 }, incident: &incident)
    guard case .suspected(_, _, _, let at) = events.last else {
      Issue.record("no suspicion: \(events)")
      return
    }
    #expect(incident.alarm.cancel(at: at + 5) == .cancelled(at: at + 5))
    #expect(incident.alarm.advance(to: at + 60).event == nil, "never confirmed once cancelled")
    #expect(incident.alarm.cancel(at: at + 61) == nil)
  }

  @Test func aPotholeRiddenOnIsNoIncident() {
    var trace = MotionTrace()
    trace.hold(10, buzz: 2)
    trace.jolt(6, axis: Vector3(0, 0, 1))
    trace.hold(30, buzz: 2.5)
    var incident = Incident()
    #expect(run(trace, riding: { _ in true }, incident: &incident).isEmpty)
    #expect(incident.falls.state == .watching)
  }

  @Test func aHardStopUprightAfterAJoltIsNoIncident() {
    var trace = MotionTrace()
    trace.hold(10, buzz: 2)
    trace.jolt(4)
    trace.hold(20, buzz: 0.1)
    var incident = Incident()
    #expect(run(trace, riding: { $0 < 10.5 }, incident: &incident).isEmpty)
  }

  @Test func aBikeLaidDownAtAStopIsNoIncidentEvenWithAClunk() {
    var trace = MotionTrace()
    trace.hold(10, buzz: 2)
    trace.hold(30, buzz: 0.1)  // stopped, upright
    trace.hold(1, down: Vector3(0.7, 0, 0.7), buzz: 1, rotation: 1)
    trace.jolt(4, axis: Vector3(1, 0, 0))
    trace.hold(20, down: Vector3(1, 0, 0), buzz: 0.1)
    var incident = Incident()
    #expect(run(trace, riding: { $0 < 10 }, incident: &incident).isEmpty)
  }

  @Test func aBoardStillTurningIsNotStill() {
    var trace = MotionTrace()
    trace.hold(10, buzz: 2)
    trace.jolt(6)
    // On its side but the wheel spinning the frame round: the gyroscope says it moves.
    trace.hold(20, down: Vector3(1, 0, 0), buzz: 0.1, rotation: 1.5)
    var incident = Incident()
    #expect(run(trace, riding: { $0 < 10 }, incident: &incident).isEmpty)
  }

  @Test func aSensorGoneQuietStillConfirmsOnTheDeadline() {
    var trace = MotionTrace()
    trace.hold(10, buzz: 2)
    trace.jolt(6)
    trace.hold(11, down: Vector3(-1, 0, 0), buzz: 0.1)
    var incident = Incident()
    let events = run(trace, riding: { $0 < 10 }, incident: &incident)
    guard let deadline = incident.alarm.confirmAt else {
      Issue.record("no countdown: \(events)")
      return
    }
    #expect(incident.alarm.advance(to: deadline).event == .confirmed(at: deadline))
  }
}

struct IncidentAlarmTests {
  let fall = Fall(impactAt: 100, peak: 60, tilt: 90, at: 111)

  /// What a restart finds in a session's events: the last suspected incident not answered.
  @Test func theEventsLeaveTheAlarmOnUntilTheRiderAnswers() {
    typealias Event = (kind: SessionEvent.Kind, value: Double?)
    let g = MotionSample.gravity
    let suspected: Event = (.incidentSuspected, 6)
    let confirmed: Event = (.incidentConfirmed, nil)
    let cancelled: Event = (.incidentCancelled, nil)
    let lap: Event = (.lap, 1)
    #expect(OpenIncident.left(by: [lap]) == nil)
    #expect(OpenIncident.left(by: [suspected, lap]) == OpenIncident(phase: .suspected, peak: 6 * g))
    #expect(OpenIncident.left(by: [suspected, confirmed]) == OpenIncident(phase: .confirmed, peak: 6 * g))
    #expect(OpenIncident.left(by: [suspected, confirmed, cancelled]) == nil)
    #expect(
      OpenIncident.left(by: [suspected, cancelled, (.incidentSuspected, 4)])
        == OpenIncident(phase: .suspected, peak: 4 * g))
    #expect(OpenIncident.left(by: [confirmed]) == nil, "a confirmation with no suspicion before it")
  }

  /// A resumed alarm sounds at once and its countdown starts over; confirmed, it goes on.
  @Test func aResumedAlarmCountsDownAgainOrGoesOn() {
    var alarm = IncidentAlarm()
    alarm.resume(OpenIncident(phase: .suspected, peak: 60), at: 500)
    #expect(alarm.phase == .suspected && alarm.peak == 60 && alarm.tilt == nil)
    #expect(alarm.remaining(at: 500) == 30)
    #expect(alarm.deadline == 505)
    #expect(alarm.advance(to: 530).event == .confirmed(at: 530))
    var confirmed = IncidentAlarm()
    confirmed.resume(OpenIncident(phase: .confirmed, peak: 60), at: 500)
    #expect(confirmed.phase == .confirmed && confirmed.remaining(at: 500) == nil)
    #expect(confirmed.deadline == 530)
    #expect(confirmed.cancel(at: 531) == .cancelled(at: 531))
    var quiet = IncidentAlarm()
    quiet.resume(OpenIncident(phase: .quiet, peak: 60), at: 500)
    #expect(!quiet.isOn)
  }

  /// The fall's impact is placed on the engine's clock by its age: the sensor's clock may be
  /// another.
  @Test func aFallIsAnIncidentOnlyWhenTheSessionRodeJustBeforeItsImpact() {
    var alarm = IncidentAlarm()
    alarm.riding(at: 1_000)
    #expect(alarm.fall(fall, at: 1_016.1) == nil, "the impact at 1005.1, riding last at 1000")
    #expect(!alarm.isOn)
    #expect(alarm.fall(fall, at: 1_015.9) == .suspected(impactAt: 1_004.9, peak: 60, tilt: 90, at: 1_015.9))
    #expect(alarm.fall(fall, at: 1_016) == nil, "one alarm at a time")
    var neverRode = IncidentAlarm()
    #expect(neverRode.fall(fall, at: 11) == nil)
  }

  @Test func theAlarmSoundsEveryFewSecondsThenSeldomerOnceConfirmed() {
    var alarm = IncidentAlarm()
    alarm.riding(at: 0)
    _ = alarm.fall(Fall(impactAt: 0, peak: 60, tilt: 90, at: 11), at: 11)
    #expect(alarm.deadline == 16)
    #expect(alarm.advance(to: 15.9).sounds == false)
    #expect(alarm.advance(to: 16).sounds == true)
    #expect(alarm.deadline == 21)
    #expect(alarm.remaining(at: 21) == 20)
    var sounds = 1
    var time = 16.0
    while let deadline = alarm.deadline, deadline <= 41 {
      time = deadline
      let (event, sounded) = alarm.advance(to: time)
      if sounded { sounds += 1 }
      if event != nil { #expect(event == .confirmed(at: 41)) }
    }
    #expect(sounds == 6, "at 16, 21, 26, 31, 36 and 41")
    #expect(alarm.phase == .confirmed)
    #expect(alarm.deadline == 71)
    #expect(alarm.cancel(at: 50) == .cancelled(at: 50))
    #expect(alarm.deadline == nil)
  }
}

struct MotionTrackerTests {
  /// A ride, a fall: one `MotionSecond` a second (the road's buzz in it), then the fall.
  @Test func oneSecondASecondAndTheFall() {
    var trace = MotionTrace()
    trace.hold(10, buzz: 2)
    trace.jolt(6)
    trace.hold(12, down: Vector3(1, 0, 0), buzz: 0.1)
    var tracker = MotionTracker()
    var seconds: [MotionSecond] = []
    var falls: [Fall] = []
    for sample in trace.samples {
      let output = tracker.add(sample)
      if let second = output.second { seconds.append(second) }
      if let fall = output.fall { falls.append(fall) }
    }
    #expect(seconds.count == 22, "each whole second before the last")
    #expect(seconds[3].vibration > 0.8 && seconds[3].vibration < 2, "\(seconds[3].vibration)")
    #expect(seconds[10].peak > 5.9 * MotionTrace.g, "the jolt's second")
    #expect(seconds[20].vibration < 0.2)
    #expect(falls.count == 1)
    #expect(abs((falls.first?.impactAt ?? 0) - 10) < 0.05)
  }
}

struct RoadFeelTests {
  @Test func aBoardAtRestFeelsNothingButGravity() throws {
    var meter = RoadFeelMeter()
    for step in 0..<100 {
      meter.add(MotionSample(time: Double(step) / 100, acceleration: Vector3(0, 0, MotionSample.gravity)))
    }
    let taken = meter.take()
    let second = try #require(taken)
    #expect(second.vibration < 1e-9)
    #expect(abs(second.peak - MotionSample.gravity) < 1e-9)
    #expect(second.samples == 100)
    #expect(meter.take() == nil, "a fresh second")
  }

  /// A 20 Hz buzz of amplitude 3 m/s² on the board's vertical: its RMS, 3/√2.
  @Test func aBuzzIsItsRMS() throws {
    var meter = RoadFeelMeter()
    for step in 0..<200 {
      let time = Double(step) / 100
      meter.add(
        MotionSample(time: time, acceleration: Vector3(0, 0, MotionSample.gravity + 3 * sin(2 * .pi * 20 * time + 0.3)))
      )
      if step == 99 { _ = meter.take() }  // the filter settles over the first second
    }
    let taken = meter.take()
    let second = try #require(taken)
    #expect(abs(second.vibration - 3 / 2.0.squareRoot()) < 0.15, "\(second.vibration)")
    #expect(second.peak > MotionSample.gravity + 2.5)
  }
}

struct LowPassTests {
  /// A sample earlier than the last (an IIO timestamp repeated, a record out of order) weighs
  /// nothing and leaves the last time where it was: the next sample's weight is the time since
  /// the latest, not since the stray one.
  @Test func aSampleFromBeforeTheLastWeighsNothingAndTimeDoesNotGoBack() {
    let step = 1 - exp(-1.0)
    var filter = LowPass(seconds: 1)
    #expect(filter.add(0, at: 10) == 0)
    #expect(abs(filter.add(10, at: 11) - 10 * step) < 1e-12)
    #expect(abs(filter.add(100, at: 10.5) - 10 * step) < 1e-12, "weighed as if no time passed")
    #expect(abs(filter.add(100, at: 11) - 10 * step) < 1e-12, "a repeated time: no weight either")
    let expected = 10 * step + (10 - 10 * step) * step
    #expect(abs(filter.add(10, at: 12) - expected) < 1e-12, "a second since 11, not 1.5 since 10.5")

    var vector = VectorLowPass(seconds: 1)
    vector.add(Vector3(0, 0, 0), at: 10)
    vector.add(Vector3(10, 0, -10), at: 11)
    vector.add(Vector3(100, 100, 100), at: 10.5)
    vector.add(Vector3(10, 0, -10), at: 12)
    let value = vector.value ?? .zero
    #expect(abs(value.x - expected) < 1e-12 && value.y == 0 && abs(value.z + expected) < 1e-12, "\(value)")
  }
}

/// The detector on recorded crashes (Tests/Fixtures/motion, see its MANIFEST.md): an e-scooter's
/// crash tests, with riding, kerb and step jolts, and the scooter righted seconds after each.
struct RecordedCrashTests {
  struct Recording {
    var name: String
    var samples: [MotionSample]
    var riding: [ClosedRange<Double>]
    /// Each crash: its impact, and the stillness that followed before the scooter was righted.
    var crashes: [(impact: Double, still: ClosedRange<Double>)]
  }

  static func load(_ name: String) throws -> [MotionSample] {
    var url = URL(fileURLWithPath: #filePath)
    url.deleteLastPathComponent()
    url.deleteLastPathComponent()
    let text = try String(contentsOf: url.appendingPathComponent("Fixtures/motion/\(name)"), encoding: .utf8)
    return text.split(separator: "\n").compactMap { line in
      let fields = line.split(separator: "\t").compactMap { Double($0) }
      guard fields.count == 4 else { return nil }
      return MotionSample(time: fields[0] / 1000, acceleration: Vector3(fields[1], fields[2], fields[3]))
    }
  }

  static func recordings() throws -> [Recording] {
    [
      Recording(
        name: "escooter-crashtest.tsv", samples: try load("escooter-crashtest.tsv"), riding: [42...93, 97...111],
        crashes: [(92.96, 94.0...95.5), (111.69, 113.2...114.7)]),
      Recording(
        name: "escooter-step-and-crash.tsv", samples: try load("escooter-step-and-crash.tsv"),
        riding: [25...58, 66...81],
        crashes: [(58.27, 59.3...62.3), (81.30, 81.8...84.0)]),
    ]
  }

  /// Runs `samples`, saying once a second whether the session rides; returns the events and
  /// the jolts it took as the hardest so far of an impact.
  static func run(
    _ samples: [MotionSample], riding: [ClosedRange<Double>]
  )
    -> (events: [IncidentEvent], impacts: [Double])
  {
    var incident = Incident()
    let events = incident.run(samples, riding: { time in riding.contains { $0.contains(time) } })
    return (events, incident.impacts)
  }

  /// The whole recordings as they are: every crash is taken as an impact, but the scooter was
  /// righted within seconds, and no jolt of the riding gives an alarm. Over 190 s of riding
  /// with dozens of jolts beyond the threshold: no false alarm.
  @Test func crashesRightedAtOnceAndTheJoltsOfRidingGiveNoAlarm() throws {
    for recording in try Self.recordings() {
      let (events, impacts) = Self.run(recording.samples, riding: recording.riding)
      #expect(events.isEmpty, "\(recording.name): \(events)")
      for crash in recording.crashes {
        #expect(impacts.contains { abs($0 - crash.impact) < 0.1 }, "\(recording.name): the crash at \(crash.impact) s")
      }
      #expect(impacts.count > recording.crashes.count, "\(recording.name): jolts of the riding beyond the threshold")
    }
  }

  /// Each recorded crash with its rider down: the recording to the end of the stillness after
  /// the impact, that stillness then held (its own samples again) for as long as the rider
  /// stays down. Suspected 10 s into the stillness, the scooter on its side.
  @Test func eachRecordedCrashWithTheRiderDownIsSuspected() throws {
    for recording in try Self.recordings() {
      for crash in recording.crashes {
        var samples = recording.samples.filter { $0.time <= crash.still.upperBound }
        let still = recording.samples.filter { crash.still.contains($0.time) }
        var shift = crash.still.upperBound - crash.still.lowerBound
        while shift < 15 {
          samples += still.map { MotionSample(time: $0.time + shift, acceleration: $0.acceleration) }
          shift += crash.still.upperBound - crash.still.lowerBound
        }
        let (events, _) = Self.run(samples, riding: recording.riding)
        let label = "\(recording.name), the crash at \(crash.impact) s"
        guard events.count == 1, case .suspected(let impactAt, let peak, let tilt, let at) = events[0] else {
          Issue.record("\(label): \(events)")
          continue
        }
        #expect(abs(impactAt - crash.impact) < 0.1, "\(label)")
        #expect(peak > 12 * MotionSample.gravity, "\(label): the clipped peak, \(peak)")
        #expect(tilt > 45, "\(label): \(tilt)°")
        #expect(at > crash.impact + 10 && at < crash.still.lowerBound + 10.5, "\(label): at \(at)")
      }
    }
  }
}

/// Steps on recorded walking and running (Tests/Fixtures/motion, see its MANIFEST.md).
struct StepCadenceTests {
  static func fixture(_ name: String) throws -> [[Double]] {
    var url = URL(fileURLWithPath: #filePath)
    url.deleteLastPathComponent()
    url.deleteLastPathComponent()
    let text = try String(contentsOf: url.appendingPathComponent("Fixtures/motion/\(name)"), encoding: .utf8)
    return text.split(separator: "\n").map { $0.split(separator: ",").compactMap { Double($0) } }
  }

  /// A phone in the front trouser pocket on a 207 s walk, its steps counted by a device worn
  /// for it (343): counted within 3 %, at the pace they were walked.
  @Test func aWalkInAPocketCountsItsSteps() throws {
    var counter = StepCadence()
    var cadences: [Double] = []
    var counted = 0.0
    for row in try Self.fixture("oxford-walking-frontpocket.csv") where row.count == 5 {
      let time = row[0] / 1000
      counter.add(MotionSample(time: time, acceleration: Vector3(row[1], row[2], row[3])))
      counted = row[4]
      if let cadence = counter.cadence(at: time) { cadences.append(cadence) }
    }
    #expect(counted == 343)
    #expect(abs(Double(counter.steps) - counted) / counted < 0.03, "\(counter.steps) steps of \(counted)")
    let median = cadences.sorted()[cadences.count / 2]
    #expect(abs(median - counted / 206.9 * 60) < 8, "a median of \(median) steps a minute")
  }

  /// A run (an LSM6DSO at 100 Hz, m/s² × 100): 15 steps at about 175 a minute, and no cadence
  /// 2 s after the last step.
  @Test func aRunCountsItsStepsAndItsCadence() throws {
    var counter = StepCadence()
    var time = 0.0
    var last: Double?
    for row in try Self.fixture("running-lsm6dso.csv") where row.count == 6 {
      counter.add(MotionSample(time: time, acceleration: Vector3(row[0] / 100, row[1] / 100, row[2] / 100)))
      if counter.lastStep == time { last = counter.cadence(at: time) ?? last }
      time += 0.01
    }
    #expect(counter.steps == 15)
    let cadence = try #require(last)
    #expect(cadence > 160 && cadence < 190, "\(cadence) steps a minute")
    let end = try #require(counter.lastStep)
    #expect(counter.cadence(at: end + 2.1) == nil)
  }

  @Test func aBoardAtRestTakesNoStep() {
    var counter = StepCadence()
    var trace = MotionTrace()
    trace.hold(30, buzz: 0.2)
    for sample in trace.samples { counter.add(sample) }
    #expect(counter.steps == 0)
  }
}
