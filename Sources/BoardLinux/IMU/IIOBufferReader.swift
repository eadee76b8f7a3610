import LinuxSupport
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// Reads an inertial device's buffer from its character device until stopped: asleep in poll
/// until the kernel has a watermark's worth of records (the set-up's `buffer/watermark`), then
/// every whole record there is, decoded, handed on in one batch.
struct IIOBufferReader {
  let device: IIOInertialDevice
  /// Records read at once, at the most.
  static let batch = 64

  /// Runs until `stop` (returns) or the device fails or goes (throws, with why).
  func run(stop: StopSignal, deliver: ([MotionSample]) -> Void) throws(IIODeviceError) {
    let node: FileDescriptor
    do {
      node = try FileDescriptor.open(device.node, O_RDONLY | O_NONBLOCK)
    } catch {
      throw IIODeviceError("cannot open \(device.node): \(error.reason)")
    }
    defer { try? node.close() }
    let size = device.layout.recordSize
    var pending: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: size * Self.batch)
    while true {
      var descriptors = [pollfd(fd: node.rawValue, events: Int16(POLLIN), revents: 0)]
      do {
        if try stop.poll(&descriptors, until: nil) { return }
      } catch {
        throw IIODeviceError("poll on \(device.node): \(error.reason)")
      }
      let events = Int32(descriptors[0].revents)
      if events & (POLLERR | POLLHUP | POLLNVAL) != 0, events & POLLIN == 0 {
        throw IIODeviceError("\(device.name) went away (\(device.node))")
      }
      guard events & POLLIN != 0 else { continue }
      let count: Int
      do {
        count = try node.read(into: &buffer, limit: buffer.count)
      } catch {
        if error.errno == EAGAIN { continue }
        throw IIODeviceError("reading \(device.node): \(error.reason)")
      }
      guard count > 0 else { throw IIODeviceError("\(device.name) went away (\(device.node) ended)") }
      pending += buffer[0..<count]
      let whole = pending.count / size * size
      guard whole > 0 else { continue }
      let readAt = SystemClocks.monotonic()
      var samples: [MotionSample] = []
      samples.reserveCapacity(whole / size)
      for start in stride(from: 0, to: whole, by: size) {
        if let sample = device.sample(Array(pending[start..<start + size]), readAt: readAt) { samples.append(sample) }
      }
      pending.removeFirst(whole)
      deliver(samples)
    }
  }
}
