import SensorProtocols
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// One look at gpsd's socket: the reports that had arrived, each with the kernel's arrival
/// stamp (CLOCK_REALTIME), and how the look ended. Made by the executor
/// (`GPSDConnection.readAvailable(into:greeted:)`), read by `GPSDSourceLoop`.
struct GPSDRead {
  var messages: [(message: GPSDMessage, arrivalWall: Double?)] = []
  /// The start of the connection's first line when it was not gpsd's VERSION greeting (the
  /// look stops there).
  var notGreeting: String?
  /// The connection broke, or the peer sent what cannot be gpsd's.
  var failure: GPSDError?
  /// Bytes received on the connection in all.
  var bytesReceived = 0
}

/// What the executor does with the connection after the loop has read a look's reports.
enum GPSDConnectionVerdict: Equatable {
  /// Keep it and look again when gpsd writes or at `nextDeadline`.
  case keep
  /// It broke: it is gone (reconnect, with backoff unless gpsd had answered).
  case broken
  /// The peer is not (or not yet) gpsd: drop it without a goodbye, and retry with backoff.
  case refused
}

/// Reading gpsd: what to make of each report, whoever reads, as a value that takes what was
/// read and the time and hands on inputs (`emit`: the input and when it arrived, on
/// CLOCK_MONOTONIC). It does no I/O and reads no clock: the executor (`GPSDSource`'s thread,
/// or the engine's read) owns the connection and does what the loop's verdicts say.
struct GPSDSourceLoop {
  typealias Emit = (EngineInput, _ arrivedAt: Double) -> Void

  let settings: GPSDSourceSettings
  let observer: (@Sendable (GPSDSourceTrace) -> Void)?

  private var filter: FixQualityFilter
  /// Merges the TPVs of one epoch into one fix.
  private var epoch = GPSEpochAssembler()
  private var lastCondition: DeviceStatus.Condition?
  /// What the last TPV was (nil at the start of a connection or after the receiver closed):
  /// `gpsNoFix` is posted when the reports turn to no fix, `gpsRejected` once an epoch.
  private enum ReportKind { case usable, rejected, noFix }
  private var lastKind: ReportKind?
  private var lastRejectedTime: Double?
  /// The receiver's condition as last posted (`DeviceKind.gpsReceiver`).
  private var lastReceiver: DeviceStatus.Condition?
  private var everConnected = false
  /// Whether a connection is open (the executor's `GPSDConnection`).
  private(set) var isConnected = false
  /// Whether gpsd greeted on this connection (its VERSION came first), and when.
  private(set) var answered = false
  private var answeredAt: Double?
  /// When this connection was opened (the greeting is due within `greetingTimeout`).
  private var connectedAt = 0.0
  private var batch: [(message: GPSDMessage, arrivedAt: Double)] = []
  /// When the socket was last read to the end (or connected): nothing read later arrived before.
  private var lastReadAt = -Double.infinity

  init(settings: GPSDSourceSettings, observer: (@Sendable (GPSDSourceTrace) -> Void)?) {
    self.settings = settings
    self.observer = observer
    self.filter = FixQualityFilter(settings: settings.quality)
  }

  var endpoint: String { "\(settings.host):\(settings.port)" }
  /// When the epoch being assembled is complete if no report comes.
  var settleDeadline: Double? { epoch.settleDeadline }

  /// A connection was opened at `now`: a fresh start for what is per connection.
  mutating func connected(at now: Double) {
    isConnected = true
    lastKind = nil
    answered = false
    answeredAt = nil
    lastReadAt = now
    connectedAt = now
    filter.reset()
    observer?(.connected(host: settings.host, port: settings.port))
  }

  /// The executor closed the connection (a stop, or a failed wait for it).
  mutating func disconnected() {
    isConnected = false
  }

  mutating func stopped() {
    observer?(.stopped)
  }

  /// A connection attempt failed at `now`: reported once, not at every retry (the executor's
  /// `DeviceRunner` keeps the backoff).
  mutating func connectFailed(_ error: GPSDError, at now: Double, emit: Emit) {
    let condition: DeviceStatus.Condition = everConnected ? .lost : .absent
    post(condition, "gpsd at \(endpoint) not reachable (\(error.message)); retrying", emit: emit, at: now)
    observer?(.connectFailed(error))
  }

  /// Hands on what the reports of one look mean, and says what becomes of the connection.
  ///
  /// The GPS is `available` from gpsd's VERSION greeting, which gpsd sends first on every
  /// connection, not from the TCP connection alone. A peer whose first line is something else
  /// is not gpsd; one that sends no greeting within `greetingTimeout` seconds (silence, or bytes
  /// with no line end) does not answer as gpsd. Either is a `failing` GPS with a message naming
  /// the endpoint and what happened, and the connection is refused and retried with backoff.
  mutating func received(_ read: GPSDRead, now: Double, wallNow: Double, emit: Emit) -> GPSDConnectionVerdict {
    guard isConnected else { return .broken }
    if let notGreeting = read.notGreeting {
      refuse(
        "not gpsd at \(endpoint): its first line was not gpsd's VERSION greeting (\"\(notGreeting)\")", now: now,
        emit: emit)
      return .refused
    }
    batch.removeAll(keepingCapacity: true)
    for (message, arrivalWall) in read.messages {
      // The kernel stamped it on CLOCK_REALTIME; its age places it on CLOCK_MONOTONIC.
      let age = max(0, min(wallNow - (arrivalWall ?? wallNow), 60))
      batch.append((message, now - age))
    }
    if !batch.isEmpty { answered = true }
    placeEarlierEpochs()
    lastReadAt = now
    for (index, (message, arrivedAt)) in batch.enumerated() {
      if index == 0, answeredAt == nil {
        answeredAt = arrivedAt
        everConnected = true
        if case .version(let release) = message {
          post(.available, "connected to gpsd \(release) at \(endpoint)", emit: emit, at: arrivedAt)
        }
      }
      handle(message, at: arrivedAt, emit: emit)
    }
    if let failure = read.failure {
      postAssembledFix(now: now, force: true, emit: emit)
      observer?(.disconnected(failure))
      if answered {
        post(.lost, "lost gpsd at \(endpoint) (\(failure.message)); reconnecting", emit: emit, at: now)
      } else if failure.code == EMSGSIZE {
        post(.failing, "not gpsd at \(endpoint): \(failure.message); retrying", emit: emit, at: now)
      } else {
        post(
          everConnected ? .lost : .absent,
          "gpsd at \(endpoint) closed the connection before its greeting; retrying", emit: emit, at: now)
      }
      isConnected = false
      return .broken
    }
    if !answered, now >= connectedAt + settings.greetingTimeout {
      let received = read.bytesReceived
      refuse(
        received == 0
          ? "no answer from gpsd at \(endpoint): the port accepts connections but nothing was said in \(formatSeconds(settings.greetingTimeout)) (is gpsd hung, or another service on that port?)"
          : "not gpsd at \(endpoint): \(received) bytes in \(formatSeconds(settings.greetingTimeout)) and no VERSION greeting",
        now: now, emit: emit)
      return .refused
    }
    postAssembledFix(now: now, emit: emit)
    return .keep
  }

  /// When the loop must look again even if nothing arrives: the epoch's settling, and the end
  /// of the wait for gpsd's greeting.
  var nextDeadline: Double? {
    [epoch.settleDeadline, answered || !isConnected ? nil : connectedAt + settings.greetingTimeout]
      .compactMap { $0 }.min()
  }

  /// The peer is not (or not yet) gpsd: say so once; the executor drops the connection.
  private mutating func refuse(_ detail: String, now: Double, emit: Emit) {
    post(.failing, detail + "; retrying", emit: emit, at: now)
    observer?(.disconnected(GPSDError(operation: .read, code: 0, message: detail)))
    isConnected = false
  }

  /// Reports read together share the stamp of the newest packet (TCP gives one stamp a read).
  /// A TPV of an earlier epoch in the same batch arrived about as much earlier as its GPS
  /// time is (a receiver sends one epoch a second), a report between epochs with the epoch
  /// after it; and nothing in the batch arrived before the previous read emptied the socket.
  private mutating func placeEarlierEpochs() {
    guard !batch.isEmpty else { return }
    if batch.count > 1 {
      // The newest GPS time among the TPVs sharing each stamp (a batch holds a few reports:
      // looked up by scanning, not hashed).
      let times: [Double?] = batch.map { entry in
        if case .tpv(let snapshot) = entry.message { snapshot.time?.secondsSince1970 } else { nil }
      }
      let stamps = batch.map(\.arrivedAt)
      for index in batch.indices {
        guard let time = times[index] else { continue }
        var newest = time
        for other in stamps.indices where stamps[other] == stamps[index] {
          if let otherTime = times[other] { newest = max(newest, otherTime) }
        }
        batch[index].arrivedAt -= min(max(0, newest - time), 60)
      }
      for index in batch.indices.dropLast().reversed() {
        batch[index].arrivedAt = min(batch[index].arrivedAt, batch[index + 1].arrivedAt)
      }
    }
    for index in batch.indices { batch[index].arrivedAt = max(batch[index].arrivedAt, lastReadAt) }
  }

  private mutating func handle(_ message: GPSDMessage, at arrivedAt: Double, emit: Emit) {
    switch message {
    case .tpv(let snapshot):
      let report = GPSDMapping.report(from: snapshot)
      var verdict: FixVerdict?
      switch report {
      case .fix(let fix): verdict = filter.evaluate(fix)
      case .noFix: verdict = nil
      }
      observer?(.report(snapshot, report, verdict))
      switch (report, verdict) {
      case (_, .accepted(let fix)?):
        if lastReceiver != .available {
          postReceiver(.available, "gpsd reports fixes from its receiver", emit: emit, at: arrivedAt)
        }
        let previousAt = epoch.lastAddedAt
        if let finished = epoch.begin(fix, at: arrivedAt) { emit(.reading(.gps(finished)), previousAt) }
        lastKind = .usable
      case (.fix(let fix), .rejected(.repeatedTime)?):
        // A later report of the epoch being assembled: it may bring the altitude, errors, speed,
        // which pass the filter's checks as the epoch's first report's did.
        epoch.merge(FixQualityFilter.sanitised(fix), at: arrivedAt)
      case (_, .rejected(let reason)?):
        // One `gpsRejected` an epoch, so the engine knows fixes arrive and why they are refused.
        if lastKind == .usable { postAssembledFix(now: arrivedAt, force: true, emit: emit) }
        let time = snapshot.time?.secondsSince1970
        if lastKind != .rejected || (time != nil && time != lastRejectedTime) {
          emit(.reading(.gpsRejected(reason)), arrivedAt)
        }
        lastRejectedTime = time
        lastKind = .rejected
      case (_, nil):
        if lastKind != .noFix {
          postAssembledFix(now: arrivedAt, force: true, emit: emit)
          emit(.reading(.gpsNoFix), arrivedAt)
        }
        lastKind = .noFix
      }
    case .device(let report):
      observer?(.receiver(report))
      if report.activated == false {
        lastKind = nil
        postReceiver(.lost, "gpsd closed the receiver \(report.path ?? "")", emit: emit, at: arrivedAt)
      } else if report.activated == true {
        postReceiver(.available, "gpsd opened the receiver \(report.path ?? "")", emit: emit, at: arrivedAt)
      }
    case .devices(let count):
      if count == 0 {
        postReceiver(
          lastReceiver == .available ? .lost : .absent,
          "gpsd at \(endpoint) has no receiver open (check its device list: /etc/default/gpsd DEVICES, or gpsdctl add)",
          emit: emit, at: arrivedAt)
      } else {
        postReceiver(.available, "gpsd has \(count) receiver\(count == 1 ? "" : "s") open", emit: emit, at: arrivedAt)
      }
    case .version(let release):
      observer?(.version(release))
    case .error(let text):
      observer?(.gpsdError(text))
    case .other:
      break
    }
  }

  /// The receiver's condition, when it changes.
  private mutating func postReceiver(
    _ condition: DeviceStatus.Condition, _ detail: String, emit: Emit, at: Double
  ) {
    guard condition != lastReceiver else { return }
    lastReceiver = condition
    emit(.device(DeviceStatus(device: .gpsReceiver, condition: condition, detail: detail)), at)
  }

  /// Hands on the epoch's assembled fix once it is complete (or now, with `force`), as of
  /// when its last report arrived.
  private mutating func postAssembledFix(now: Double, force: Bool = false, emit: Emit) {
    let at = epoch.lastAddedAt
    if let fix = epoch.finish(at: now, force: force) { emit(.reading(.gps(fix)), min(at, now)) }
  }

  /// Hands on the GPS's condition when it changes.
  mutating func post(_ condition: DeviceStatus.Condition, _ detail: String, emit: Emit, at: Double) {
    guard condition != lastCondition else { return }
    lastCondition = condition
    emit(.device(DeviceStatus(device: .gps, condition: condition, detail: detail)), at)
  }
}
