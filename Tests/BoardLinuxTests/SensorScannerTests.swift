import Foundation
import LinuxSupport
import SensorProtocols
import Synchronization
import Testing

@testable import BoardLinux

#if canImport(Glibc)
  import Glibc
#endif

/// The kernel's side of the management channel, scripted, on the far end of a SOCK_SEQPACKET
/// socketpair (one packet a message, as on the HCI control channel). The real channel is
/// exercised in the board VM (Tests/BoardVM/guest/tests/70-workoutd-ble-strap.sh).
private final class ScriptedKernel: @unchecked Sendable {
  struct Controller {
    var powered = true
    var lowEnergy = true
    /// As on the wire, least significant first.
    var address: [UInt8] = [0x06, 0x05, 0x04, 0x03, 0x02, 0x01]
  }

  var controllers: [UInt16: Controller] = [0: Controller()]
  /// Start Discovery's status (0 success, 0x0A busy, ...).
  var startStatus: UInt8 = 0
  /// Device Found packets sent after discovery starts, each time it does.
  var devices: [[UInt8]] = []
  /// After the devices, the kernel ends discovery by itself (its ~10 s LE timeout).
  var endsDiscovery = false
  /// The first this many discoveries report nothing: their one report per device came while
  /// the discovery was starting, and the controller's duplicate filter kept the rest back.
  var deafDiscoveries = 0
  let starts = Atomic<Int>(0)
  let stops = Atomic<Int>(0)

  private let descriptor: Int32
  private let stopped = Atomic<Bool>(false)

  init(descriptor: Int32) { self.descriptor = descriptor }

  func start() {
    Thread { [self] in serve() }.start()
  }

  func stop() { stopped.store(true, ordering: .relaxed) }

  static func packet(_ code: UInt16, _ index: UInt16, _ parameters: [UInt8]) -> [UInt8] {
    [code, index, UInt16(parameters.count)].flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } + parameters
  }

  static func deviceFound(_ address: [UInt8], type: UInt8 = 1, rssi: Int8, advertising: [UInt8]) -> [UInt8] {
    packet(
      0x0012, 0,
      Array(address.reversed()) + [type, UInt8(bitPattern: rssi), 0, 0, 0, 0, UInt8(advertising.count), 0] + advertising
    )
  }

  private func send(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  }

  private func complete(_ opcode: UInt16, _ index: UInt16, _ status: UInt8, _ parameters: [UInt8] = []) {
    send(Self.packet(0x0001, index, [UInt8(opcode & 0xFF), UInt8(opcode >> 8), status] + parameters))
  }

  private func serve() {
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: 512)
    while !stopped.load(ordering: .relaxed) {
      var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
      _ = poll(&fds, 1, 10)
      guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
      let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
      if count <= 0 { return }
      let opcode = UInt16(buffer[0]) | UInt16(buffer[1]) << 8
      let index = UInt16(buffer[2]) | UInt16(buffer[3]) << 8
      switch opcode {
      case 0x0003:
        // Newest first, as the kernel lists them.
        let indexes = controllers.keys.sorted(by: >)
        complete(
          opcode, index, 0,
          [UInt8(indexes.count), 0] + indexes.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
      case 0x0004:
        guard let controller = controllers[index] else {
          complete(opcode, index, 0x11)
          continue
        }
        let supported: UInt32 = controller.lowEnergy ? 0x2FF : 0x0FF
        let current: UInt32 = (controller.powered ? 1 : 0) | (controller.lowEnergy ? 0x200 : 0)
        let settings = [supported, current].flatMap { value in
          (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        }
        complete(
          opcode, index, 0,
          controller.address + [9, 2, 0] + settings + [0, 0, 0]
            + [UInt8](repeating: 0, count: 260))
      case 0x0023:
        starts.add(1, ordering: .relaxed)
        guard startStatus == 0 || startStatus == 0x0A else {
          send(Self.packet(0x0002, index, [0x23, 0x00, startStatus]))
          continue
        }
        if startStatus == 0 {
          complete(opcode, index, 0, [0x06])
          send(Self.packet(0x0013, index, [0x06, 0x01]))
        } else {
          send(Self.packet(0x0002, index, [0x23, 0x00, 0x0A]))
        }
        // Something the scan must skip: a packet of the wrong length.
        send([0x12, 0x00, 0x00, 0x00, 0x40, 0x00, 0x01])
        if starts.load(ordering: .relaxed) > deafDiscoveries {
          for device in devices { send(device) }
        }
        if endsDiscovery, startStatus == 0 { send(Self.packet(0x0013, index, [0x06, 0x00])) }
      case 0x0024:
        stops.add(1, ordering: .relaxed)
        complete(opcode, index, 0, [0x06])
        send(Self.packet(0x0013, index, [0x06, 0x00]))
      default:
        complete(opcode, index, 0x01)
      }
    }
  }
}

@Suite("Sensor scan through the management channel (scripted kernel)")
struct SensorScannerTests {
  static let strapAddress: [UInt8] = [0xA0, 0x9E, 0x1A, 0x12, 0x34, 0x56]
  static let strapAdvertising: [UInt8] =
    [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18, 0x0A, 0x09] + Array("Polar H10".utf8)
  static let meterAdvertising: [UInt8] = [0x03, 0x03, 0x18, 0x18, 0x07, 0x09] + Array("Assioma".utf8)
  static let speakerAdvertising: [UInt8] = [0x03, 0x03, 0x0B, 0x11, 0x08, 0x09] + Array("Speaker".utf8)

  private func scan(
    seconds: Double = 0.5, controller: UInt16? = nil, renewInterval: Double = 2.5,
    _ configure: (ScriptedKernel) -> Void
  ) throws -> (Result<ScanOutcome, ScanError>, ScriptedKernel) {
    var pair: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
      throw SystemError.last("socketpair")
    }
    _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
    let kernel = ScriptedKernel(descriptor: pair[1])
    configure(kernel)
    kernel.start()
    defer { kernel.stop() }
    var scanner = SensorScanner(socket: ManagementSocket(adopting: pair[0]), controller: controller)
    scanner.commandTimeout = 2
    scanner.renewInterval = renewInterval
    let result = Result { () throws(ScanError) -> ScanOutcome in try scanner.run(seconds: seconds, signal: StopSignal())
    }
    return (result, kernel)
  }

  @Test("finds the sensors, merges repeats (strongest RSSI, full name), skips what it cannot read, stops discovery")
  func findsSensors() throws {
    let (result, kernel) = try scan { kernel in
      kernel.devices = [
        ScriptedKernel.deviceFound(Self.strapAddress, rssi: -70, advertising: Self.strapAdvertising),
        ScriptedKernel.deviceFound(Self.strapAddress, rssi: -58, advertising: [0x02, 0x01, 0x06]),
        ScriptedKernel.deviceFound(
          [0xC1, 0, 0, 0, 0, 1], type: 2, rssi: -80, advertising: Self.meterAdvertising),
        ScriptedKernel.deviceFound([0x11, 0, 0, 0, 0, 2], rssi: -40, advertising: Self.speakerAdvertising),
        ScriptedKernel.deviceFound([0x22, 0, 0, 0, 0, 3], type: 0, rssi: -30, advertising: Self.strapAdvertising),
      ]
    }
    let outcome = try result.get()
    #expect(outcome.controller == "hci0 (01:02:03:04:05:06)")
    #expect(!outcome.sharedDiscovery)
    // BR/EDR (type 0) is not an LE sensor; strongest first.
    #expect(
      outcome.devices.map(\.address.description) == ["11:00:00:00:00:02", "A0:9E:1A:12:34:56", "C1:00:00:00:00:01"])
    let strap = try #require(outcome.devices.first { $0.address.description == "A0:9E:1A:12:34:56" })
    #expect(strap.name == "Polar H10")
    #expect(strap.rssi == -58)
    #expect(strap.advertisements == 2)
    #expect(strap.sensorServices == [.heartRate])
    let meter = try #require(outcome.devices.last)
    #expect(meter.address.kind == .random)
    #expect(meter.sensorServices == [.cyclingPower])
    #expect(outcome.devices[0].sensorServices.isEmpty)
    #expect(kernel.stops.load(ordering: .relaxed) == 1)
  }

  @Test("discovery ended early by the kernel is started again while there is time")
  func restarts() throws {
    let (result, kernel) = try scan(seconds: 2.5) { kernel in
      kernel.endsDiscovery = true
      kernel.devices = [ScriptedKernel.deviceFound(Self.strapAddress, rssi: -60, advertising: Self.strapAdvertising)]
    }
    #expect(try result.get().devices.count == 1)
    // Once at the start, then at most once a second.
    #expect((2...3).contains(kernel.starts.load(ordering: .relaxed)))
  }

  @Test("a discovery that heard nothing (its reports lost while starting) is renewed and hears the sensor")
  func renews() throws {
    let (result, kernel) = try scan(seconds: 3, renewInterval: 0.5) { kernel in
      kernel.deafDiscoveries = 1
      kernel.devices = [ScriptedKernel.deviceFound(Self.strapAddress, rssi: -60, advertising: Self.strapAdvertising)]
    }
    let outcome = try result.get()
    #expect(outcome.devices.map(\.address.description) == ["A0:9E:1A:12:34:56"])
    #expect(!outcome.sharedDiscovery)
    // Every 0.5 s while a second would be left (at 0.5, 1.0, 1.5 s, later under load); each
    // renewal stops the discovery it replaces, and the last one is stopped at the end.
    let starts = kernel.starts.load(ordering: .relaxed)
    #expect((2...4).contains(starts))
    #expect(kernel.stops.load(ordering: .relaxed) == starts)
  }

  @Test("without renewal the deaf discovery hears nothing (what the renewal is for)")
  func deafWithoutRenewal() throws {
    let (result, kernel) = try scan(seconds: 0.8, renewInterval: 10) { kernel in
      kernel.deafDiscoveries = 1
      kernel.devices = [ScriptedKernel.deviceFound(Self.strapAddress, rssi: -60, advertising: Self.strapAdvertising)]
    }
    #expect(try result.get().devices.isEmpty)
    #expect(kernel.starts.load(ordering: .relaxed) == 1)
  }

  @Test("discovery already running for another client (busy): the scan listens to it and stops nothing")
  func shared() throws {
    let (result, kernel) = try scan(seconds: 1.2, renewInterval: 0.3) { kernel in
      kernel.startStatus = 0x0A
      kernel.devices = [ScriptedKernel.deviceFound(Self.strapAddress, rssi: -60, advertising: Self.strapAdvertising)]
    }
    let outcome = try result.get()
    #expect(outcome.sharedDiscovery)
    #expect(outcome.devices.count == 1)
    // Never renewed either: it is not this scan's to stop.
    #expect(kernel.starts.load(ordering: .relaxed) == 1)
    #expect(kernel.stops.load(ordering: .relaxed) == 0)
  }

  @Test("a powered-off adapter, a missing one, no LE, no rights: each a clear error")
  func errors() throws {
    func message(_ result: Result<ScanOutcome, ScanError>) -> String {
      if case .failure(let error) = result { return error.description }
      return "no error"
    }
    var (result, _) = try scan { $0.controllers[0]?.powered = false }
    #expect(message(result).contains("hci0 (01:02:03:04:05:06) is powered off"))
    (result, _) = try scan(controller: 3) { _ in }
    #expect(message(result) == "there is no Bluetooth controller hci3")
    (result, _) = try scan { $0.controllers = [:] }
    #expect(message(result) == "there is no Bluetooth controller")
    (result, _) = try scan { $0.controllers[0]?.lowEnergy = false }
    #expect(message(result) == "no Bluetooth controller supports LE")
    (result, _) = try scan { $0.startStatus = 0x14 }
    #expect(message(result).contains("needs CAP_NET_ADMIN"))
  }

  @Test("the lowest-numbered powered LE controller is used, else the one named")
  func choosesController() throws {
    let (first, _) = try scan { kernel in
      kernel.controllers = [0: .init(), 1: .init(address: [1, 1, 1, 1, 1, 1]), 2: .init(address: [2, 2, 2, 2, 2, 2])]
    }
    #expect(try first.get().controller == "hci0 (01:02:03:04:05:06)")
    var (result, _) = try scan { kernel in
      kernel.controllers = [0: .init(powered: false), 1: .init(address: [1, 1, 1, 1, 1, 1])]
    }
    #expect(try result.get().controller == "hci1 (01:01:01:01:01:01)")
    (result, _) = try scan(controller: 1) { kernel in
      kernel.controllers = [0: .init(), 1: .init(address: [2, 2, 2, 2, 2, 2])]
    }
    #expect(try result.get().controller == "hci1 (02:02:02:02:02:02)")
  }
}
