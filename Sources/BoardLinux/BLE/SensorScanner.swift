import CBluetooth
import LinuxSupport
import SensorProtocols

#if canImport(Glibc)
  import Glibc
#endif

/// A socket on the kernel's Bluetooth management channel (`wkd_mgmt_open`): one packet a
/// `send`, one a `receive`. Tests use one end of a `socketpair(SOCK_SEQPACKET)` with a scripted
/// kernel on the other.
public final class ManagementSocket: Sendable {
  public let descriptor: Int32
  private let file: FileDescriptor

  public init(adopting descriptor: Int32) {
    self.descriptor = descriptor
    file = FileDescriptor(owning: descriptor)
  }

  public static func open() throws(SystemError) -> ManagementSocket {
    let fd = wkd_mgmt_open()
    guard fd >= 0 else { throw SystemError.last("socket/bind", "Bluetooth management channel") }
    return ManagementSocket(adopting: fd)
  }

  public func send(_ packet: [UInt8]) throws(SystemError) {
    try sendPacket(packet, on: descriptor, what: "management command")
  }

  /// The next packet, nil if none is waiting (a Device Found is at most a few hundred bytes).
  public func receive() throws(SystemError) -> [UInt8]? {
    try receivePacket(on: descriptor, limit: 1024, what: "management channel")
  }
}

/// One device a scan heard, merged over all its advertisements.
public struct ScannedDevice: Sendable, Hashable {
  public var address: BluetoothAddress
  public var name: String?
  /// The strongest RSSI heard, dBm (nil if the controller never said).
  public var rssi: Int?
  /// The sensor services it advertises (heart rate, cycling power, speed/cadence).
  public var sensorServices: [SensorService]
  /// Every service UUID it advertised.
  public var services: [BluetoothUUID]
  public var advertisements: Int
}

/// What a scan found, and how it went.
public struct ScanOutcome: Sendable {
  /// Strongest first.
  public var devices: [ScannedDevice]
  /// "hci0 (AA:BB:..)".
  public var controller: String
  /// Discovery was already running (bluetoothd, for another client): this scan listened to it
  /// instead of starting its own.
  public var sharedDiscovery: Bool
}

/// Why a scan could not run: the message says what to do.
public struct ScanError: Error, Sendable, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// LE discovery through the kernel's management API, beside bluetoothd.
///
/// Why this way: on Raspberry Pi OS bluetoothd owns the adapter. A raw HCI socket that sends
/// LE Set Scan Enable behind its back confuses it (and needs the device down or a user
/// channel, which takes the adapter from bluetoothd); its D-Bus API would need a D-Bus client
/// library in the service. The management channel is the one bluetoothd itself uses: any
/// number of sockets may be open on it, the kernel runs one discovery for all of them and sends
/// every socket the devices found. So Start Discovery (LE public and random), read Device Found
/// events for the time asked, Stop Discovery. If discovery is already running (bluetoothd
/// scanning for a desktop client: status busy) the scan listens to it. The kernel ends an LE
/// discovery after about 10 s; a longer scan starts it again. Needs CAP_NET_ADMIN, which the
/// service has and `workoutctl` does not: the service scans when `workoutctl sensors scan` asks.
///
/// A discovery this scan started is renewed (stopped and started) every `renewInterval`: the
/// kernel drops the advertising reports that arrive while a discovery is still starting (it is
/// "finding" only once the controller has confirmed LE Set Scan Enable), and the controller's
/// duplicate filter, which the kernel turns on for discovery, then reports that device no more
/// for the rest of that discovery. A new discovery clears the filter, so a sensor whose one
/// report was lost is heard in the next.
public struct SensorScanner {
  public var socket: ManagementSocket
  /// The controller to use ("hci0" is 0); nil: the powered one with LE of the lowest index.
  public var controller: UInt16?
  /// How long to wait for the kernel to answer a command.
  public var commandTimeout: Double = 3
  /// How long a discovery this scan started runs before it is renewed (see above).
  public var renewInterval: Double = 2.5

  public init(socket: ManagementSocket, controller: UInt16? = nil) {
    self.socket = socket
    self.controller = controller
  }

  /// Scans for `seconds` (or until `signal` stops) and returns what it heard.
  public func run(seconds: Double, signal: StopSignal) throws(ScanError) -> ScanOutcome {
    var heard: [BluetoothAddress: ScannedDevice] = [:]
    var discovering = false
    var deadlineReached = false
    let end = SystemClocks.monotonic() + seconds

    func note(_ event: Management.Event, from index: UInt16, chosen: UInt16?) {
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

    /// Sends a command and reads until its reply, noting every other event on the way.
    func request(
      _ opcode: Management.Opcode, _ index: UInt16, _ parameters: [UInt8] = [], chosen: UInt16?
    )
      throws(ScanError) -> (Management.Status, [UInt8])
    {
      do {
        try socket.send(Management.command(opcode, controller: index, parameters: parameters))
      } catch {
        throw ScanError("cannot send to the Bluetooth management channel: \(error)")
      }
      let deadline = SystemClocks.monotonic() + commandTimeout
      var reply: (Management.Status, [UInt8])?
      while true {
        // The whole batch is looked at: devices found may come in the same read as the reply.
        for (index, event) in try readAvailable() {
          switch event {
          case .commandComplete(let code, let status, let parameters) where code == opcode.rawValue && reply == nil:
            reply = (status, parameters)
          case .commandStatus(let code, let status) where code == opcode.rawValue && reply == nil:
            reply = (status, [])
          default:
            note(event, from: index, chosen: chosen)
          }
        }
        if let reply { return reply }
        if try wait(until: deadline, signal: signal) { throw ScanError("stopped") }
        if SystemClocks.monotonic() >= deadline {
          throw ScanError("the kernel did not answer \(opcode) within \(Int(commandTimeout)) s")
        }
      }
    }

    // Which controller.
    let index: UInt16
    let information: Management.ControllerInformation
    if let controller {
      let (status, reply) = try request(.readControllerInformation, controller, chosen: controller)
      guard status == .success, let info = Management.controllerInformation(reply) else {
        throw ScanError(
          status == .invalidIndex ? "there is no Bluetooth controller hci\(controller)" : "hci\(controller): \(status)")
      }
      (index, information) = (controller, info)
    } else {
      let (status, reply) = try request(.readControllerIndexList, Management.noController, chosen: nil)
      guard status == .success, let indexes = Management.controllerIndexes(reply) else {
        throw ScanError("cannot list the Bluetooth controllers: \(status)")
      }
      var candidates: [(UInt16, Management.ControllerInformation)] = []
      // The kernel lists the newest controller first; hci0 is the board's own in most setups
      // (a USB dongle added later is hci1), so the lowest index that qualifies is taken.
      for candidate in indexes.sorted() {
        let (status, reply) = try request(.readControllerInformation, candidate, chosen: candidate)
        if status == .success, let info = Management.controllerInformation(reply) {
          candidates.append((candidate, info))
        }
      }
      guard
        let chosen = candidates.first(where: { $0.1.isPowered && $0.1.supportsLowEnergy })
          ?? candidates.first(where: { $0.1.supportsLowEnergy })
      else {
        throw ScanError(indexes.isEmpty ? "there is no Bluetooth controller" : "no Bluetooth controller supports LE")
      }
      (index, information) = chosen
    }
    let name = "hci\(index) (\(information.address))"
    guard information.isPowered else {
      throw ScanError("\(name) is powered off (bluetoothctl power on, or rfkill unblock bluetooth)")
    }
    heard.removeAll()

    // Discover; again whenever the kernel ends it early, while there is time.
    var owned = false
    var shared = false
    func startDiscovery() throws(ScanError) {
      // Running from here on, unless the kernel says it ended (a Discovering event may come in
      // the same read as the reply, and is the later word).
      discovering = true
      let (status, _) = try request(.startDiscovery, index, [Management.lowEnergyAddressTypes], chosen: index)
      switch status {
      case .success:
        owned = true
      case .busy:
        // Another client's discovery (it may have started one between a renewal's stop and
        // start): listened to, never stopped by this scan.
        shared = true
        owned = false
      case .permissionDenied:
        throw ScanError("\(name): scanning needs CAP_NET_ADMIN (the service has it; run the scan through workoutd)")
      case .notPowered, .rfKilled:
        throw ScanError("\(name): \(status)")
      default:
        throw ScanError("\(name): Start Discovery: \(status)")
      }
    }
    try startDiscovery()
    var lastStart = SystemClocks.monotonic()
    var renewable = true
    while !deadlineReached {
      for (from, event) in try readAvailable() { note(event, from: from, chosen: index) }
      let now = SystemClocks.monotonic()
      if now >= end { break }
      // Started again when the kernel ends it, but not more than once a second (a controller
      // that ends every discovery at once is not spun on).
      if !discovering && now >= lastStart + 1 {
        try startDiscovery()
        lastStart = now
        continue
      }
      // Renewed while at least a second would be left to listen to the new one.
      let renewal = lastStart + renewInterval
      if owned && renewable && discovering && now >= renewal && now + 1 < end {
        let (status, _) = try request(.stopDiscovery, index, [Management.lowEnergyAddressTypes], chosen: index)
        if status == .success {
          try startDiscovery()
          lastStart = SystemClocks.monotonic()
          continue
        }
        // Not stopped (the kernel ended it meanwhile, or refused): the loop starts it again
        // if it has ended; otherwise it runs on, not renewed.
        renewable = false
        continue
      }
      let next =
        !discovering ? min(end, lastStart + 1) : owned && renewable && renewal + 1 < end ? renewal : end
      let stopped = try wait(until: next, signal: signal)
      if stopped || SystemClocks.monotonic() >= end { deadlineReached = true }
    }
    for (from, event) in (try? readAvailable()) ?? [] { note(event, from: from, chosen: index) }
    if owned && discovering {
      // Best effort: the kernel also ends it by itself.
      _ = try? request(.stopDiscovery, index, [Management.lowEnergyAddressTypes], chosen: index)
    }
    let devices = heard.values.sorted {
      ($0.rssi ?? -200, $0.address.description) > ($1.rssi ?? -200, $1.address.description)
    }
    return ScanOutcome(devices: devices, controller: name, sharedDiscovery: shared)
  }

  private func readAvailable() throws(ScanError) -> [(UInt16, Management.Event)] {
    var events: [(UInt16, Management.Event)] = []
    while true {
      let packet: [UInt8]?
      do {
        packet = try socket.receive()
      } catch {
        throw ScanError("Bluetooth management channel: \(error)")
      }
      guard let packet else { return events }
      // A packet this decoder cannot read is skipped: the next is independent of it.
      if let decoded = try? Management.decode(packet) { events.append(decoded) }
    }
  }

  /// Waits for a packet, `deadline`, or a stop; true when stopped.
  private func wait(until deadline: Double, signal: StopSignal) throws(ScanError) -> Bool {
    var descriptors = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
    do {
      return try signal.poll(&descriptors, until: deadline)
    } catch {
      throw ScanError("cannot wait on the Bluetooth management channel: \(error)")
    }
  }
}
