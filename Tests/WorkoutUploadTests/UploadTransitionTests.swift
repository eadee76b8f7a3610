import Testing
import WorkoutUpload

/// A job's transitions, each change asserted, on a pinned wall time.
struct UploadTransitionTests {
  let made = 1_700_000_000.0
  var queued: UploadJob { UploadJob(sessionID: 7, target: .strava, createdAt: made) }

  @Test func anAttemptStartsSendingAndClearsItsRetryTime() {
    var job = queued
    job.retryAt = made + 30
    let started = job.starting(at: made + 40)
    #expect(started.state == .sending)
    #expect(started.retryAt == nil)
    #expect(started.updatedAt == made + 40)
    #expect(started.createdAt == made)
    #expect(started.attempts == 0)
  }

  @Test func aWaitingJobStaysWaitingWhenItsAttemptStarts() {
    var job = queued
    job.state = .waiting
    job.platformUploadID = "u-1"
    let started = job.starting(at: made + 5)
    #expect(started.state == .waiting)
    #expect(started.platformUploadID == "u-1")
  }

  @Test func aJobAwaitingTheRiderIsNoAttemptAndComesBackAfterTheCeiling() {
    var job = queued.ending(with: .retry(after: nil, reason: "offline"), at: made + 1)
    job = job.awaiting("not logged in", at: made + 100)
    #expect(job.state == .queued)
    #expect(job.attempts == 1, "not counted")
    #expect(job.reason == "not logged in")
    #expect(job.retryAt == made + 100 + UploadBackoff().ceiling)
    #expect(job.updatedAt == made + 100)
  }

  @Test func theUploadIDMakesItWaitingAndCredentialsChangeNothing() {
    let sending = queued.starting(at: made + 1)
    let waiting = sending.keeping(.platformUploadID("123"), at: made + 2)
    #expect(waiting.state == .waiting)
    #expect(waiting.platformUploadID == "123")
    #expect(waiting.updatedAt == made + 2)
    #expect(sending.keeping(.credentials([1, 2, 3]), at: made + 3) == sending)
  }

  @Test func doneKeepsThePlatformsIDAndADuplicateIsDoneToo() {
    let sending = queued.starting(at: made + 1)
    let done = sending.ending(with: .done(platformID: "a99", duplicate: false), at: made + 2)
    #expect(done.state == .done)
    #expect(done.platformID == "a99")
    #expect(done.reason == nil)
    #expect(done.retryAt == nil)
    #expect(!done.isPending)
    let duplicate = sending.ending(with: .done(platformID: nil, duplicate: true), at: made + 2)
    #expect(duplicate.state == .done)
    #expect(duplicate.platformID == nil)
    #expect(duplicate.reason == "the platform had it already")
  }

  @Test func aRetryWaitsThePlatformsRetryAfterCapped() {
    let sending = queued.starting(at: made)
    let retried = sending.ending(with: .retry(after: 120, reason: "429 Too Many Requests"), at: made + 1)
    #expect(retried.state == .queued)
    #expect(retried.attempts == 1)
    #expect(retried.reason == "429 Too Many Requests")
    #expect(retried.retryAt == made + 1 + 120)
    #expect(retried.retryFromPlatform, "the platform's time: the network's return keeps it")
    #expect(!retried.starting(at: made + 200).retryFromPlatform)
    #expect(!sending.ending(with: .retry(after: nil, reason: "offline"), at: made).retryFromPlatform)
    #expect(!sending.ending(with: .retry(after: .nan, reason: "garbled"), at: made).retryFromPlatform)
    let dayLater = sending.ending(with: .retry(after: 86_400, reason: "429"), at: made)
    #expect(dayLater.retryAt == made + 3600, "capped at the ceiling")
    let atOnce = sending.ending(with: .retry(after: 0, reason: "503"), at: made)
    #expect(atOnce.retryAt == made + 1, "never at once: a second at least")
  }

  @Test func withoutRetryAfterTheBackoffDoublesFromItsFloorToItsCeiling() {
    var job = queued
    var waits: [Double] = []
    for step in 0..<10 {
      let now = made + Double(step) * 10_000
      job = job.starting(at: now).ending(with: .retry(after: nil, reason: "no network"), at: now)
      waits.append((job.retryAt ?? .nan) - now)
    }
    #expect(waits == [30, 60, 120, 240, 480, 960, 1920, 3600, 3600, 3600])
    #expect(job.attempts == 10)
    #expect(job.state == .queued)
    #expect(UploadBackoff().delay(afterAttempts: 10_000) == 3600)
    #expect(UploadBackoff().delay(retryAfter: .nan, attempts: 2) == 60)
  }

  @Test func aRetryOfAJobThePlatformHoldsStaysWaiting() {
    let waiting = queued.starting(at: made).keeping(.platformUploadID("u-5"), at: made + 1)
    let retried = waiting.ending(with: .retry(after: nil, reason: "connection reset"), at: made + 2)
    #expect(retried.state == .waiting, "asked after again, never sent twice")
    #expect(retried.platformUploadID == "u-5")
    #expect(retried.retryAt == made + 2 + 30)
    #expect(retried.attempts == 1)
  }

  @Test func aRejectionFailsWithTheReasonAndCountsNoRetry() {
    var job = queued
    job.retryAt = made + 30
    let failed = job.starting(at: made + 30).ending(with: .rejected(reason: "401: wrong API key"), at: made + 31)
    #expect(failed.state == .failed)
    #expect(failed.reason == "401: wrong API key")
    #expect(failed.retryAt == nil)
    #expect(failed.attempts == 0)
    #expect(!failed.isPending)
  }
}
