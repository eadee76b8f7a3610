import CLinuxShims

#if canImport(Glibc)
  import Glibc
#endif

/// An open usbfs node (/dev/bus/usb/BBB/DDD) and the interface claimed on it
/// (<linux/usbdevice_fs.h>; drivers/usb/core/devio.c). Bulk OUT is one synchronous transfer
/// with a timeout; bulk IN is one asynchronous URB kept submitted, whose completion makes the
/// descriptor writable (POLLOUT), so a read waits in `StopSignal.poll` with no timer at all.
///
/// Used from one thread (a device's). `close()` discards the URB, releases the interface and
/// closes the descriptor, once; it also happens when the file is released. ENODEV or
/// ESHUTDOWN from any call means the device was unplugged.
public final class USBDeviceFile {
  public let path: String
  private let file: FileDescriptor
  private var claimed: UInt32?
  /// The IN URB and its buffer, where the kernel reads and writes them from submit to reap.
  private let urb: UnsafeMutableRawPointer
  private var buffer: UnsafeMutableRawBufferPointer
  private var submitted = false

  private init(path: String, file: FileDescriptor) {
    self.path = path
    self.file = file
    urb = UnsafeMutableRawPointer.allocate(byteCount: shim_usb_urb_size(), alignment: 16)
    buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 0, alignment: 16)
  }

  deinit {
    close()
    // Only after the close: the kernel drops a pending URB with the descriptor and never
    // touches its memory again.
    urb.deallocate()
    buffer.deallocate()
  }

  /// Opens `path` read-write (usbfs refuses most ioctls on a read-only descriptor).
  public static func open(_ path: String) throws(SystemError) -> USBDeviceFile {
    USBDeviceFile(path: path, file: try FileDescriptor.open(path, O_RDWR))
  }

  /// The device's descriptors: what reading the node from its start gives.
  public func descriptors() throws(SystemError) -> USBDescriptors {
    let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    defer { bytes.deallocate() }
    let count = try retryingInterrupts("pread", path) { pread(file.rawValue, bytes.baseAddress, bytes.count, 0) }
    guard let parsed = USBDescriptors(Array(bytes[..<count])) else {
      throw SystemError("read descriptors", errno: EPROTO, context: path)
    }
    return parsed
  }

  /// Claims `interface`, taking it from a kernel driver bound to it (USBDEVFS_DISCONNECT_CLAIM);
  /// EBUSY when another program holds it through usbfs.
  public func claim(interface: UInt8) throws(SystemError) {
    try retryingInterrupts("USBDEVFS_DISCONNECT_CLAIM", "\(path) interface \(interface)") {
      shim_usb_claim_interface(file.rawValue, UInt32(interface))
    }
    claimed = UInt32(interface)
  }

  /// Writes `bytes` to bulk OUT `endpoint` (USBDEVFS_BULK), waiting up to `timeout` seconds
  /// for the device to take them (ETIMEDOUT after).
  public func bulkWrite(endpoint: UInt8, _ bytes: [UInt8], timeout: Double) throws(SystemError) {
    let data = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 16)
    defer { data.deallocate() }
    data.copyBytes(from: bytes)
    let milliseconds = UInt32(min(max(1, (timeout * 1000).rounded(.up)), Double(UInt32.max)))
    var done = 0
    while done < data.count {
      let sent = try retryingInterrupts("USBDEVFS_BULK", "\(path) endpoint \(hexByte(endpoint))") {
        shim_usb_bulk(file.rawValue, endpoint, data.baseAddress! + done, UInt32(data.count - done), milliseconds)
      }
      done += Int(sent)
    }
  }

  /// The data of the next completed bulk IN transfer on `endpoint`, up to `length` bytes:
  /// waits until one completes, `deadline` (monotonic seconds; then []) or a stop (then nil).
  /// Zero-length transfers are waited past. The URB stays submitted between calls, so nothing
  /// the device sends waits for the next call to be asked for.
  public func bulkRead(
    endpoint: UInt8, length: Int, until deadline: Double?, signal: StopSignal
  ) throws(SystemError) -> [UInt8]? {
    while true {
      if !submitted { try submit(endpoint: endpoint, length: length) }
      if let data = try reap(), !data.isEmpty { return data }
      if !submitted { continue }
      var descriptors = [pollfd(fd: file.rawValue, events: Int16(POLLOUT), revents: 0)]
      if try signal.poll(&descriptors, until: deadline) { return nil }
      let events = Int32(descriptors[0].revents)
      if events & Int32(POLLHUP) != 0 {
        // Unplugged: the kernel completes the URB with an error, which reap reports.
        _ = try reap()
        throw SystemError("poll", errno: ENODEV, context: path)
      }
      if events == 0, let deadline, SystemClocks.monotonic() >= deadline { return [] }
    }
  }

  private func submit(endpoint: UInt8, length: Int) throws(SystemError) {
    if buffer.count != length {
      buffer.deallocate()
      buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 16)
    }
    try retryingInterrupts("USBDEVFS_SUBMITURB", "\(path) endpoint \(hexByte(endpoint))") {
      shim_usb_submit_bulk(file.rawValue, urb, endpoint, buffer.baseAddress, Int32(length))
    }
    submitted = true
  }

  /// The data of the URB if it has completed (nil if not yet); a failed transfer throws.
  private func reap() throws(SystemError) -> [UInt8]? {
    var reaped: UnsafeMutableRawPointer?
    while shim_usb_reap(file.rawValue, &reaped) != 0 {
      switch errno {
      case EINTR: continue
      case EAGAIN: return nil
      default: throw SystemError.last("USBDEVFS_REAPURBNDELAY", path)
      }
    }
    // Only this one URB is ever submitted.
    submitted = false
    var status: Int32 = 0
    var count: Int32 = 0
    shim_usb_urb_result(urb, &status, &count)
    if status != 0 { throw SystemError("bulk IN", errno: -status, context: path) }
    return Array(UnsafeRawBufferPointer(rebasing: buffer[..<Int(count)]))
  }

  /// Discards a pending URB, releases the interface and closes the descriptor; a later call
  /// does nothing. Failures are not reported: the device may already be gone, and the kernel
  /// frees all of it with the descriptor anyway.
  public func close() {
    guard !file.isClosed else { return }
    if submitted { _ = shim_usb_discard(file.rawValue, urb) }
    if let claimed { _ = shim_usb_release_interface(file.rawValue, claimed) }
    claimed = nil
    submitted = false
    try? file.close()
  }
}

private func hexByte(_ value: UInt8) -> String {
  "0x" + (value < 0x10 ? "0" : "") + String(value, radix: 16)
}
