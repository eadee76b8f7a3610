import BoardLinux
import CLinuxShims
import Foundation
import LinuxSupport
import SensorProtocols
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The host's end of a stream socketpair, as the usbfs transport is the stick's bulk
/// endpoints: reads may split or join messages; end of file is the stick unplugged (ENODEV).
public final class ANTSocketTransport: ANTTransport {
  let descriptor: Int32

  init(descriptor: Int32) { self.descriptor = descriptor }
  deinit { close(descriptor) }

  public func receive(until deadline: Double?, signal: StopSignal) throws(SystemError) -> [UInt8]? {
    var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
    if try signal.poll(&descriptors, until: deadline) { return nil }
    guard descriptors[0].revents != 0 else { return [] }
    var buffer = [UInt8](repeating: 0, count: 64)
    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    if count < 0 { throw SystemError.last("read", "the test stick") }
    if count == 0 { throw SystemError("read", errno: ENODEV, context: "the test stick") }
    return Array(buffer[..<count])
  }

  public func send(_ bytes: [UInt8]) throws(SystemError) {
    let count = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    if count != bytes.count { throw SystemError.last("send", "the test stick") }
  }
}

/// A stick on the far end of a socketpair, on a thread of its own (named "ant-test-stick", so
/// that a measure of the host's stick thread by name leaves it out): answers commands as
/// `ANTTestStick` does and, once a sensor's channel is open, sends that sensor's pages at its
/// period, in real time. After `vanishAfter` pages in all it closes its end (unplugged).
public final class ANTScriptedStick: @unchecked Sendable {
  /// A sensor in range: on `channel` once the host opens it, a broadcast from `id` every
  /// `period` seconds, its `page(n)` for the n-th (from 1).
  public struct Sensor: Sendable {
    public var channel: UInt8
    public var id: ANTChannelID
    public var period: Double
    public var page: @Sendable (Int) -> [UInt8]

    public init(channel: UInt8, id: ANTChannelID, period: Double, page: @escaping @Sendable (Int) -> [UInt8]) {
      self.channel = channel
      self.id = id
      self.period = period
      self.page = page
    }
  }

  private let descriptor: Int32
  private var stick = ANTTestStick()
  private let sensors: [Sensor]
  private let vanishAfter: Int?
  private let splitWrites: Bool
  private let stopped = Atomic<Bool>(false)
  /// The pages sent so far, all sensors together.
  public let sent = Atomic<Int>(0)

  private init(descriptor: Int32, sensors: [Sensor], vanishAfter: Int?, splitWrites: Bool) {
    self.descriptor = descriptor
    self.sensors = sensors
    self.vanishAfter = vanishAfter
    self.splitWrites = splitWrites
  }

  /// A stick plugged in: serving on its thread, and the host's transport to it. With
  /// `splitWrites` each page goes in two writes, as a USB read may end mid-message.
  public static func plugIn(
    _ sensors: [Sensor], vanishAfter: Int? = nil, splitWrites: Bool = false
  ) throws(SystemError) -> (ANTScriptedStick, ANTSocketTransport) {
    var pair: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
      throw SystemError.last("socketpair")
    }
    let stick = ANTScriptedStick(
      descriptor: pair[1], sensors: sensors, vanishAfter: vanishAfter, splitWrites: splitWrites)
    Thread { [stick] in stick.serve() }.start()
    return (stick, ANTSocketTransport(descriptor: pair[0]))
  }

  public func stop() { stopped.store(true, ordering: .relaxed) }

  private func serve() {
    // Threads inherit their creator's name (the host's stick thread, which opens the transport).
    shim_name_this_thread("ant-test-stick")
    defer { close(descriptor) }
    var reader = ANTFrameReader()
    var buffer = [UInt8](repeating: 0, count: 256)
    // Each sensor's next page, from its channel's opening.
    var due = [Double?](repeating: nil, count: sensors.count)
    var pages = [Int](repeating: 0, count: sensors.count)
    var total = 0
    while !stopped.load(ordering: .relaxed) {
      let wait = due.compactMap { $0 }.min().map { ($0 - SystemClocks.monotonic()) * 1000 } ?? 50
      var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
      _ = poll(&descriptors, 1, Int32(min(50, max(0, wait.rounded(.up)))))
      if descriptors[0].revents != 0 {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count <= 0 { return }
        reader.append(buffer[..<count])
        while let output = reader.next() {
          guard case .message(let command) = output else { continue }
          for answer in stick.answer(command) { write(answer.bytes) }
        }
      }
      let now = SystemClocks.monotonic()
      for (index, sensor) in sensors.enumerated() {
        guard stick.open.contains(sensor.channel) else {
          due[index] = nil
          continue
        }
        let time = due[index] ?? now
        guard now >= time else {
          due[index] = time
          continue
        }
        due[index] = time + sensor.period
        if let vanishAfter, total >= vanishAfter { return }
        total += 1
        pages[index] += 1
        let bytes = stick.broadcast(sensor.page(pages[index]), on: sensor.channel, from: sensor.id).bytes
        if splitWrites {
          write(Array(bytes[..<5]))
          write(Array(bytes[5...]))
        } else {
          write(bytes)
        }
        sent.store(total, ordering: .relaxed)
      }
    }
  }

  private func write(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  }
}
