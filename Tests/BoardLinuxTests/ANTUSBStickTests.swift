import BoardLinux
import Foundation
import LinuxSupport
import Testing

/// What of the USB ANT stick runs without USB: finding sticks in a tree laid out as
/// /sys/bus/usb/devices is, reading their descriptors as a usbfs node gives them, and the
/// errors of a node that is not a stick's. (Claiming, bulk transfers and unplugging need a
/// real or emulated stick: the board VM's 75-workoutd-ant.)
final class ANTUSBStickTests {
  /// A sysfs-like tree of this test's own.
  let root = NSTemporaryDirectory() + "/antusb-" + UUID().uuidString

  init() throws { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false) }

  deinit { try? FileManager.default.removeItem(atPath: root) }

  /// An ANTUSB2 stick's device and configuration descriptors, as reading its usbfs node gives
  /// them. The device descriptor's fields as USBView shows the stick ("ANT USBStick2", in
  /// pyusb/pyusb#343): USB 2.0, class 0, bMaxPacketSize0 32, 0fcf:1008, bcdDevice 1.00, one
  /// configuration; its one vendor-class interface with two pipes, bulk IN 0x81 and bulk OUT
  /// 0x01 of 64 bytes (full speed), as lsusb lists them.
  static let antUSB2: [UInt8] = [
    // Device (USB 2.0, 9.6.1).
    0x12, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x20, 0xCF, 0x0F, 0x08, 0x10, 0x00, 0x01, 0x01, 0x02, 0x03, 0x01,
    // Configuration 1 (9.6.3): 32 bytes in all, one interface, bus-powered.
    0x09, 0x02, 0x20, 0x00, 0x01, 0x01, 0x02, 0x80, 0x32,
    // Interface 0 (9.6.5): two endpoints, class 0xFF (vendor).
    0x09, 0x04, 0x00, 0x00, 0x02, 0xFF, 0x00, 0x00, 0x02,
    // Endpoints (9.6.6): 0x81 bulk IN, 0x01 bulk OUT, 64 bytes.
    0x07, 0x05, 0x81, 0x02, 0x40, 0x00, 0x01,
    0x07, 0x05, 0x01, 0x02, 0x40, 0x00, 0x01,
  ]

  private func write(_ path: String, _ value: String) throws {
    let full = root + "/" + path
    try FileManager.default.createDirectory(
      atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try value.write(toFile: full, atomically: false, encoding: .utf8)
  }

  private func device(_ name: String, _ vendor: String, _ product: String, bus: Int, number: Int) throws {
    try write("\(name)/idVendor", vendor + "\n")
    try write("\(name)/idProduct", product + "\n")
    try write("\(name)/busnum", "\(bus)\n")
    try write("\(name)/devnum", "\(number)\n")
  }

  @Test func findsTheKnownSticksBySysfsAttributes() throws {
    try device("usb1", "1d6b", "0002", bus: 1, number: 1)
    try device("1-1", "0fcf", "1009", bus: 1, number: 7)
    try device("1-1.4", "0fcf", "1008", bus: 1, number: 12)
    try device("2-1", "046d", "c52b", bus: 2, number: 3)
    // An interface's directory: skipped by its name, whatever it holds.
    try device("1-1:1.0", "0fcf", "1008", bus: 1, number: 99)
    // A device going away as it is listed: its attributes half gone.
    try write("1-3/idVendor", "0fcf\n")

    let found = USBDeviceEntry.find(ANTStickSettings.knownSticks, in: root)
    #expect(found.map(\.name) == ["1-1.4", "1-1"], "ANTUSB2 first, then ANTUSB-m, as knownSticks orders them")
    let stick = try #require(found.first)
    #expect(stick.vendorID == 0x0FCF && stick.productID == 0x1008)
    #expect(stick.devicePath == "/dev/bus/usb/001/012")
    #expect(stick.description == "USB 0fcf:1008 at 1-1.4 (/dev/bus/usb/001/012)")
    #expect(USBDeviceEntry.find([(0x1234, 0x5678)], in: root).isEmpty)
    #expect(USBDeviceEntry.find(ANTStickSettings.knownSticks, in: root + "/none").isEmpty, "no USB at all")
  }

  @Test func noStickPluggedInIsNil() throws {
    try device("usb1", "1d6b", "0002", bus: 1, number: 1)
    #expect(try ANTUSBStick.open(devices: root) == nil)
  }

  @Test func readsTheANTUSB2Descriptors() throws {
    let descriptors = try #require(USBDescriptors(Self.antUSB2))
    #expect(descriptors.vendorID == 0x0FCF && descriptors.productID == 0x1008)
    #expect(descriptors.interfaces.count == 1)
    #expect(descriptors.interfaces.first?.interfaceClass == 0xFF)
    let endpoints = try #require(descriptors.bulkEndpoints(interface: 0))
    #expect(endpoints.in.address == 0x81 && endpoints.in.isBulk && endpoints.in.maxPacketSize == 64)
    #expect(endpoints.out.address == 0x01 && endpoints.out.isBulk && endpoints.out.maxPacketSize == 64)
    #expect(descriptors.bulkEndpoints(interface: 1) == nil)
  }

  @Test func stepsOverOtherDescriptorsAndLaterConfigurations() throws {
    var bytes = Array(Self.antUSB2[..<36])
    // A class-specific descriptor (type 0x24) between the interface and its endpoints.
    bytes += [0x05, 0x24, 0x00, 0x10, 0x01]
    // High-speed endpoints: wMaxPacketSize 512.
    bytes += [0x07, 0x05, 0x82, 0x02, 0x00, 0x02, 0x00, 0x07, 0x05, 0x02, 0x02, 0x00, 0x02, 0x00]
    // A second configuration, whose interface is not the one the kernel set.
    bytes += [0x09, 0x02, 0x12, 0x00, 0x01, 0x02, 0x00, 0x80, 0x32, 0x09, 0x04, 0x05, 0x00, 0x00, 0xFF, 0, 0, 0]
    let descriptors = try #require(USBDescriptors(bytes))
    #expect(descriptors.interfaces.map(\.number) == [0])
    let endpoints = try #require(descriptors.bulkEndpoints(interface: 0))
    #expect(endpoints.in.address == 0x82 && endpoints.in.maxPacketSize == 512 && endpoints.out.address == 0x02)
    // Cut anywhere, what came before the cut is kept; a cut device descriptor is nothing.
    #expect(USBDescriptors(Array(Self.antUSB2[..<40]))?.bulkEndpoints(interface: 0) == nil)
    #expect(USBDescriptors(Array(Self.antUSB2[..<40]))?.interfaces.count == 1)
    #expect(USBDescriptors(Array(Self.antUSB2[..<17])) == nil)
    #expect(USBDescriptors([0x12, 0x02] + Array(Self.antUSB2[2..<18])) == nil, "not a device descriptor")
  }

  @Test func aNodeThatIsNotAStickSaysWhichCallFailedOnWhat() throws {
    // A file holding a stick's descriptors reads as one, but usbfs's ioctls are not there.
    let path = root + "/001-012"
    try Data(Self.antUSB2).write(to: URL(fileURLWithPath: path))
    let claim = try #require(throws: SystemError.self) { try ANTUSBStick.open(path: path) }
    #expect(claim.call == "USBDEVFS_DISCONNECT_CLAIM" && claim.errno == ENOTTY)
    #expect(claim.context == "\(path) interface 0")
    // Descriptors with no bulk endpoints on interface 0.
    try Data(Self.antUSB2[..<36]).write(to: URL(fileURLWithPath: path))
    let endpoints = try #require(throws: SystemError.self) { try ANTUSBStick.open(path: path) }
    #expect(endpoints.errno == EPROTO)
    #expect(endpoints.context == "\(path): no bulk IN and OUT endpoints on interface 0")
    // Not there at all: unplugged between the listing and the open.
    let gone = try #require(throws: SystemError.self) { try ANTUSBStick.open(path: self.root + "/gone") }
    #expect(gone.call == "open" && gone.errno == ENOENT && gone.context == root + "/gone")
  }
}
