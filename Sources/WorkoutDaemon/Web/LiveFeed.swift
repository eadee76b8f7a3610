import LinuxSupport
import Logging
import Synchronization
import WorkoutControl

/// The status as phones see it. The engine hands it over after each commit while a phone
/// watches (`wanted`, an atomic read: nothing is made for nobody), so the live feed costs the
/// engine no extra wake-up; when nothing was committed for 2 s (no session, an idle board), or
/// at once after a control from the page, this thread asks the engine itself. With no watcher
/// its thread sleeps without a timeout: no wake-ups on an idle board.
final class LiveFeed: @unchecked Sendable {
  enum Next {
    case status(Int, String)
    case quiet
    case stopped
    /// The phone watching was revoked: its stream ends at once.
    case revoked
  }

  /// The feed thread's wake-ups (a watcher came, a status was handed, a refresh asked) apart
  /// from the watchers' (a new status), so neither wakes the other's threads for nothing.
  private let work = MonotonicCondition()
  private let news = MonotonicCondition()
  private let queue: InputQueue<RuntimeMessage>
  private let log: Logger
  private let watching = Atomic<Int>(0)
  // Guarded by `work`.
  private var watchers = 0
  private var refreshAsked = false
  private var handed: StatusReport?
  private var feedStopping = false
  // Guarded by `news`.
  private var sequence = 0
  private var latest = ""
  private var stopping = false
  /// Phones revoked while the service runs (a handful at most): a stream of one of them ends.
  private var revoked: Set<Int64> = []
  /// Written by `start()` before the thread exists, taken by `stop()`.
  private var thread: DeviceThread?
  /// Seconds without a status from the engine before this thread asks for one.
  static let askAfter = 2.0

  init(queue: InputQueue<RuntimeMessage>, log: Logger) {
    self.queue = queue
    self.log = log
  }

  /// Whether anyone watches (the engine thread asks before making a status).
  var wanted: Bool { watching.load(ordering: .relaxed) > 0 }

  /// The engine's status after a commit, taken on the engine thread: encoded on this one.
  func hand(_ status: StatusReport) {
    work.locked { handed = status }
    // Signalled after the mutex is let go: the feed thread wakes to a free mutex, not to wait
    // for this one (a second context switch).
    work.signal()
  }

  func start() throws(SystemError) {
    thread = try DeviceThread.start(name: "web feed") { [self] in run() }
  }

  /// Ends the feed's thread and every watcher's wait, and joins the thread.
  func stop() {
    work.locked {
      feedStopping = true
      work.signal()
    }
    news.locked {
      stopping = true
      news.broadcast()
    }
    thread?.join()
    thread = nil
  }

  func subscribe() {
    work.locked {
      watchers += 1
      watching.wrappingAdd(1, ordering: .relaxed)
      refreshAsked = true
      work.signal()
    }
  }

  func unsubscribe() {
    work.locked {
      watchers -= 1
      watching.wrappingSubtract(1, ordering: .relaxed)
    }
  }

  /// Asks for a new status now (after a control from the page).
  func refresh() {
    work.locked {
      refreshAsked = true
      work.signal()
    }
  }

  /// The next status after `seen` for `phone`'s stream, waiting until `deadline` at most.
  func next(after seen: Int, for phone: Int64, until deadline: Double) -> Next {
    news.locked {
      while !stopping && !revoked.contains(phone) && sequence <= seen {
        if !news.wait(until: deadline) { break }
      }
      if stopping { return .stopped }
      if revoked.contains(phone) { return .revoked }
      return sequence > seen ? .status(sequence, latest) : .quiet
    }
  }

  /// Ends the streams of a revoked phone, those open now and any it opens later.
  func revoke(_ phone: Int64) {
    news.locked { _ = revoked.insert(phone) }
    news.broadcast()
  }

  private func publish(_ status: StatusReport) {
    guard let json = try? ControlJSON.encode(status) else { return }
    news.locked {
      sequence += 1
      latest = json
    }
    news.broadcast()
  }

  private func run() {
    var lastPublished = -Double.infinity
    while true {
      enum Work {
        case stop
        case publish(StatusReport)
        case ask
      }
      let next = work.locked { () -> Work in
        while true {
          if feedStopping { return .stop }
          if watchers == 0 {
            handed = nil
            _ = work.wait(until: nil)
            continue
          }
          if let status = handed {
            handed = nil
            return .publish(status)
          }
          if refreshAsked || SystemClocks.monotonic() >= lastPublished + Self.askAfter {
            refreshAsked = false
            return .ask
          }
          _ = work.wait(until: lastPublished + Self.askAfter)
        }
      }
      switch next {
      case .stop:
        return
      case .publish(let status):
        publish(status)
        lastPublished = SystemClocks.monotonic()
      case .ask:
        let box = ReplyBox()
        queue.post(.control(ControlRequest(command: .status), box))
        if let status = box.wait(seconds: 5)?.status { publish(status) }
        lastPublished = SystemClocks.monotonic()
      }
    }
  }
}
