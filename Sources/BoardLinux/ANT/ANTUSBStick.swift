import LinuxSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A USB ANT stick (`ANTStickSettings.knownSticks`) through usbfs: interface 0's bulk OUT
/// endpoint takes the host's ANT messages, its bulk IN endpoint gives the stick's, framed as on
/// a serial line (ANT Message Protocol and Usage, 7.1). The interface is taken from usb-serial-simple, which binds these sticks as a
/// ttyUSB (drivers/usb/serial/usb-serial-simple.c, SUUNTO_IDS).
///
/// Used from one thread. ENODEV or ESHUTDOWN from `receive` or `send` means the stick was
/// pulled out; the stick is closed when released, or by `close()`.
public final class ANTUSBStick: ANTTransport, CustomStringConvertible {
  /// The usbfs node it was opened at.
  public let path: String
  /// Its vendor and product IDs, as its device descriptor gives them.
  public let vendorID: UInt16
  public let productID: UInt16
  private let file: USBDeviceFile
  private let input: USBDescriptors.Endpoint
  private let output: USBDescriptors.Endpoint

  static let interface: UInt8 = 0
  /// How long a write may wait for the stick to take it: the stick reads every message at
  /// once (it answers within milliseconds), so a longer wait is a stick that has stopped.
  static let writeTimeout = 2.0

  private init(path: String, file: USBDeviceFile, descriptors: USBDescriptors) throws(SystemError) {
    guard let endpoints = descriptors.bulkEndpoints(interface: Self.interface) else {
      throw SystemError("ANT stick", errno: EPROTO, context: "\(path): no bulk IN and OUT endpoints on interface 0")
    }
    self.path = path
    self.file = file
    vendorID = descriptors.vendorID
    productID = descriptors.productID
    input = endpoints.in
    output = endpoints.out
  }

  /// Opens the stick at `path` (a usbfs node), or else the first known stick that `devices`
  /// (sysfs's USB devices) lists: nil when none is plugged in. Claims interface 0, taking it
  /// from a kernel driver. Errors name the call and the node (EACCES: the udev rule did not
  /// give the node to the service's group).
  public static func open(
    path: String? = nil, devices: String = USBDeviceEntry.sysfsDevices
  ) throws(SystemError) -> ANTUSBStick? {
    guard let path = path ?? USBDeviceEntry.find(ANTStickSettings.knownSticks, in: devices).first?.devicePath else {
      return nil
    }
    let file = try USBDeviceFile.open(path)
    let stick = try ANTUSBStick(path: path, file: file, descriptors: try file.descriptors())
    try file.claim(interface: interface)
    return stick
  }

  /// The bytes of the next bulk IN transfers: waits until the stick sends some, `deadline`
  /// (monotonic seconds; then []) or a stop (then nil).
  public func receive(until deadline: Double?, signal: StopSignal) throws(SystemError) -> [UInt8]? {
    // One packet's worth: a transfer ends at a short packet or a full buffer, so each packet
    // the stick sends is handed on as it comes.
    let length = input.maxPacketSize > 0 ? input.maxPacketSize : 64
    return try file.bulkRead(endpoint: input.address, length: length, until: deadline, signal: signal)
  }

  public func send(_ bytes: [UInt8]) throws(SystemError) {
    try file.bulkWrite(endpoint: output.address, bytes, timeout: Self.writeTimeout)
  }

  /// Releases the stick: a pending read is discarded, the interface released, the node closed.
  public func close() {
    file.close()
  }

  public var description: String {
    "ANT stick \(USBDeviceEntry.idText(vendor: vendorID, product: productID)) at \(path)"
  }
}
