import Foundation
import LinuxSupport
import Synchronization
import Testing

/// The places for a costly job (a ride's file made for a download, issue 57): never more at
/// once than the places, a waiter given up on when asked, a place given back however the job
/// ends.
struct TurnsTests {
  private struct Failure: Error {}

  @Test func neverMoreJobsAtOnceThanPlacesAndEveryJobRuns() throws {
    let turns = Turns(places: 3)
    let inside = Mutex((now: 0, most: 0, ran: 0))
    let threads = try (0..<12).map { n in
      try DeviceThread.start(name: "turns \(n)") {
        _ = turns.run(giveUp: { false }) {
          inside.withLock {
            $0.now += 1; $0.most = max($0.most, $0.now)
          }
          usleep(5_000)  // so that the jobs overlap
          inside.withLock {
            $0.now -= 1; $0.ran += 1
          }
        }
      }
    }
    for thread in threads { thread.join() }
    let seen = inside.withLock { $0 }
    #expect(seen.ran == 12)
    #expect(seen.most <= 3 && seen.most >= 1)
    #expect(seen.now == 0)
  }

  @Test func aWaiterGivenUpOnRunsNothing() {
    let turns = Turns(places: 1)
    var ran = false
    let outer = turns.run(giveUp: { false }) { () -> Int? in
      turns.run(giveUp: { true }) {
        ran = true
        return 1
      }
    }
    #expect(outer == .some(nil), "the outer job ran; the inner one, with no place, did not")
    #expect(!ran)
    #expect(turns.run(giveUp: { true }) { 7 } == 7, "with a place free, giving up is never asked")
  }

  @Test func aPlaceIsGivenBackWhenTheJobThrows() throws {
    let turns = Turns(places: 1)
    #expect(throws: Failure.self) { try turns.run(giveUp: { false }) { throw Failure() } }
    #expect(turns.run(giveUp: { true }) { "free" } == "free")
  }

  @Test func aWaiterRunsWhenThePlaceIsFreed() throws {
    let turns = Turns(places: 1)
    let order = Mutex([String]())
    let holding = Mutex(false)
    let release = Mutex(false)
    let first = try DeviceThread.start(name: "turns first") {
      _ = turns.run(giveUp: { false }) {
        holding.withLock { $0 = true }
        while !release.withLock({ $0 }) { usleep(1_000) }
        order.withLock { $0.append("first") }
      }
    }
    while !holding.withLock({ $0 }) { usleep(1_000) }
    let waiting = Mutex(0)
    let second = try DeviceThread.start(name: "turns second") {
      _ = turns.run(
        giveUp: {
          // Asked only while waiting: a count that shows the second is blocked.
          waiting.withLock { $0 += 1 }
          return false
        }
      ) { order.withLock { $0.append("second") } }
    }
    while waiting.withLock({ $0 }) == 0 { usleep(1_000) }
    #expect(order.withLock { $0 }.isEmpty)
    release.withLock { $0 = true }
    first.join()
    second.join()
    #expect(order.withLock { $0 } == ["first", "second"])
  }
}
