/// Whether a USB block device udev found can take the rides, from the properties udev gave it
/// (`udevadm info --query=property`): what `workoutd-usb-unusable@.service` tells the rider
/// about a stick that 80-workoutd-usb.rules did not give to the copier.
public enum StickSuitability {
  /// The file systems the copier writes (and the rule hands to `workoutd-usb@.service`).
  public static let fileSystems: Set<String> = ["vfat", "exfat", "ext4"]

  /// One block device as udev describes it: its kernel name ("sdb1") and properties.
  public struct Device: Sendable, Hashable {
    public var name: String
    public var properties: [String: String]

    public init(name: String, properties: [String: String]) {
      self.name = name
      self.properties = properties
    }

    var fileSystem: String { properties["ID_FS_TYPE"] ?? "" }
    var isPartition: Bool { properties["DEVTYPE"] == "partition" }

    /// What the copier takes: a file system it writes, with a UUID to know the stick by.
    public var isUsable: Bool {
      Self.usable(fileSystem) && !(properties["ID_FS_UUID"] ?? "").isEmpty
    }

    static func usable(_ type: String) -> Bool { StickSuitability.fileSystems.contains(type) }
  }

  /// Why `device` cannot take the rides, told to the rider; nil when that is no concern of
  /// theirs: it can (the copier has it), or another partition of the same stick can
  /// (`siblings`: the other partitions of its disk; a stick sold with a second partition is
  /// not a faulty stick).
  public static func refusal(of device: Device, siblings: [Device] = []) -> String? {
    if device.isUsable { return nil }
    if device.isPartition, siblings.contains(where: \.isUsable) { return nil }
    let remedy = "format it FAT32, exFAT or ext4 to take the rides"
    let type = device.fileSystem
    if type.isEmpty {
      return "no file system found on it (unformatted or damaged): \(remedy)"
    }
    if Device.usable(type) {
      return "its \(describe(type)) file system has no UUID, by which workoutd knows a stick: \(remedy)"
    }
    return "holds \(describe(type)), which workoutd does not write: \(remedy)"
  }

  /// The name a rider knows a file system by.
  static func describe(_ type: String) -> String {
    switch type {
    case "ntfs": "an NTFS file system"
    case "vfat": "FAT"
    case "exfat": "exFAT"
    case "ext4": "ext4"
    case "hfsplus": "a Mac (HFS+) file system"
    case "apfs": "a Mac (APFS) file system"
    case "iso9660", "udf": "a disc image (\(type))"
    case "swap": "swap space"
    case "crypto_LUKS": "an encrypted (LUKS) volume"
    default: "a file system of type \(type)"
    }
  }

  /// `udevadm info --query=property` output ("KEY=value" lines) as a dictionary.
  public static func properties(fromUdevadm text: String) -> [String: String] {
    var properties: [String: String] = [:]
    for line in text.split(separator: "\n") {
      guard let equals = line.firstIndex(of: "=") else { continue }
      properties[String(line[..<equals])] = String(line[line.index(after: equals)...])
    }
    return properties
  }
}
