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

  /// Scans for `seconds` (or until `signal` stops) and returns what it heard: `ScanProcedure`
  /// decides, this carries it out.
  public func run(seconds: Double, signal: StopSignal) throws(ScanError) -> ScanOutcome {
    var procedure = ScanProcedure(
      controller: controller, seconds: seconds, commandTimeout: commandTimeout, renewInterval: renewInterval,
      now: SystemClocks.monotonic())
    var next = procedure.start(now: SystemClocks.monotonic())
    while true {
      switch next {
      case .finish(let result):
        return try result.get()
      case .send(let packet):
        do {
          try socket.send(packet)
          next = procedure.advance(events: [], now: SystemClocks.monotonic(), stopRequested: false)
        } catch {
          next = procedure.failed("cannot send to the Bluetooth management channel: \(error)")
        }
      case .wait(let deadline):
        var descriptors = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
        let stopped: Bool
        do {
          stopped = try signal.poll(&descriptors, until: deadline)
        } catch {
          next = procedure.failed("cannot wait on the Bluetooth management channel: \(error)")
          continue
        }
        do {
          let events = try readAvailable()
          next = procedure.advance(events: events, now: SystemClocks.monotonic(), stopRequested: stopped)
        } catch {
          next = procedure.failed("Bluetooth management channel: \(error)")
        }
      }
    }
  }

  /// Every packet waiting, decoded; a packet the decoder cannot read is skipped (the next is
  /// independent of it).
  private func readAvailable() throws(SystemError) -> [(controller: UInt16, event: Management.Event)] {
    var events: [(controller: UInt16, event: Management.Event)] = []
    while let packet = try socket.receive() {
      if let decoded = try? Management.decode(packet) { events.append(decoded) }
    }
    return events
  }
}
