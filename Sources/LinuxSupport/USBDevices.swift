#if canImport(Glibc)
  import Glibc
#endif

/// A USB device as sysfs lists it (Documentation/ABI/testing/sysfs-bus-usb): the directory
/// `/sys/bus/usb/devices/<name>` of a device ("1-1.2", a root hub "usb1"; not an interface,
/// "1-1.2:1.0") with its IDs, and the usbfs node that opens it.
public struct USBDeviceEntry: Sendable, Hashable, CustomStringConvertible {
  /// The sysfs name: bus and port path ("1-1.2").
  public var name: String
  public var vendorID: UInt16
  public var productID: UInt16
  public var busNumber: Int
  public var deviceNumber: Int

  /// The usbfs node: /dev/bus/usb/BBB/DDD (devtmpfs names it so: drivers/usb/core/usb.c,
  /// usb_devnode).
  public var devicePath: String {
    "/dev/bus/usb/" + threeDigits(busNumber) + "/" + threeDigits(deviceNumber)
  }

  public var description: String {
    "USB \(Self.idText(vendor: vendorID, product: productID)) at \(name) (\(devicePath))"
  }

  /// "0fcf:1008", as lsusb writes a device's IDs.
  public static func idText(vendor: UInt16, product: UInt16) -> String {
    func hex4(_ value: UInt16) -> String {
      let digits = String(value, radix: 16)
      return String(repeating: "0", count: 4 - digits.count) + digits
    }
    return hex4(vendor) + ":" + hex4(product)
  }

  /// The default place sysfs lists USB devices and interfaces.
  public static let sysfsDevices = "/sys/bus/usb/devices"

  /// The devices under `directory` whose vendor and product are one of `ids`, in the order of
  /// `ids` and then by name. Entries that are not devices (interfaces, whose names hold a
  /// colon), or whose attributes cannot be read (a device going away), are skipped; a missing
  /// directory (no USB at all) is none.
  public static func find(
    _ ids: [(vendor: UInt16, product: UInt16)], in directory: String = sysfsDevices
  ) -> [USBDeviceEntry] {
    let names = ((try? directoryEntries(directory)) ?? []).filter { !$0.contains(":") }
    let entries = names.compactMap { read(directory + "/" + $0, name: $0) }
    return ids.flatMap { id in entries.filter { $0.vendorID == id.vendor && $0.productID == id.product } }
  }

  static func read(_ path: String, name: String) -> USBDeviceEntry? {
    func attribute(_ file: String) -> String? {
      guard let bytes = try? FileDescriptor.contents(of: path + "/" + file) else { return nil }
      return String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
    }
    guard let vendor = attribute("idVendor").flatMap({ UInt16($0, radix: 16) }),
      let product = attribute("idProduct").flatMap({ UInt16($0, radix: 16) }),
      let bus = attribute("busnum").flatMap({ Int($0) }), let device = attribute("devnum").flatMap({ Int($0) })
    else { return nil }
    return USBDeviceEntry(name: name, vendorID: vendor, productID: product, busNumber: bus, deviceNumber: device)
  }
}

/// What reading a usbfs node gives: the device descriptor, then each configuration descriptor
/// with the interface and endpoint descriptors it holds, as the device sent them (USB 2.0
/// specification, 9.6; drivers/usb/core/devio.c, usbdev_read).
public struct USBDescriptors: Sendable, Hashable {
  /// An endpoint of an interface (9.6.6).
  public struct Endpoint: Sendable, Hashable {
    /// Bit 7 set: IN (device to host).
    public var address: UInt8
    /// Bits 0–1 of bmAttributes: 0 control, 1 isochronous, 2 bulk, 3 interrupt.
    public var transferType: UInt8
    public var maxPacketSize: Int

    public var isIn: Bool { address & 0x80 != 0 }
    public var isBulk: Bool { transferType == 2 }
  }

  /// One alternate setting of an interface (9.6.5) and its endpoints.
  public struct Interface: Sendable, Hashable {
    public var number: UInt8
    public var alternateSetting: UInt8
    public var interfaceClass: UInt8
    public var endpoints: [Endpoint]
  }

  public var vendorID: UInt16
  public var productID: UInt16
  /// The interfaces of the first configuration (the one the kernel sets for a device with one).
  public var interfaces: [Interface]

  /// Parses what a usbfs read gave. nil when the device descriptor is not there whole.
  /// Descriptors of other types (class-specific, interface associations) are stepped over; a
  /// descriptor whose length runs past the end ends the parse with what was read before it.
  public init?(_ bytes: [UInt8]) {
    // Device descriptor (9.6.1): 18 bytes, type 1; idVendor at 8, idProduct at 10.
    guard bytes.count >= 18, bytes[0] >= 18, bytes[1] == 1 else { return nil }
    vendorID = UInt16(bytes[8]) | UInt16(bytes[9]) << 8
    productID = UInt16(bytes[10]) | UInt16(bytes[11]) << 8
    interfaces = []
    var at = Int(bytes[0])
    var configurations = 0
    while at + 2 <= bytes.count {
      let length = Int(bytes[at])
      guard length >= 2, at + length <= bytes.count else { break }
      switch bytes[at + 1] {
      case 2:
        // Configuration (9.6.3): only the first one's interfaces are kept.
        configurations += 1
        if configurations > 1 { return }
      case 4 where length >= 9:
        // Interface (9.6.5): number at 2, alternate setting at 3, class at 5.
        interfaces.append(
          Interface(
            number: bytes[at + 2], alternateSetting: bytes[at + 3], interfaceClass: bytes[at + 5], endpoints: []))
      case 5 where length >= 7 && !interfaces.isEmpty:
        // Endpoint (9.6.6): address at 2, attributes at 3, wMaxPacketSize at 4 (bits 0–10).
        let size = (Int(bytes[at + 4]) | Int(bytes[at + 5]) << 8) & 0x7FF
        interfaces[interfaces.count - 1].endpoints.append(
          Endpoint(address: bytes[at + 2], transferType: bytes[at + 3] & 0x03, maxPacketSize: size))
      default: break
      }
      at += length
    }
  }

  /// The first bulk IN and bulk OUT endpoints of interface `number`'s default setting (0).
  public func bulkEndpoints(interface number: UInt8) -> (in: Endpoint, out: Endpoint)? {
    guard let interface = interfaces.first(where: { $0.number == number && $0.alternateSetting == 0 }),
      let input = interface.endpoints.first(where: { $0.isBulk && $0.isIn }),
      let output = interface.endpoints.first(where: { $0.isBulk && !$0.isIn })
    else { return nil }
    return (input, output)
  }
}

private func threeDigits(_ value: Int) -> String {
  let text = String(value)
  return String(repeating: "0", count: max(0, 3 - text.count)) + text
}
