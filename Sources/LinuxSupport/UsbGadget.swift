#if canImport(Glibc)
  import Glibc
#endif

/// The board as a USB drive: a USB gadget made through configfs (the kernel's
/// Documentation/usb/gadget_configfs.rst), one configuration holding one `mass_storage`
/// function (Documentation/usb/mass-storage.rst) whose one LUN is read-only and removable. A
/// removable LUN lets the medium change under a connected host, as a card reader's does: the
/// host is told (UNIT ATTENTION, "medium may have changed") and reads the new one, and a host
/// that has it mounted locks it (PREVENT MEDIUM REMOVAL), so the kernel refuses the change
/// (EBUSY) until the host lets go. Setting up and tearing down need root
/// (`workoutd-usb-drive.service`); changing the medium needs only the LUN's `file` attribute,
/// which set-up gives to the image's owner (the service).
public struct UsbGadget: Sendable {
  /// configfs's gadget directory.
  public static let defaultRoot = "/sys/kernel/config/usb_gadget"
  public static let name = "workoutd"
  static let function = "mass_storage.rides"

  public let root: String
  public init(root: String = UsbGadget.defaultRoot) { self.root = root }

  public var directory: String { root + "/" + Self.name }
  var functionDirectory: String { directory + "/functions/" + Self.function }
  /// The LUN's backing file: its path (the kernel's name for the open file, " (deleted)" when
  /// renamed over), or empty for no medium.
  public var mediumAttribute: String { functionDirectory + "/lun.0/file" }
  var udcAttribute: String { directory + "/UDC" }

  /// What the set-up writes, for a USB host: the Linux Foundation's vendor ID with its
  /// "Multifunction Composite Gadget" product, as the kernel's own gadget examples do.
  public struct Identity: Sendable {
    public var vendorID: UInt16 = 0x1D6B
    public var productID: UInt16 = 0x0104
    public var manufacturer = "workoutd"
    public var product = "workoutd ride logger"
    public var serialNumber: String
    /// SCSI INQUIRY: vendor (8), product (16), revision (4).
    public var inquiry = "workoutd Rides           1.0 "
    public init(serialNumber: String) { self.serialNumber = serialNumber }
  }

  /// The UDCs (USB device controllers) there are (`/sys/class/udc`): "fe980000.usb" on a Pi
  /// with dwc2, "dummy_udc.0" with dummy_hcd.
  public static func controllers(in directory: String = "/sys/class/udc") -> [String] {
    ((try? directoryEntries(directory)) ?? []).filter { !$0.hasPrefix(".") }
  }

  /// Makes the gadget with no medium or `image`, binds it to `controller` (the host sees a
  /// drive from then), and gives the medium attribute to `owner`. An existing gadget of ours
  /// is torn down first. The kernel opens `image` by name with this process's rights
  /// (storage_common.c: filp_open): a root caller passes a checked descriptor's
  /// `/proc/self/fd/N`, which the attribute then shows as the file's own path.
  public func setUp(
    controller: String, identity: Identity, image: String?, owner: (uid: uid_t, gid: gid_t)?
  ) throws(SystemError) {
    if access(directory, F_OK) == 0 { try tearDown() }
    try makeDirectory(directory)
    try put(directory + "/idVendor", hex(identity.vendorID))
    try put(directory + "/idProduct", hex(identity.productID))
    try put(directory + "/bcdUSB", "0x0200")
    try put(directory + "/bcdDevice", "0x0100")
    let strings = directory + "/strings/0x409"
    try makeDirectory(strings)
    try put(strings + "/manufacturer", identity.manufacturer)
    try put(strings + "/product", identity.product)
    try put(strings + "/serialnumber", identity.serialNumber)
    let configuration = directory + "/configs/c.1"
    try makeDirectory(configuration)
    try makeDirectory(configuration + "/strings/0x409")
    try put(configuration + "/strings/0x409/configuration", "Rides")
    // Bus-powered at most 500 mA (USB 2.0's limit), in mA as configfs takes it.
    try put(configuration + "/MaxPower", "500")
    try makeDirectory(functionDirectory)
    let lun = functionDirectory + "/lun.0"
    // Order matters: removable and ro are refused while a medium is open.
    try put(lun + "/removable", "1")
    try put(lun + "/ro", "1")
    try put(lun + "/inquiry_string", identity.inquiry)
    if let image { try put(mediumAttribute, image) }
    // Last: once it is the service's, this process (root without CAP_DAC_OVERRIDE) cannot write it.
    if let owner {
      try retryingInterrupts("chown", mediumAttribute) { chown(mediumAttribute, owner.uid, owner.gid) }
    }
    try retryingInterrupts("symlink", configuration) {
      symlink(functionDirectory, configuration + "/" + Self.function)
    }
    try put(udcAttribute, controller)
  }

  /// Unbinds and removes the gadget, children first (configfs removes nothing recursively).
  public func tearDown() throws(SystemError) {
    guard access(directory, F_OK) == 0 else { return }
    if let bound = read(udcAttribute), !bound.isEmpty { try put(udcAttribute, "") }
    let configuration = directory + "/configs/c.1"
    if unlink(configuration + "/" + Self.function) != 0 && errno != ENOENT {
      throw .last("unlink", configuration + "/" + Self.function)
    }
    for path in [
      configuration + "/strings/0x409", configuration, functionDirectory, directory + "/strings/0x409", directory,
    ] where rmdir(path) != 0 && errno != ENOENT {
      throw .last("rmdir", path)
    }
  }

  /// The image the drive holds now, as the kernel names it; nil with no gadget (not set up, or
  /// not a Linux with configfs gadgets), "" with no medium.
  public func medium() -> String? { read(mediumAttribute) }

  /// Puts `image` in the drive (or takes the medium out, with ""): the kernel closes the old
  /// file and opens this one, and tells a connected host. EBUSY: a host has it locked
  /// (mounted); try again later.
  public func changeMedium(to image: String) throws(SystemError) { try put(mediumAttribute, image) }

  /// The controller the gadget is bound to and its USB state ("configured": a host uses it;
  /// "not attached": no cable), nil when not bound.
  public func connection(udcClass: String = "/sys/class/udc") -> (controller: String, state: String)? {
    guard let controller = read(udcAttribute), !controller.isEmpty else { return nil }
    return (controller, read(udcClass + "/" + controller + "/state") ?? "unknown")
  }

  func read(_ path: String) -> String? {
    guard let bytes = try? FileDescriptor.contents(of: path) else { return nil }
    var text = String(decoding: bytes, as: UTF8.self)
    while text.hasSuffix("\n") { text.removeLast() }
    return text
  }

  func put(_ path: String, _ value: String) throws(SystemError) {
    let attribute = try FileDescriptor.open(path, O_WRONLY)
    // configfs takes an attribute in one write; an empty value is a newline.
    let bytes = Array((value.isEmpty ? "\n" : value).utf8)
    let written = try retryingInterrupts("write", path) {
      bytes.withUnsafeBytes { Glibc.write(attribute.rawValue, $0.baseAddress, $0.count) }
    }
    guard written == bytes.count else { throw SystemError("write", errno: EIO, context: path + " (short)") }
    try attribute.close()
  }

  func makeDirectory(_ path: String) throws(SystemError) {
    if mkdir(path, 0o755) != 0 && errno != EEXIST { throw .last("mkdir", path) }
  }

  func hex(_ value: UInt16) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
  }
}
