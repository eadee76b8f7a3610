import Foundation
import LinuxSupport
import Testing

/// The engine's queue: every posted element is taken, in order, by the one consumer; a wait
/// ends at its deadline when nothing comes, and at once when something does.
struct InputQueueTests {
  @Test func aWaitWithNothingPostedEndsAtItsDeadlineNotBefore() {
    let queue = InputQueue<Int>()
    let start = SystemClocks.monotonic()
    #expect(queue.wait(until: start + 0.2) == false)
    #expect(SystemClocks.monotonic() >= start + 0.2)
    #expect(queue.next(until: start - 1) == nil, "a deadline already passed does not wait")
  }

  @Test func aPostFromAnotherThreadWakesAWaiterWithNoDeadline() throws {
    let queue = InputQueue<String>()
    let poster = Thread {
      usleep(50_000)
      queue.post("fix")
    }
    poster.start()
    #expect(queue.next(until: nil) == "fix")
  }

  @Test func elementsPostedAlreadyAreTakenWithoutWaiting() {
    let queue = InputQueue<Int>()
    queue.post(1)
    queue.post(2)
    #expect(queue.count == 2)
    #expect(queue.peek() == 1)
    #expect(queue.wait(until: 0))
    #expect(queue.next(until: 0) == 1)
    #expect(queue.poll() == 2)
    #expect(queue.poll() == nil)
  }

  /// Four producers racing the consumer's short waits: none of 40,000 elements is lost or
  /// reordered within its producer, and the consumer never sleeps through one (each wait
  /// ends long before the 5 s a missed wake-up would cost).
  @Test func racingProducersLoseNothing() throws {
    let queue = InputQueue<(producer: Int, index: Int)>()
    let perProducer = 10_000
    for producer in 0..<4 {
      Thread {
        for index in 0..<perProducer {
          queue.post((producer, index))
          if index % 997 == 0 { usleep(200) }
        }
      }.start()
    }
    var next = [Int](repeating: 0, count: 4)
    var received = 0
    let deadline = SystemClocks.monotonic() + 60
    while received < 4 * perProducer, SystemClocks.monotonic() < deadline {
      let waitStart = SystemClocks.monotonic()
      guard let item = queue.next(until: waitStart + 5) else {
        Issue.record("a wait ran to its deadline with \(4 * perProducer - received) elements still to come")
        break
      }
      #expect(item.index == next[item.producer])
      next[item.producer] = item.index + 1
      received += 1
    }
    #expect(received == 4 * perProducer)
    #expect(queue.count == 0)
  }
}
