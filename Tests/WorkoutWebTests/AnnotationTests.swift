import Testing

@testable import WorkoutWeb

struct AnnotationTests {
  @Test func aDrinkHasItsAmountAndADefault() throws {
    let drink = try Annotation(kind: "drink", amount: 500, text: nil, value: nil, mood: nil)
    #expect(drink.detail == "drink 500 ml" && drink.value == 500)
    #expect(try Annotation(kind: "drink", amount: nil, text: nil, value: nil, mood: nil).value == 250)
    for amount in [0.0, -5, 3001, .nan, .infinity] {
      #expect(throws: Annotation.Problem.self) {
        _ = try Annotation(kind: "drink", amount: amount, text: nil, value: nil, mood: nil)
      }
    }
  }

  @Test func aNoteIsOneTrimmedLineOfAtMost280Characters() throws {
    let note = try Annotation(kind: "note", amount: nil, text: "  flat\ntyre \t", value: nil, mood: nil)
    #expect(note.detail == "flat tyre" && note.value == nil)
    #expect(throws: Annotation.Problem.missing("the note's text")) {
      _ = try Annotation(kind: "note", amount: nil, text: " \n ", value: nil, mood: nil)
    }
    #expect(throws: Annotation.Problem.self) {
      _ = try Annotation(kind: "note", amount: nil, text: String(repeating: "x", count: 281), value: nil, mood: nil)
    }
  }

  @Test func theRatingOfPerceivedExertionIsAWholeNumberFrom1To10() throws {
    #expect(try Annotation(kind: "rpe", amount: nil, text: nil, value: 7, mood: nil).detail == "RPE 7 (very hard)")
    #expect(try Annotation(kind: "rpe", amount: nil, text: nil, value: 1, mood: nil).detail == "RPE 1 (very light)")
    for value in [0.0, 11, 6.5] {
      #expect(throws: Annotation.Problem.self) {
        _ = try Annotation(kind: "rpe", amount: nil, text: nil, value: value, mood: nil)
      }
    }
  }

  @Test func aMoodIsOneOfTheSevenValenceLabels() throws {
    #expect(try Annotation(kind: "mood", amount: nil, text: nil, value: nil, mood: "very pleasant").value == 1)
    #expect(try Annotation(kind: "mood", amount: nil, text: nil, value: nil, mood: "very unpleasant").value == -1)
    #expect(try Annotation(kind: "mood", amount: nil, text: nil, value: nil, mood: "neutral").value == 0)
    #expect(throws: Annotation.Problem.self) {
      _ = try Annotation(kind: "mood", amount: nil, text: nil, value: nil, mood: "grumpy")
    }
    #expect(throws: Annotation.Problem.unknownKind("selfie")) {
      _ = try Annotation(kind: "selfie", amount: nil, text: nil, value: nil, mood: nil)
    }
  }
}
