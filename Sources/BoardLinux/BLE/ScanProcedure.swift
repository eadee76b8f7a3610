import SensorProtocols

/// A sensor scan's protocol on the management channel (BlueZ `doc/mgmt-api.txt`), as a value
/// that takes events and time and returns what to do next. It does no I/O and reads no clock:
/// `SensorScanner` owns the socket, sends what it is told, waits as long as it is told (for a
/// packet, the time or a stop) and hands back what it read. What it does, and why, is
/// `SensorScanner`'s documentation.
struct ScanProcedure {
  enum Next {
    /// A command for the kernel; then `advance` again, with nothing read yet.
    case send([UInt8])
    /// Wait for a packet, this time (CLOCK_MONOTONIC seconds) or a stop; then `advance` with what
    /// came.
    case wait(until: Double)
    /// The scan is over.
    case finish(Result<ScanOutcome, ScanError>)
  }

  /// What the reply to the command in flight goes on to.
  private enum Then {
    case indexList
    case candidate(UInt16, left: [UInt16], all: [UInt16], found: [(UInt16, Management.ControllerInformation)])
    case chosen(UInt16)
    /// `at`: the time the discovery counts as started from (nil: when its reply comes).
    case started(at: Double?)
    case renewStopped
    case finalStop
  }

  private struct Request {
    var opcode: Management.Opcode
    var deadline: Double
    var then: Then
    /// Whose events are noted meanwhile (nil: any controller's).
    var controller: UInt16?
  }

  let controller: UInt16?
  let commandTimeout: Double
  let renewInterval: Double
  /// When the listening ends.
  let end: Double

  private var request: Request?
  private var heard: [BluetoothAddress: ScannedDevice] = [:]
  /// The controller chosen and its name, "hci0 (AA:BB:..)"; nil while choosing.
  private var chosen: (index: UInt16, name: String)?
  private var discovering = false
  /// A discovery this scan started (it stops it), rather than one it listens to.
  private var owned = false
  private var shared = false
  private var renewable = true
  private var lastStart = 0.0
  private var finishing = false

  init(controller: UInt16?, seconds: Double, commandTimeout: Double, renewInterval: Double, now: Double) {
    self.controller = controller
    self.commandTimeout = commandTimeout
    self.renewInterval = renewInterval
    end = now + seconds
  }

  /// The first command: which controllers there are, or what the one asked for is.
  mutating func start(now: Double) -> Next {
    if let controller {
      return send(.readControllerInformation, to: controller, then: .chosen(controller), noting: controller, now: now)
    }
    return send(.readControllerIndexList, to: Management.noController, then: .indexList, noting: nil, now: now)
  }

  /// What came since the last step (in the order read), at `now`; `stopRequested` when the
  /// wait ended for a stop.
  mutating func advance(
    events: [(controller: UInt16, event: Management.Event)], now: Double, stopRequested: Bool
  )
    -> Next
  {
    // The whole batch is looked at: devices found may come in the same read as the reply.
    var reply: (Management.Status, [UInt8])?
    for (from, event) in events {
      if let request, reply == nil {
        switch event {
        case .commandComplete(let code, let status, let parameters) where code == request.opcode.rawValue:
          reply = (status, parameters)
          continue
        case .commandStatus(let code, let status) where code == request.opcode.rawValue:
          reply = (status, [])
          continue
        default:
          break
        }
      }
      note(event, from: from, noting: request.map(\.controller) ?? chosen?.index)
    }
    if let pending = request {
      if let reply {
        request = nil
        return replied(reply, then: pending.then, now: now)
      }
      if stopRequested || now >= pending.deadline {
        request = nil
        // The last stop is a courtesy: the kernel ends a discovery by itself.
        if case .finalStop = pending.then { return finish() }
        return fail(
          stopRequested
            ? "stopped" : "the kernel did not answer \(pending.opcode) within \(Int(commandTimeout)) s")
      }
      return .wait(until: pending.deadline)
    }
    return listen(now: now, stopRequested: stopRequested)
  }

  /// The socket failed (`message` says how): the scan ends with it, or without it when all
  /// that was left was the last stop.
  mutating func failed(_ message: String) -> Next {
    if finishing { return finish() }
    return fail(message)
  }

  private mutating func note(_ event: Management.Event, from index: UInt16, noting chosen: UInt16?) {
    guard index == chosen || chosen == nil else { return }
    switch event {
    case .deviceFound(let found) where found.isLowEnergy:
      var device =
        heard[found.address]
        ?? ScannedDevice(
          address: found.address, name: nil, rssi: nil, sensorServices: [], services: [], advertisements: 0)
      device.advertisements += 1
      if let name = found.advertising.name, device.name == nil || !found.advertising.nameIsShortened {
        device.name = name
      }
      if found.rssi != 127 { device.rssi = max(device.rssi ?? Int(found.rssi), Int(found.rssi)) }
      for uuid in found.advertising.services where !device.services.contains(uuid) { device.services.append(uuid) }
      device.sensorServices = SensorService.allCases.filter { device.services.contains($0.uuid) }
      heard[found.address] = device
    case .discovering(let on):
      discovering = on
    default:
      break
    }
  }

  private mutating func send(
    _ opcode: Management.Opcode, to index: UInt16, _ parameters: [UInt8] = [], then: Then, noting: UInt16?,
    now: Double
  ) -> Next {
    request = Request(opcode: opcode, deadline: now + commandTimeout, then: then, controller: noting)
    return .send(Management.command(opcode, controller: index, parameters: parameters))
  }

  private mutating func replied(_ reply: (Management.Status, [UInt8]), then: Then, now: Double) -> Next {
    let (status, parameters) = reply
    switch then {
    case .indexList:
      guard status == .success, let indexes = Management.controllerIndexes(parameters) else {
        return fail("cannot list the Bluetooth controllers: \(status)")
      }
      // The kernel lists the newest controller first; hci0 is the board's own in most setups
      // (a USB dongle added later is hci1), so the lowest index that qualifies is taken.
      return ask(about: indexes.sorted(), all: indexes, found: [], now: now)
    case .candidate(let candidate, let left, let all, var found):
      if status == .success, let information = Management.controllerInformation(parameters) {
        found.append((candidate, information))
      }
      return ask(about: left, all: all, found: found, now: now)
    case .chosen(let controller):
      guard status == .success, let information = Management.controllerInformation(parameters) else {
        return fail(
          status == .invalidIndex ? "there is no Bluetooth controller hci\(controller)" : "hci\(controller): \(status)")
      }
      return use(controller, information, now: now)
    case .started(let at):
      let name = chosen?.name ?? ""
      switch status {
      case .success:
        owned = true
      case .busy:
        // Another client's discovery (it may have started one between a renewal's stop and
        // start): listened to, never stopped by this scan.
        shared = true
        owned = false
      case .permissionDenied:
        return fail("\(name): scanning needs CAP_NET_ADMIN (the service has it; run the scan through workoutd)")
      case .notPowered, .rfKilled:
        return fail("\(name): \(status)")
      default:
        return fail("\(name): Start Discovery: \(status)")
      }
      lastStart = at ?? now
      return listen(now: now, stopRequested: false)
    case .renewStopped:
      if status == .success { return startDiscovery(at: nil, now: now) }
      // Not stopped (the kernel ended it meanwhile, or refused): the loop starts it again if it
      // has ended; otherwise it runs on, not renewed.
      renewable = false
      return listen(now: now, stopRequested: false)
    case .finalStop:
      return finish()
    }
  }

  /// Asks about the next candidate controller, or chooses among those found.
  private mutating func ask(
    about candidates: [UInt16], all: [UInt16], found: [(UInt16, Management.ControllerInformation)], now: Double
  ) -> Next {
    if let next = candidates.first {
      return send(
        .readControllerInformation, to: next,
        then: .candidate(next, left: Array(candidates.dropFirst()), all: all, found: found), noting: next, now: now)
    }
    guard
      let choice = found.first(where: { $0.1.isPowered && $0.1.supportsLowEnergy })
        ?? found.first(where: { $0.1.supportsLowEnergy })
    else {
      return fail(all.isEmpty ? "there is no Bluetooth controller" : "no Bluetooth controller supports LE")
    }
    return use(choice.0, choice.1, now: now)
  }

  private mutating func use(_ index: UInt16, _ information: Management.ControllerInformation, now: Double) -> Next {
    let name = "hci\(index) (\(information.address))"
    guard information.isPowered else {
      return fail("\(name) is powered off (bluetoothctl power on, or rfkill unblock bluetooth)")
    }
    chosen = (index, name)
    heard.removeAll()
    return startDiscovery(at: nil, now: now)
  }

  private mutating func startDiscovery(at: Double?, now: Double) -> Next {
    // Running from here on, unless the kernel says it ended (a Discovering event may come in
    // the same read as the reply, and is the later word).
    discovering = true
    return send(
      .startDiscovery, to: chosen?.index ?? 0, [Management.lowEnergyAddressTypes], then: .started(at: at),
      noting: chosen?.index, now: now)
  }

  /// Listening: discovery started again when the kernel ends it, renewed while there is time.
  private mutating func listen(now: Double, stopRequested: Bool) -> Next {
    if stopRequested || now >= end { return stopDiscovery(now: now) }
    // Started again when the kernel ends it, but not more than once a second (a controller
    // that ends every discovery at once is not spun on).
    if !discovering && now >= lastStart + 1 { return startDiscovery(at: now, now: now) }
    // Renewed while at least a second would be left to listen to the new one.
    let renewal = lastStart + renewInterval
    if owned && renewable && discovering && now >= renewal && now + 1 < end {
      return send(
        .stopDiscovery, to: chosen?.index ?? 0, [Management.lowEnergyAddressTypes], then: .renewStopped,
        noting: chosen?.index, now: now)
    }
    return .wait(
      until: !discovering ? min(end, lastStart + 1) : owned && renewable && renewal + 1 < end ? renewal : end)
  }

  /// The end: a discovery this scan started is stopped (best effort: the kernel also ends it
  /// by itself).
  private mutating func stopDiscovery(now: Double) -> Next {
    finishing = true
    guard owned && discovering else { return finish() }
    return send(
      .stopDiscovery, to: chosen?.index ?? 0, [Management.lowEnergyAddressTypes], then: .finalStop,
      noting: chosen?.index, now: now)
  }

  private mutating func finish() -> Next {
    let devices = heard.values.sorted {
      ($0.rssi ?? -200, $0.address.description) > ($1.rssi ?? -200, $1.address.description)
    }
    return .finish(.success(ScanOutcome(devices: devices, controller: chosen?.name ?? "", sharedDiscovery: shared)))
  }

  private func fail(_ message: String) -> Next {
    .finish(.failure(ScanError(message)))
  }
}
