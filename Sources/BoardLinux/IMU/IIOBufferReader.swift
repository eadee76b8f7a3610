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
    var records = IIORecords(device: device)
    var buffer = [UInt8](repeating: 0, count: device.layout.recordSize * Self.batch)
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
      let samples = buffer.withUnsafeBytes { bytes in
        records.samples(from: UnsafeRawBufferPointer(rebasing: bytes[0..<count]), readAt: SystemClocks.monotonic())
      }
      if !samples.isEmpty { deliver(samples) }
    }
  }
}

/// A device's records as its reads bring them: a read may end within a record (a pipe's may;
/// the kernel's gives whole ones), whose start waits for the next read. The records are decoded
/// where they lie in the read, none copied but the one a read split.
struct IIORecords {
  let device: IIOInertialDevice
  /// A record's start, from the read before: never a whole record.
  private var pending: [UInt8] = []

  init(device: IIOInertialDevice) {
    self.device = device
    pending.reserveCapacity(device.layout.recordSize)
  }

  /// The samples of the records a read's `bytes` completes and holds, in order, stamped
  /// `readAt` (taken only when there is one) when they have no timestamp; what is left of
  /// `bytes` is kept for the next read.
  mutating func samples(from bytes: UnsafeRawBufferPointer, readAt: @autoclosure () -> Double) -> [MotionSample] {
    let size = device.layout.recordSize
    let completing = pending.isEmpty ? 0 : min(size - pending.count, bytes.count)
    pending += bytes[0..<completing]
    let whole = (bytes.count - completing) / size * size
    let count = (pending.count == size ? 1 : 0) + whole / size
    var samples: [MotionSample] = []
    if count > 0 {
      let readAt = readAt()
      samples.reserveCapacity(count)
      if pending.count == size {
        if let sample = device.sample(pending, readAt: readAt) { samples.append(sample) }
        pending.removeAll(keepingCapacity: true)
      }
      for start in stride(from: completing, to: completing + whole, by: size) {
        if let sample = device.sample(in: bytes, at: start, readAt: readAt) { samples.append(sample) }
      }
    }
    pending += bytes[(completing + whole)...]
    return samples
  }
}
