import Testing
import WorkoutControl
import WorkoutCore
import WorkoutWeb

@testable import WorkoutDaemon

/// A flood of notes into one session, as a script on a paired phone could send them past the
/// page's per-minute limit from several phones: the session keeps its first
/// `Annotation.perSessionLimit`, refuses the rest in words, and goes on recording.
@Suite struct AnnotationLimitTests {
  @Test func aSessionKeepsItsFirstNotesAndRefusesTheRestWhileItRecords() throws {
    let h = try ManualRuntime()
    h.startRiding()
    let pointsBefore = try h.points().count
    let drink = try Annotation(kind: "drink", amount: 250, text: nil, value: nil, mood: nil)
    let boxes = (0...Annotation.perSessionLimit).map { _ in ReplyBox() }
    for box in boxes { h.queue.post(.annotate(drink, sessionID: nil, box)) }
    h.run(for: 0)
    let replies = boxes.map { $0.wait(seconds: 0) }
    #expect(replies.prefix(Annotation.perSessionLimit).allSatisfy { $0?.ok == true })
    let refused = try #require(replies.last ?? nil)
    #expect(!refused.ok && refused.message == "session 1 has 500 notes already: no more are kept", "\(refused)")
    #expect(try h.events().filter { $0.kind == "annotation" }.count == Annotation.perSessionLimit)
    h.run(for: 3)
    #expect(try h.points().count >= pointsBefore + 3, "the ride goes on recording")
  }
}
